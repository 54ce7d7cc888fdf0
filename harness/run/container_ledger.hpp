#pragma once
// Which image each container of a run ran, as the container runtime reports it, not as the card
// or the plan says. Job scripts start their containers with the label ccl-harness.run=<rendered
// dir> and no --rm; once the ranks have ended, `podman ps --all --filter label=... --format json`
// on each node is written to container/ran-<node>.json, and the containers are removed. A Slurm
// job does that itself on every node (templates/common/container.mustache); for a local run the
// harness does it (record_local_containers). docs/containers.md says why.
#include "util/fs.hpp"
#include "util/process.hpp"

#include <string>
#include <vector>

namespace harness {

/// The label every container of a run carries; its value is the run's rendered directory.
inline constexpr const char* k_container_run_label = "ccl-harness.run";

/// The run directory's folder for the image record and the runtime's reports.
inline constexpr const char* k_container_dir = "container";

struct RanContainer {
    std::string node;     ///< from the report's file name, ran-<node>.json
    std::string id;       ///< the container's id (64 hex)
    std::string image;    ///< the reference it was started with
    std::string image_id; ///< the image's id (64 hex, no "sha256:")
};

struct ContainerLedger {
    std::vector<RanContainer> containers; ///< sorted by node, then id
    std::vector<std::string> problems;    ///< a report that could not be read, named with its file
};

/// Reads every `dir`/ran-*.json (a JSON array of podman ps objects with Id and ImageID). A
/// missing directory is an empty ledger; an unreadable report is a problem, never a throw.
ContainerLedger read_container_ledger(const fs::path& dir);

/// For a run whose containers ran on this machine: asks `runtime` (podman) for the containers
/// labelled with `rendered_dir`, writes the answer to `dir`/ran-<node>.json, then removes them.
/// Returns a problem, or "" when it is recorded. Never throws for the runtime's failures.
std::string record_local_containers(ProcessRunner& runner, const std::string& runtime, const fs::path& rendered_dir,
                                    const fs::path& dir, const std::string& node);

} // namespace harness
