#include "run/executor.hpp"
#include "run/slurm_client.hpp"
#include "run/slurm_job_end.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <ostream>
#include <regex>

namespace harness {

namespace {

/// What a rank died of, in its own words: the last line of its log that names a Python
/// exception ("RuntimeError: ..."), else the last that says "error". slurmstepd's own lines,
/// which srun appends to the task's output when it ends the step, are not the rank's. Empty
/// when there is none.
std::string last_error_line(const fs::path& log) {
    std::error_code ec;
    if (log.empty() || !fs::is_regular_file(log, ec)) {
        return {};
    }
    static const std::regex exception(R"(^[A-Za-z_.]*(Error|Exception)\b.*)");
    std::string raised;
    std::string said;
    for (const std::string& line : split(tail_lines(log, 40), '\n')) {
        const std::string text = trim(line);
        if (starts_with(text, "slurmstepd")) {
            continue;
        }
        if (std::regex_match(text, exception)) {
            raised = text;
        } else if (to_lower(text).find("error") != std::string::npos) {
            said = text;
        }
    }
    return raised.empty() ? said : raised;
}

/// What srun and sacct say about which node and rank failed, and the failing rank's own last
/// error: the part of a failed job's reason between the scheduler's verdict and the end of the
/// batch output (record_slurm_job_end adds those two).
std::string failure_detail(const ExecutionContext& context, const SlurmAccounting& accounting, const fs::path& output) {
    std::error_code ec;
    const std::string batch_text = output.empty() || !fs::is_regular_file(output, ec) ? std::string() : tail_lines(output, 200);
    const SrunReport report = parse_srun_report(batch_text);
    const Plan& plan = context.run.plan;
    std::vector<std::string> parts;
    if (std::string detail = describe_job_failure(report, parse_sacct_rows(accounting.sacct),
                                                  plan.tasks_per_node == plan.ranks_per_node);
        !detail.empty()) {
        parts.push_back(std::move(detail));
    }
    // The templates write task %t's output to logs/rank_%t.log (srun --output, filename pattern).
    const auto task = first_failed_task(report);
    if (task && all_digits(task->tasks)) {
        const std::string said = last_error_line(context.dir.rendered() / "logs" / ("rank_" + task->tasks + ".log"));
        if (!said.empty()) {
            parts.push_back(fmt::format("logs/rank_{}.log: {}", task->tasks, said));
        }
    }
    return join(parts, "; ");
}

/// The follow loop's events, recorded into the run record and said on `context.out`.
SlurmFollowEvents follow_events(ExecutionContext& context, const SlurmClient& slurm, const std::string& job, std::string& last_line) {
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
    events.state_changed = [&context, &slurm, job](const SlurmJob& view) {
        if (view.state == "PENDING" && !view.reason.empty() && view.reason != "None") {
            // Why the job waits, in the scheduler's words, with why the nodes it waits for are
            // out (SlurmClient::out_of_service: one sinfo per change of reason, not per poll),
            // kept in run.json so `status` can say it while the run waits.
            std::vector<std::string> out_of_service;
            for (const SlurmNodeReason& node : slurm.out_of_service(view)) {
                out_of_service.push_back(fmt::format("{} {}: {}", node.node, node.state, node.reason));
            }
            const std::string nodes_said = out_of_service.empty() ? "" : " (" + join(out_of_service, "; ") + ")";
            context.record.scheduler["pending_reason"] = view.reason + nodes_said;
            context.record.save(context.dir.path);
            context.out << fmt::format("job {}: pending: {}{}\n", job, view.reason, context.secrets.scrub(nodes_said));
            return;
        }
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
    events.cancelling = [&context, job] {
        context.out << fmt::format("\ninterrupted: cancelling job {}\nwaiting up to {:.0f} s for job {} to end after scancel "
                                   "(Ctrl-C again to stop waiting)\n",
                                   job, k_cancel_wait_seconds, job);
    };
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
    // Slurm requeues a batch job whose node fails when the job is requeueable, and JobRequeue
    // makes every job so by default (src/slurmctld/job_mgr.c:3068; slurm.conf(5) JobRequeue=1):
    // the job then waits, silently, for the node to return. A benchmark run should rather end
    // with the scheduler's reason (job_mgr.c:3127, NODE_FAIL) and be run again on purpose,
    // unless `run --requeue` asks for Slurm's way (follow_slurm_job follows the restarts).
    // From before sbatch: a hangup while it runs must not lose the job id it answers.
    install_detach_handler();
    const SlurmSubmission submitted = slurm.submit(context.run.launch_script, rendered, extra,
                                                   {SlurmClient::requeue_option(context.requeue)});
    if (!submitted.ok()) {
        record.transition(RunState::failed, context.dir.path, "sbatch refused the job: " + submitted.error, FailureStage::submission);
        return;
    }
    const std::string job = submitted.job_id;
    record.job_ids.push_back(job);
    // Slurm, not this process, runs the job from here on: it outlives the harness by design.
    record.detached_job = job;
    record.transition(RunState::submitted, context.dir.path);
    context.out << fmt::format("submitted job {} ({})\n", job, context.cluster.name);
    follow_slurm_run(context, job);
}

void record_cancel_pending(RunRecord& record, const std::string& job, const std::string& why, const fs::path& run_dir) {
    record.reason = why;
    record.scheduler["cancel_pending"] = job;
    record.detached_job = job;
    // Nobody follows it now: `status` shows it open, and `attach` may take it without --force.
    record.harness_pid = 0;
    record.harness_start_time = 0;
    record.harness_host.clear();
    record.save(run_dir);
}

bool follow_slurm_run(ExecutionContext& context, const std::string& job) {
    RunRecord& record = context.record;
    SystemProcessRunner runner;
    const SlurmClient slurm(runner, context.cluster);
    if (const Json* pending = record.scheduler.find("cancel_pending"); pending != nullptr && pending->is_string()) {
        // The person who ran it asked to stop it: that still holds.
        context.out << fmt::format("job {}: its cancel was pending; sending scancel again\n", job);
        slurm.cancel(job);
        Json::Object scheduler = record.scheduler.as_object();
        scheduler.erase("cancel_pending");
        record.scheduler = Json(std::move(scheduler));
        record.save(context.dir.path);
    }
    // A dropped SSH session must not leave run.json stale: the job goes on, the record says so.
    install_detach_handler(); // attach comes here without execute_slurm
    std::string last_line;
    SystemSlurmWaiter waiter;
    const long long limit = parse_time_limit(context.run.plan.time_limit);
    const double unreachable_budget = static_cast<double>(std::max(600LL, limit));
    const SlurmOutcome outcome = follow_slurm_job(slurm, job, waiter, unreachable_budget,
                                                  follow_events(context, slurm, job, last_line));
    if (context.interactive) {
        context.out << "\n";
    }
    if (outcome.cancel_pending) {
        record_cancel_pending(record, job, outcome.reason, context.dir.path);
        throw HarnessError(fmt::format("{}; run.json keeps job {} open: `ccl-harness attach {}` finishes the record", outcome.reason,
                                       job, shell_quote(context.dir.path.string())),
                           k_exit_interrupted);
    }
    if (outcome.detached) {
        // No harness follows the run now: `status` shows its state, not a dead harness, until
        // `attach` claims it.
        record.harness_pid = 0;
        record.harness_start_time = 0;
        record.harness_host.clear();
        record.save(context.dir.path);
        return true;
    }
    record_slurm_job_end(
        slurm, job, outcome, context.dir.path, record, context.secrets,
        [&context](const SlurmAccounting& accounting, const fs::path& output) { return failure_detail(context, accounting, output); });
    return false;
}

} // namespace harness
