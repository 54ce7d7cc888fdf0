#pragma once
// The Slurm client tools the harness runs (sbatch, scontrol, scancel, sacct), over a
// ProcessRunner, and the loop that follows a job to its end. Both return data: the executor
// records it and says it, so the loop can be tested with scripted answers in milliseconds.
#include "card/cluster.hpp"
#include "run/run_record.hpp"
#include "util/process.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness {

/// The longest job id the harness accepts: a job id is a 32-bit number (10 digits), an array
/// task adds "_" and its index, a heterogeneous job's component "+" and its offset.
constexpr std::size_t k_max_slurm_job_id_bytes = 21;

/// Why `id` is not a Slurm job id as the harness writes them (sbatch --parsable's "42", an
/// array task "42_3", a heterogeneous job's component "42+1"), or "" when it is one. Anything
/// else (an option such as "--user=root", a newline, 100,000 digits) would reach scancel,
/// scontrol and sacct as something other than one job.
std::string slurm_job_id_problem(const std::string& id);

/// How long the harness waits, after scancel, for the job to end: Slurm's defaults give a job
/// KillWait (30 s) between SIGTERM and SIGKILL and UnkillableStepTimeout (60 s) before a step
/// that will not die drains its node; twice the first and the second, rounded up, leaves a
/// working cluster time to answer, and no person waits past it for one that does not.
constexpr double k_cancel_wait_seconds = 120;

/// The KEY=VALUE pairs of `scontrol show job -o`. A value may hold spaces (JobName, Comment,
/// Command, WorkDir...): a word that does not start a new key (an upper-case letter, then
/// letters, digits, '_', ':' or '/', then '=') continues the value before it. The first
/// occurrence of a key wins (a heterogeneous job prints one line per component).
std::map<std::string, std::string> parse_scontrol_job(const std::string& output);

/// One answer of `scontrol show job -o JOB`.
struct SlurmJob {
    bool known = false;       ///< the controller answered about this job
    bool unreachable = false; ///< the controller did not answer at all
    std::string state;        ///< JobState, e.g. PENDING, RUNNING, REQUEUED, NODE_FAIL
    std::string reason;       ///< Reason ("None" when there is none)
    std::string elapsed;      ///< RunTime
    std::string nodes;        ///< NodeList
    std::string partition;    ///< Partition
    std::string exit_code;    ///< "code:signal"
    long long restarts = 0;   ///< times Slurm requeued it
    std::string raw;          ///< scontrol's whole output
};

/// The environment the Slurm client tools run in: the harness's own, with the profile's SLURM_CONF,
/// and without the $SBATCH_* variables the plan already read (card/user_defaults.hpp): sbatch
/// lets them beat the rendered #SBATCH lines, so a card's own qos would lose to the shell's.
Environment slurm_client_environment(const ClusterProfile& cluster);

/// What `sbatch --parsable` answered: the job id, or sbatch's own message when it refused.
struct SlurmSubmission {
    std::string job_id; ///< empty when refused
    std::string error;  ///< sbatch's output, trimmed, when refused
    bool ok() const { return !job_id.empty(); }
};

/// The job's accounting as the commands printed it, for the run directory.
struct SlurmAccounting {
    std::string scontrol; ///< `scontrol show job JOB`
    std::string sacct;    ///< sacct's parsable table
    std::string source;   ///< "sacct", or "sacct -c" (the job completion file) without slurmdbd
};

/// A node out of service, as `sinfo -R` gives it.
struct SlurmNodeReason {
    std::string node;   ///< "node2"
    std::string state;  ///< "drained", "down", "draining"...
    std::string reason; ///< "maintenance", "Not responding"...
};

/// The hostlist a pending job's Reason says is unavailable ("ReqNodeNotAvail,_UnavailableNodes:
/// node2" gives "node2"); empty when it names none.
std::string unavailable_nodes(const std::string& reason);

class SlurmClient {
public:
    /// Runs every command through `runner` with this process's environment plus the profile's
    /// SLURM_CONF, when it names one. `runner` must outlive the client.
    SlurmClient(ProcessRunner& runner, const ClusterProfile& cluster);

    /// sbatch's option for `run --requeue` (Slurm requeues the job when a node fails) or its
    /// absence (the job ends with the scheduler's reason): what `run` submits and its dry run shows.
    static std::string requeue_option(bool requeue) { return requeue ? "--requeue" : "--no-requeue"; }

