#pragma once
// The in-job preflight (templates/common/ccl_preflight.py), run before the job exists: in the
// image the harness built on this machine, against the rendered launch script's own preflight
// call, so an option the image's framework lacks is refused before the job queues, not after.
#include "plan/plan.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"

#include <string>

namespace harness {

struct ImagePreflight {
    enum class Result {
        passed,      ///< every option was found
        refused,     ///< an option or the CUDA major does not match (what the job would stop on)
        not_checked, ///< nothing to check here, or the image could not be asked (the job checks)
    };
    Result result = Result::not_checked;
    std::string text; ///< what the preflight said, or why it did not run
};

/// Runs the preflight of the launch script in `rendered_dir` inside `plan`'s built image
/// (plan.container_build) with its runtime: `RUNTIME run --rm --entrypoint= --volume DIR:DIR
/// IMAGE python3 DIR/ccl_preflight.py --from-script DIR/SCRIPT`. No GPU is asked for: the check
/// reads the framework's command line and the image's CUDA version only.
ImagePreflight preflight_in_image(const Plan& plan, const fs::path& rendered_dir, ProcessRunner& runner);

} // namespace harness
