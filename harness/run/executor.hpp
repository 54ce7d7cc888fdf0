#pragma once
// Executors take a rendered run to a final state: local (ranks as child processes), slurm
// (sbatch and follow), tpu-vm (the rendered gcloud lifecycle). Each records into RunRecord.
#include "card/cluster.hpp"
#include "provenance/secret_scrub.hpp"
#include "render/render.hpp"
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "util/process.hpp"

#include <array>
#include <iosfwd>

namespace harness {

struct ExecutionContext {
    const RenderedRun& run;
    const ClusterProfile& cluster;
    const RunDirectory& dir;
    RunRecord& record;
    std::ostream& out;             ///< rank output and progress
    bool interactive = false;      ///< a terminal: live progress line
    double grace_seconds = 5;      ///< between SIGTERM and SIGKILL
    bool teardown = false;         ///< delete cloud resources the run created
    bool requeue = false;          ///< Slurm: the job may be requeued when a node fails
    const SecretScrubber& secrets; ///< applied to rank output before it reaches a log or the terminal
    Environment job_secrets;       ///< the card's secret-named env with values: handed to the job, never written
    std::size_t redacted = 0;      ///< out: secret values replaced in the output as it streamed
};

void execute_local(ExecutionContext& context);
/// Starts every command (each in its own process group, dying with the harness; its output
/// scrubbed of secrets as it arrives, then appended to logs/<label>.log and echoed with a
/// [label] prefix) and waits: the first failure, Ctrl-C or the time limit stops them all
/// (SIGTERM, then SIGKILL after the grace period).
void supervise_processes(ExecutionContext& context, const std::vector<Command>& commands, const std::vector<std::string>& labels);
void execute_slurm(ExecutionContext& context);
void execute_tpu(ExecutionContext& context);

/// One executor: what runs a rendered run on a scheduler.
struct Executor {
    Scheduler scheduler;
    void (*execute)(ExecutionContext& context);
};

/// The registry: one row per Scheduler. A table, not self-registering objects, because the
/// linker drops an unreferenced object file of a static library (and its registration) silently.
inline const std::array<Executor, 4>& executors() {
    static const std::array<Executor, 4> table{{
        {Scheduler::local, &execute_local},
        {Scheduler::slurm, &execute_slurm},
        {Scheduler::tpu_vm, &execute_tpu},
        {Scheduler::gke, &execute_tpu}, // the rendered lifecycle drives the JobSet too
    }};
    return table;
}

/// The executor registered for `scheduler`; every Scheduler has one (test_resolve checks).
inline const Executor& executor_for(Scheduler scheduler) {
    for (const Executor& executor : executors()) {
        if (executor.scheduler == scheduler) {
            return executor;
        }
    }
    return executors().front();
}

/// Slurm-style time limit ("90", "01:30:00", "1-00:00:00", "2-12", "2-12:30") in seconds; 0
/// when empty. Anything else (signs, fractions, "nan", more than k_max_time_limit_seconds) is
/// an input error.
long long parse_time_limit(const std::string& text);

/// The longest time limit accepted: Slurm's own ceiling for a finite limit is about a year.
inline constexpr long long k_max_time_limit_seconds = 365LL * 86400;

/// The longest grace period accepted between SIGTERM and SIGKILL (Slurm's KillWait tops out
/// at 65533 s; an hour is already far past any real shutdown).
inline constexpr double k_max_grace_seconds = 3600;

/// Refuses a grace period that is not a finite number of seconds in [0, k_max_grace_seconds]
/// (nan, inf and negatives would keep a rank that ignores SIGTERM alive forever).
void check_grace_seconds(double seconds);

/// The last `lines` lines of a file, for failure messages.
std::string tail_lines(const fs::path& file, std::size_t lines);

} // namespace harness