    /// `sbatch --parsable [OPTIONS] SCRIPT` started in `cwd`, with `extra` added to the
    /// environment (sbatch hands it to the job). Options on the command line override the
    /// script's #SBATCH lines (sbatch(1), "INPUT ENVIRONMENT VARIABLES").
    SlurmSubmission submit(const fs::path& script, const fs::path& cwd, const Environment& extra,
                           const std::vector<std::string>& options = {}) const;
    /// `scontrol show job -o JOB`. "Invalid job id" (the record aged out, MinJobAge) is neither
    /// known nor unreachable; any other failure is an unreachable controller.
    SlurmJob query(const std::string& job) const;
    /// `scancel JOB`; its answer is not needed: the following polls show the result.
    void cancel(const std::string& job) const;
    /// The final state from the job completion log (`sacct -c`), e.g. "COMPLETED" or
    /// "CANCELLED by 0"; empty when it has no record.
    std::string completed_state(const std::string& job) const;
    /// scontrol's long form and sacct's table (falling back to `sacct -c` without slurmdbd).
    SlurmAccounting accounting(const std::string& job) const;
    /// `sinfo -h -R -n NODES -o %n|%T|%E`: which of `nodes` (a hostlist) are down, drained or
    /// failing, and the reason an admin or slurmctld gave; empty when none, or when sinfo fails.
    std::vector<SlurmNodeReason> node_reasons(const std::string& nodes) const;
    /// The nodes a pending job waits for that are out of service, with why. The scheduler says it
    /// two ways: "ReqNodeNotAvail,_UnavailableNodes:node2" names them (node_scheduler.c:2877);
    /// "Nodes_required_for_job_are_DOWN,_DRAINED..." (job_scheduler.c:1747: the partition has
    /// fewer usable nodes than the job needs) names none, so the partition's are asked
    /// (`sinfo -R -p PARTITION`). Empty for any other reason, or when sinfo fails.
    std::vector<SlurmNodeReason> out_of_service(const SlurmJob& pending) const;

private:
    /// `sinfo -h -R SELECTOR VALUE -o %n|%T|%E` read into reasons.
    std::vector<SlurmNodeReason> sinfo_reasons(const char* selector, const std::string& value) const;
    ExitStatus run(std::vector<std::string> argv, const fs::path& cwd = {}, const Environment& extra = {}) const;

    ProcessRunner& m_runner;
    Environment m_env;
};

/// One line in which srun reports tasks that ended badly, e.g. "srun: error: node2: task 3:
/// Exited with exit code 1" or "srun: error: node1: tasks 0-1: Terminated".
struct SrunTaskEnd {
    std::string nodes; ///< the tasks' hosts, as srun compresses them ("node2", "node[1-2]")
    std::string tasks; ///< task ids: "3", "0-1", "0,2-3"
    std::string how;   ///< "Exited with exit code 1", "Terminated", "Killed", "Out Of Memory"
};

/// srun's task reports in the order it printed them, then the nodes it said failed ("srun:
/// error: Node failure on node2"), from a batch job's output.
struct SrunReport {
    std::vector<SrunTaskEnd> task_ends;
    std::vector<std::string> failed_nodes;
};
SrunReport parse_srun_report(const std::string& batch_output);

/// One row of `sacct --parsable2` with its header line; the columns it lacks are empty.
struct SacctRow {
    std::string job_id; ///< "42", "42.batch", "42.0"
    std::string state;  ///< "FAILED", "CANCELLED by 0", "NODE_FAIL"...
    std::string exit_code;
    std::string nodes;
};
std::vector<SacctRow> parse_sacct_rows(const std::string& table);

/// What srun's report and sacct's step rows say about a failed job, for the run record: the
/// node that failed, the task that failed first (named a rank when `tasks_are_ranks`: one srun
/// task per rank), and the steps that did not complete. Empty when they say nothing.
std::string describe_job_failure(const SrunReport& report, const std::vector<SacctRow>& rows, bool tasks_are_ranks);

/// The task srun reported failing first: the first report of an exit code, else the first
/// report at all (the tasks srun then ended itself, --kill-on-bad-exit, come after it).
std::optional<SrunTaskEnd> first_failed_task(const SrunReport& report);

/// Where a Slurm state leaves the run; nullopt while the job may still run (incl. REQUEUED).
std::optional<RunState> slurm_final_state(const std::string& state);

