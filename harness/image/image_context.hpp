#pragma once
// What building an image needs from its caller: where the harness's files are, which runtime,
// the seam that runs commands (tests script it) and where progress goes. The library never prints.
#include "util/fs.hpp"
#include "util/process.hpp"

#include <functional>
#include <string>

namespace harness {

struct ImageContext {
    explicit ImageContext(ProcessRunner& command_runner) : runner(command_runner) {}

    fs::path home;                                    ///< holds containers/base/
    std::string runtime = "podman";                   ///< the podman binary (name or path)
    std::string mmdebstrap = "mmdebstrap";            ///< the mmdebstrap binary (name or path)
    ProcessRunner& runner;                            ///< every command goes through it
    std::function<void(const std::string&)> progress; ///< one line per long step; may be empty
    fs::path scratch_root;                            ///< where a base's temporary tar is made; empty: $TMPDIR, else /var/tmp
    /// podman-hpc: `migrate` the image once built or found, before anything runs from it (its
    /// compute nodes see only migrated images; docs/containers.md).
    bool migrate = false;
    fs::path lock_dir; ///< where the per-base lock files live; empty: /var/tmp, else $TMPDIR

    /// The runtime a plan names (podman, podman-hpc); podman-hpc's images are migrated.
    void use_runtime(const std::string& name) {
        runtime = name;
        migrate = name == "podman-hpc";
    }

    /// Sends `line` to `progress` when there is one.
    void report(const std::string& line) const {
        if (progress) {
            progress(line);
        }
    }
};

} // namespace harness
