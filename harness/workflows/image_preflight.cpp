#include "workflows/image_preflight.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

constexpr int k_preflight_refused = 3;   // ccl_preflight.py: an option or the CUDA major does not match
constexpr int k_preflight_unchecked = 5; // ccl_preflight.py --from-script: nothing checkable outside the job

/// The launch script that calls the preflight, or empty.
fs::path preflight_script(const fs::path& rendered_dir) {
    for (const char* name : {"launch.sbatch", "launch.sh", "remote.sh"}) {
        fs::path script = rendered_dir / name;
        std::error_code ec;
        if (fs::is_regular_file(script, ec) && read_file(script).find("ccl_preflight.py") != std::string::npos) {
            return script;
        }
    }
    return {};
}

/// The last `count` lines of `text`, joined by "; ".
std::string last_lines(const std::string& text, std::size_t count) {
    std::vector<std::string> lines = split(text, '\n');
    const std::size_t from = lines.size() > count ? lines.size() - count : 0;
    return join(std::vector<std::string>(lines.begin() + static_cast<std::ptrdiff_t>(from), lines.end()), "; ");
}

} // namespace

ImagePreflight preflight_in_image(const Plan& plan, const fs::path& rendered_dir, ProcessRunner& runner) {
    ImagePreflight out;
    const fs::path dir = absolute_path(rendered_dir);
    const fs::path script = preflight_script(dir);
    std::error_code ec;
    if (script.empty() || !fs::is_regular_file(dir / "ccl_preflight.py", ec)) {
        out.text = "the launch script runs no preflight";
        return out;
    }
    Command command;
    command.argv = {plan.container_runtime, "run",          "--rm",
                    "--entrypoint=",        "--volume",     dir.string() + ":" + dir.string(),
                    plan.container_build,   "python3",      (dir / "ccl_preflight.py").string(),
                    "--from-script",        script.string()};
    command.env = current_environment();
    ExitStatus status;
    try {
        status = runner.run(command);
    } catch (const HarnessError& error) {
        out.text = fmt::format("could not start {}: {}; the job checks again", plan.container_runtime, error.what());
        return out;
    }
    out.text = trim(status.output);
    if (status.ok()) {
        out.result = ImagePreflight::Result::passed;
    } else if (status.signal == 0 && status.code == k_preflight_refused) {
        out.result = ImagePreflight::Result::refused;
    } else if (status.signal == 0 && status.code == k_preflight_unchecked) {
        out.result = ImagePreflight::Result::not_checked;
    } else {
        // The image could not be asked here (no GPU on a login node, an import that needs one,
        // the runtime's own refusal): the job asks again where it runs.
        out.result = ImagePreflight::Result::not_checked;
        out.text = fmt::format("could not ask the image here ({}): {}; the job checks again", status.describe(),
                               last_lines(out.text, 3));
    }
    return out;
}

} // namespace harness
