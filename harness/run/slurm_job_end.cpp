#include "run/slurm_job_end.hpp"

#include "run/executor.hpp"
#include "run/run_directory.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

fs::path slurm_batch_output(const fs::path& rendered, const std::string& job) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(rendered / run_files::k_logs, ec)) {
        if (ends_with(entry.path().filename().string(), "-" + job + ".out")) {
            return entry.path();
        }
    }
    return {};
}

void record_slurm_job_end(const SlurmClient& client, const std::string& job, const SlurmOutcome& outcome, const fs::path& run_dir,
                          RunRecord& record, const SecretScrubber& secrets, const SlurmFailureDetail& detail) {
    const fs::path dir = run_dir / "accounting";
    fs::create_directories(dir);
    const SlurmAccounting accounting = client.accounting(job);
    write_file_atomic(dir / "scontrol.txt", secrets.scrub(accounting.scontrol));
    write_file_atomic(dir / "sacct.txt", secrets.scrub(accounting.sacct));
    record.scheduler["accounting"] = Json(
        Json::Object{{"source", accounting.source}, {"sacct", "accounting/sacct.txt"}, {"scontrol", "accounting/scontrol.txt"}});
    // Slurm's own verdict, for the failure class (a job's OUT_OF_MEMORY is no log line).
    if (!outcome.slurm_state.empty()) {
        record.scheduler["slurm_state"] = outcome.slurm_state;
    }
    if (!outcome.exit_code.empty()) {
        record.scheduler["exit_code"] = outcome.exit_code;
    }
    std::string reason = outcome.reason;
    if (outcome.state == RunState::failed || outcome.state == RunState::timeout) {
        const fs::path output = slurm_batch_output(RunDirectory{"", run_dir}.rendered(), job);
        if (detail) {
            if (const std::string said = detail(accounting, output); !said.empty()) {
                reason += "; " + said;
            }
        }
        if (!output.empty()) {
            reason += fmt::format("; last lines of {}:\n{}", output.filename().string(), tail_lines(output, 10));
        }
        reason = secrets.scrub(reason);
    }
    if (outcome.state == RunState::completed) {
        record.reason = reason;
        record.save(run_dir); // collection decides between completed and failed
    } else {
        record.transition(outcome.state, run_dir, reason);
    }
}

} // namespace harness
