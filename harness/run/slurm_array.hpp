#pragma once
// Slurm job arrays for a sweep: the wrapper script that runs point $SLURM_ARRAY_TASK_ID's
// rendered launch script, `sbatch --array`, and the loop that follows every task of the arrays
// with one `scontrol show job -o ARRAY` call per array per poll (never one per task). Returns
// data, as slurm_client does, so the loop runs against scripted answers in tests.
#include "card/cluster.hpp"
#include "run/run_record.hpp"
#include "run/slurm_client.hpp"
#include "util/process.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace harness {

/// `--array`'s index list for `indices`: ascending, duplicates dropped, runs folded ("0-5",
/// "1,3-4"), as sbatch's --array option takes it (sbatch(1), "--array").
std::string array_index_list(std::vector<std::size_t> indices);

/// The indices of an ArrayTaskId value: "7", "0-3%2", "1,3-5", "0-9:3" (the pending remainder
/// of an array, src/api/job_info.c slurm_sprint_job_info prints array_task_str, throttle and
/// all). Throws an input error for anything else, or more than `max_count` indices.
std::vector<std::size_t> parse_array_indices(const std::string& text, std::size_t max_count = 1000000);

/// One task of an array as scontrol reported it.
struct ArrayTask {
    std::size_t index = 0;
    std::string job_id; ///< the task's own JobId; empty while it waits in the array's pending remainder
    std::string state;  ///< JobState
    std::string reason; ///< Reason ("None" when there is none)
    std::string exit_code;
    std::string nodes;
};

/// One answer of `scontrol show job -o ARRAY`: a line per task split out of the array, and one
/// for the remainder still pending as a whole ("ArrayJobId=916 ArrayTaskId=2-5%2").
struct ArrayView {
    bool known = false;       ///< the controller answered about this array
    bool unreachable = false; ///< the controller did not answer at all
    std::vector<ArrayTask> tasks;
};

/// Parses scontrol's one-line-per-record output; records of another array are ignored.
ArrayView parse_array_view(const std::string& output, const std::string& array_id);

/// The #SBATCH options of a batch script, as sbatch reads them: from the top, until the first
/// line that is neither blank nor a comment (sbatch(1), "the batch script may contain options
/// preceded with #SBATCH before any executable commands").
std::vector<std::string> sbatch_directives_of(const std::string& script);

/// What every point of one array must share: its directives without --job-name and --output
/// (an array is one submission: one geometry, one time limit, one account).
std::string array_geometry_key(const std::vector<std::string>& directives);

/// The wrapper of one array: `directives` (of the points' launch scripts; --output replaced by
/// logs/%x-%A_%a.out under the submission directory), then a table from array index to the
/// point's rendered directory, whose launch script it runs there with CCL_RUN_DIR set and its
/// output in that directory's logs/<job_name>-<array>_<index>.out, where the run collects it.
std::string array_wrapper_script(const std::vector<std::string>& directives, const std::map<std::size_t, fs::path>& rendered_dirs,
                                 const std::string& launch_script, const std::string& job_name);

class SlurmArrayClient {
public:
    /// As SlurmClient: `runner` must outlive the client; SLURM_CONF from the profile.
    SlurmArrayClient(ProcessRunner& runner, const ClusterProfile& cluster);

    /// `sbatch --parsable --array=LIST[%K] SCRIPT` in `cwd` (K = max_parallel, 0: no limit).
    SlurmSubmission submit(const fs::path& script, const fs::path& cwd, const Environment& extra,
                           const std::vector<std::size_t>& indices, std::size_t max_parallel) const;
    /// `scontrol show job -o ARRAY`: every task the controller still holds, in one call.
    ArrayView query(const std::string& array_id) const;

private:
    ProcessRunner& m_runner;
    Environment m_env;
};

/// One array the follow loop polls: its id and the point indices it runs.
struct FollowedArray {
    std::string array_id;
    std::vector<std::size_t> indices;
};

/// What happens while the arrays are followed. Any may be empty.
struct ArrayFollowEvents {
    std::function<void()> controller_unreachable;                                         ///< first failed poll of a run of them
    std::function<void(const std::string& array, const ArrayTask&)> started;              ///< first seen running (or past it)
    std::function<void(const std::string& array, const ArrayTask&)> state_changed;        ///< a new JobState or Reason
    std::function<void(const std::string& array, std::size_t, const SlurmOutcome&)> done; ///< a task reached its end
    std::function<void()> cancelling;                                                     ///< Ctrl-C: scancel is about to run
};

/// Polls until every task of every array has ended: each poll is one `scontrol show job -o`
/// per array, backing off from 1 s to 10 s. A task the controller no longer holds (MinJobAge)
/// takes its end from the completion log by its own job id (`client.completed_state`); one
/// never seen split out ended without a record (failed). A failed task never stops the others.
/// Ctrl-C scancels every array once; the tasks then end cancelled. An unreachable controller
/// fails the remaining tasks only after `unreachable_budget` seconds. `client` also cancels.
std::map<std::size_t, SlurmOutcome> follow_slurm_arrays(const SlurmArrayClient& arrays, const SlurmClient& client,
                                                        const std::vector<FollowedArray>& followed, SlurmWaiter& waiter,
                                                        double unreachable_budget, const ArrayFollowEvents& events);

/// The end of one array task in its run record: its task id and nodes in run.json's scheduler,
/// then record_slurm_job_end, as the Slurm executor records a job's (the accounting files, the
/// batch log's last lines for a failure, the final state; a completed task stays open).
void record_array_task_end(const SlurmClient& client, const std::string& task_id, const SlurmOutcome& outcome, const fs::path& run_dir,
                           RunRecord& record, const SecretScrubber& secrets);

} // namespace harness
