#pragma once
// provenance.json's "container": the image the card names, and, where the harness built one,
// what the runtime built (container/image.json, image/image_build.hpp) and what it reports each
// container ran (container/ran-*.json, run/container_ledger.hpp). The image id recorded is the
// one the runtime reports ran, never one taken from the card or the plan.
#include "plan/plan.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <string>
#include <vector>

namespace harness {

/// The run directory's image record and package list (workflows write them before the job).
inline constexpr const char* k_image_record_name = "container/image.json";
inline constexpr const char* k_image_packages_name = "container/packages.txt";
/// The image that ran as an OCI archive, when `pack --with-image` added it (image/image_archive.hpp).
inline constexpr const char* k_image_archive_name = "container/image.oci.tar";

/// null without a container; otherwise image, digest, runtime, build and, when `run_dir` holds
/// an image record, base, containerfile_sha256, packages_sha256, image_id (the single id every
/// reported container ran, null when none reported or they disagree) and ran (one entry per
/// container). What does not add up goes to `warnings`. `run_dir` empty: the plan's part only.
Json container_provenance(const Plan& plan, const fs::path& run_dir, std::vector<std::string>& warnings);

} // namespace harness