/// Time and Ctrl-C for the follow loop; tests substitute a clock that advances as it sleeps.
class SlurmWaiter {
public:
    virtual ~SlurmWaiter() = default;
    /// Seconds since any fixed point.
    virtual double now() = 0;
    /// Sleeps `seconds`; returns early on Ctrl-C when `wake_on_interrupt`.
    virtual void sleep(double seconds, bool wake_on_interrupt) = 0;
    /// Whether Ctrl-C (or SIGTERM) arrived.
    virtual bool interrupted() = 0;
    /// How many Ctrl-Cs and SIGTERMs arrived; asked only after interrupted() said yes. One that
    /// arrives after the cancel ends the wait for the job to end. A waiter that cannot count
    /// says one: the cancel's.
    virtual int interrupt_count() { return 1; }
    /// Whether the harness is asked to leave the job to Slurm (SIGHUP, run --detach).
    virtual bool detached() { return false; }
};

/// The steady clock, 100 ms sleep slices, and the process's interrupt flag.
class SystemSlurmWaiter : public SlurmWaiter {
public:
    double now() override;
    /// Returns early on a new Ctrl-C even when `wake_on_interrupt` is false: that one ends the
    /// wait after a cancel.
    void sleep(double seconds, bool wake_on_interrupt) override;
    bool interrupted() override;
    int interrupt_count() override;
    bool detached() override;
};

/// What happens while a job is followed, for the executor to record and say. Any may be empty.
struct SlurmFollowEvents {
    std::function<void()> controller_unreachable;       ///< first failed poll of a run of them
    std::function<void(long long restarts)> requeued;   ///< the restart count grew
    std::function<void(const SlurmJob&)> started;       ///< first seen in a state past RUNNING's start
    std::function<void(const SlurmJob&)> state_changed; ///< a new JobState, or a new Reason for it
    std::function<void(const SlurmJob&)> progress;      ///< every poll of a job not yet over
    std::function<void()> cancelling;                   ///< Ctrl-C: scancel is about to run
};

/// How the followed job ended.
struct SlurmOutcome {
    RunState state = RunState::failed;
    std::string reason;       ///< the run record's reason, as users read it
    std::string slurm_state;  ///< the last JobState seen (or sacct's state)
    std::string exit_code;    ///< "code:signal" when scontrol reported the end
    std::string nodes;        ///< NodeList at the end
    long long restarts = 0;   ///< requeues seen
    bool interrupted = false; ///< cancelled with scancel after Ctrl-C
    /// scancel sent, but the job was not seen ending: another Ctrl-C or SIGTERM, or
    /// k_cancel_wait_seconds, ended the wait. The run stays open (record_cancel_pending) for
    /// `attach` to finish; `state` means nothing.
    bool cancel_pending = false;
    /// Left to Slurm unfinished (SlurmWaiter::detached): `state` and `reason` mean nothing, the
    /// job is untouched and the run record stays submitted or running.
    bool detached = false;
};

/// Polls `scontrol` one call at a time, backing off from 1 s to 10 s while nothing changes,
/// until the job reaches a final state, ages out (then sacct -c has the last word), or the
/// controller stays unreachable longer than `unreachable_budget` seconds. An unreachable
/// controller is never mistaken for a job failure. Ctrl-C cancels the job once; the wait for
/// it to end then lasts at most `cancel_budget` seconds and ends at the next Ctrl-C or SIGTERM,
/// returning `cancel_pending`. A request to detach, checked before each poll, returns at once
/// with `detached`, unless a cancel was sent.
SlurmOutcome follow_slurm_job(const SlurmClient& client, const std::string& job, SlurmWaiter& waiter, double unreachable_budget,
                              const SlurmFollowEvents& events, double cancel_budget = k_cancel_wait_seconds);

/// Keeps a run whose cancel is pending open for `attach`: its reason `why`, scheduler's
/// cancel_pending the job id (attach sends scancel again), detached_job the job, no harness
/// following it; saved. Defined in executor_slurm.cpp.
void record_cancel_pending(RunRecord& record, const std::string& job, const std::string& why, const fs::path& run_dir);

struct ExecutionContext;

/// Follows the run's submitted `job` to its end and records it (record_slurm_job_end), saying
/// its progress on `context.out`: what `run` does after sbatch, and what `attach` does for a run
/// whose job was submitted earlier. A request to detach (SIGHUP, run --detach) leaves the job to
/// Slurm and the record submitted or running, without this process as its harness (so `status`
/// does not call it dead); returns whether it detached. A cancel left pending (a second Ctrl-C,
/// SIGTERM, or the bounded wait) is recorded (record_cancel_pending) and throws HarnessError
/// with exit 130. A record whose cancel was pending gets scancel again before it is followed.
/// Defined in executor_slurm.cpp.
bool follow_slurm_run(ExecutionContext& context, const std::string& job);

} // namespace harness
