#include "run/executor.hpp"
#include "run/slurm_client.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <ostream>

namespace harness {

namespace {

void save_accounting(const SlurmClient& slurm, const std::string& job, const fs::path& run_dir, RunRecord& record,
                     const SecretScrubber& secrets) {
    const fs::path dir = run_dir / "accounting";
    fs::create_directories(dir);
    const SlurmAccounting accounting = slurm.accounting(job);
    write_file_atomic(dir / "scontrol.txt", secrets.scrub(accounting.scontrol));
    write_file_atomic(dir / "sacct.txt", secrets.scrub(accounting.sacct));
    record.scheduler["accounting"] = Json(
        Json::Object{{"source", accounting.source}, {"sacct", "accounting/sacct.txt"}, {"scontrol", "accounting/scontrol.txt"}});
}

/// The follow loop's events, recorded into the run record and said on `context.out`.
SlurmFollowEvents follow_events(ExecutionContext& context, const std::string& job, std::string& last_line) {
    SlurmFollowEvents events;
    events.controller_unreachable = [&context] { context.out << "slurm controller unreachable; retrying\n"; };
    events.requeued = [&context, job](long long restarts) {
        context.record.scheduler["restarts"] = restarts;
        context.record.save(context.dir.path);
        context.out << fmt::format("job {}: requeued (restart {})\n", job, restarts);
    };
    events.started = [&context](const SlurmJob& view) {
        if (context.record.state == RunState::submitted) {
            context.record.scheduler["nodes"] = view.nodes;
            context.record.transition(RunState::running, context.dir.path);
        }
    };
    events.state_changed = [&context, job](const SlurmJob& view) {
        if (!context.interactive) {
            context.out << fmt::format("job {}: {}{}\n", job, view.state,
                                       view.reason.empty() || view.reason == "None" ? "" : " (" + view.reason + ")");
        }
    };
    events.progress = [&context, &last_line, job](const SlurmJob& view) {
        const std::string line = fmt::format("job {}: {} {} elapsed {} {}", job, view.state, view.reason == "None" ? "" : view.reason,
                                             view.elapsed, view.nodes);
        if (context.interactive && line != last_line) {
            context.out << "\r\033[K" << line << std::flush;
            last_line = line;
        }
    };
    events.cancelling = [&context, job] { context.out << fmt::format("\ninterrupted: cancelling job {}\n", job); };
    return events;
}

} // namespace

void execute_slurm(ExecutionContext& context) {
    RunRecord& record = context.record;
    SystemProcessRunner runner;
    const SlurmClient slurm(runner, context.cluster);
    const fs::path rendered = context.dir.rendered();
    // sbatch hands the submitter's environment to the job (--export=ALL): the card's secrets
    // reach it that way, never through a file of the run directory.
    Environment extra = context.job_secrets;
    extra.emplace_back("CCL_RUN_DIR", rendered.string());
    const SlurmSubmission submitted = slurm.submit(context.run.launch_script, rendered, extra);
    if (!submitted.ok()) {
        record.transition(RunState::failed, context.dir.path, "sbatch refused the job: " + submitted.error);
        return;
    }
    const std::string job = submitted.job_id;
    record.job_ids.push_back(job);
    // Slurm, not this process, runs the job from here on: it outlives the harness by design.
    record.detached_job = job;
    record.transition(RunState::submitted, context.dir.path);
    context.out << fmt::format("submitted job {} ({})\n", job, context.cluster.name);

    std::string last_line;
    SystemSlurmWaiter waiter;
    const long long limit = parse_time_limit(context.run.plan.time_limit);
    const double unreachable_budget = static_cast<double>(std::max(600LL, limit));
    SlurmOutcome outcome = follow_slurm_job(slurm, job, waiter, unreachable_budget, follow_events(context, job, last_line));
    if (context.interactive) {
        context.out << "\n";
    }
    save_accounting(slurm, job, context.dir.path, record, context.secrets);
    if (outcome.state == RunState::failed || outcome.state == RunState::timeout) {
        // The batch script's own output says what went wrong; quote its end.
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(rendered / "logs", ec)) {
            if (ends_with(entry.path().filename().string(), "-" + job + ".out")) {
                outcome.reason += fmt::format("; last lines of {}:\n{}", entry.path().filename().string(),
                                              tail_lines(entry.path(), 10));
            }
        }
    }
    if (outcome.state == RunState::completed) {
        record.reason = outcome.reason;
        record.save(context.dir.path); // collection decides between completed and failed
    } else {
        record.transition(outcome.state, context.dir.path, outcome.reason);
    }
}

} // namespace harness
