#pragma once
// The container image of a run, around the job: built (or reused) on this machine before the
// job starts, so the job runs an image whose id and package list the run directory already
// holds; afterwards, the runtime's reports of which image each container ran gathered into the
// run directory for the provenance record (run/container_provenance.hpp).
#include "render/render.hpp"
#include "run/run_directory.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace harness {

/// What a reproduction expects of the image: the one its bundle's run ran.
struct ExpectedImage {
    std::string bundle;       ///< the bundle's file name, for messages
    std::string image_id;     ///< provenance.json container.image_id; "" when the bundle has none
    std::string packages;     ///< the bundle's container/packages.txt
    fs::path archive;         ///< the bundle's container/image.oci.tar; empty when it carries none
    bool allow_drift = false; ///< run even when the packages differ (reproduce --allow-image-drift)
};

/// True when the plan runs its framework in an image the harness builds from the rendered
/// Containerfile: runtime podman (this machine) or podman-hpc (Perlmutter's login node builds
/// and migrates, as NERSC asks; the job script only builds what is missing).
bool builds_run_image(const Plan& plan);

/// Builds or reuses the run's image with the plan's runtime, from `dir`'s rendered
/// Containerfile, and writes container/image.json and container/packages.txt into `dir`.
/// Progress lines go to `out`. Throws HarnessError (the runtime's words) when it cannot.
/// With `expected`, says whether this is the bundle's image or one with the same packages, and
/// returns why the run must not go on when the packages differ (the diff is written to `out`);
/// "" when it may.
std::string prepare_run_image(const Plan& plan, const RunDirectory& dir, const fs::path& home, ProcessRunner& runner,
                              const std::optional<ExpectedImage>& expected, std::ostream& out);

/// `pack --with-image`: writes the image `run_dir`'s containers ran (provenance.json's
/// container.image_id) into the run directory as container/image.oci.tar, with the runtime the
/// plan names, so that its bundle carries it. Progress lines go to `out`. Throws input_error for a
/// run without such an image, HarnessError when the runtime cannot save it.
void add_image_archive(const fs::path& run_dir, ProcessRunner& runner, std::ostream& out);

/// After the job: moves what its nodes reported (rendered/container/ran-*.json) into
/// container/; for a local run, asks podman here which image each rank ran, then removes the
/// run's containers. Returns what could not be recorded.
std::vector<std::string> gather_ran_containers(const Plan& plan, const RunDirectory& dir, ProcessRunner& runner);

} // namespace harness
