#pragma once
// The end of a Slurm job in its run record, one way for the job `run` submitted and for each
// task of a sweep's job array: the accounting files, the reason a failure gets, the final state.
#include "run/run_record.hpp"
#include "run/slurm_client.hpp"

#include <functional>
#include <string>

namespace harness {

/// The batch script's output in `rendered`/logs, `<name>-<job>.out` (the templates' --output
/// for a job, the array wrapper's for a task); empty when there is none.
fs::path slurm_batch_output(const fs::path& rendered, const std::string& job);

/// What a failure adds to the scheduler's verdict (which node, which rank, in whose words),
/// from the job's accounting and its batch output (empty when there is none); empty: nothing.
using SlurmFailureDetail = std::function<std::string(const SlurmAccounting& accounting, const fs::path& batch_output)>;

/// Records how `job` ended in `record`, kept in `run_dir`: scontrol's and sacct's account of
/// it (scrubbed) in accounting/, named in run.json's scheduler.accounting. A failed or timed-out
/// job's reason is `outcome.reason`, then `detail`'s, then the batch output's last 10 lines, all
/// scrubbed. A completed job stays open with its reason saved: collection decides between
/// completed and failed. Any other end is a final transition.
void record_slurm_job_end(const SlurmClient& client, const std::string& job, const SlurmOutcome& outcome, const fs::path& run_dir,
                          RunRecord& record, const SecretScrubber& secrets, const SlurmFailureDetail& detail = {});

} // namespace harness
