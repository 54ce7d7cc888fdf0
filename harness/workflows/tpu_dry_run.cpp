#include "workflows/tpu_dry_run.hpp"

#include "util/error.hpp"
#include "util/process.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

#include <cstdlib>
#include <fmt/format.h>

namespace harness {

namespace {

constexpr const char* k_recorder = "templates/common/gcloud_dry_run.sh";
/// The lifecycle answers at once under the recorder (ACTIVE on the first poll); a script that
/// waits longer is stopped and what it recorded so far is shown.
constexpr const char* k_seconds = "60";

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

} // namespace

std::string tpu_billing(const Plan& plan, bool teardown) {
    const long long chips = plan.tpu_hosts * plan.tpu_chips_per_host;
    std::string text = fmt::format("bills: a TPU {} slice ({} chip(s) on {} host(s)), {}, in zone {} of project {}, from the "
                                   "creation of queued resource {}-qr until it is deleted",
                                   plan.tpu_accelerator_type, chips, plan.tpu_hosts, plan.tpu_spot ? "spot" : "on-demand",
                                   plan.tpu_zone.empty() ? "(unset)" : plan.tpu_zone,
                                   plan.tpu_project.empty() ? "(unset)" : plan.tpu_project, plan.tpu_name);
    text += teardown ? "; this run deletes it when it ends, also on failure or Ctrl-C (--keep leaves it up, and billing)"
                     : "; --keep: this run leaves it up, and billing, until you delete it";
    return text;
}

TpuDryRun preview_tpu_run(const RenderedRun& run, const fs::path& home, bool teardown, const fs::path& shown_as) {
    TpuDryRun preview;
    preview.billing = tpu_billing(run.plan, teardown);
    const ScratchDir scratch({}, "tpu-dry-run");
    const fs::path rendered = scratch.path() / "rendered";
    const fs::path bin = scratch.path() / "bin";
    const fs::path log = scratch.path() / "gcloud.log";
    write_rendered(run, rendered);
    fs::create_directories(bin);
    write_file_atomic(bin / "gcloud", read_file(home / k_recorder), true);
    write_file_atomic(log, "");
    const char* path = std::getenv("PATH");
    Command command;
    command.argv = {"timeout", k_seconds, "/bin/bash", (rendered / run.launch_script).string()};
    command.cwd = rendered;
    command.env = current_environment({{"PATH", bin.string() + (path != nullptr ? std::string(":") + path : "")},
                                       {"CCL_RUN_DIR", rendered.string()},
                                       {"CCL_DRY_RUN_LOG", log.string()},
                                       {"CCL_KEEP_TPU", teardown ? "0" : "1"}});
    const ExitStatus status = run_command(command);
    for (const std::string& line : split(read_file(log), '\n')) {
        if (!line.empty()) {
            preview.commands.push_back(replaced(line, rendered.string(), shown_as.string()));
        }
    }
    if (status.code == 124) {
        preview.problem = fmt::format("{} did not finish under the recording gcloud within {} s: the list may be incomplete",
                                      run.launch_script, k_seconds);
    } else if (preview.commands.empty()) {
        preview.problem = fmt::format("{} ran no gcloud command ({}): {}", run.launch_script, status.describe(),
                                      trim(status.output).substr(0, 400));
    }
    return preview;
}

} // namespace harness
