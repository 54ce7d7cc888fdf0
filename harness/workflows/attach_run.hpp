#pragma once
// `ccl-harness attach RUN_DIR`: takes a Slurm run whose harness detached (run --detach, SIGHUP)
// or died to its end, exactly as `run` would have: the job followed, traces collected,
// provenance recorded, metrics computed, the bundle packed.
#include "workflows/run_workload.hpp"

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace harness {

struct AttachOptions {
    fs::path run_dir;
    fs::path home;                         ///< the harness home: the profile and templates the run is re-planned with
    std::vector<std::string> secret_names; ///< --secret NAME, as the run was given them
    bool pack = true;                      ///< pack a bundle when the run completes
    /// Follow even though run.json names a harness on another host, which cannot be checked.
    bool force = false;
};

/// What attach did.
struct AttachOutcome {
    RunOutcome run;
    std::string job;            ///< the Slurm job followed
    bool already_final = false; ///< the run had ended before: nothing was changed
};

/// The run in `run_dir` rebuilt as a staged run, as stage_rendered_run left it once submitted:
/// the plan re-made in memory from its effective card (rendered/card.yaml, beside the scripts
/// it names) and the profile named by run.json's target, the source commit that plan.json
/// pinned, and its record loaded from run.json (not claimed). Nothing on disk changes: the
/// rendered files stay what ran, and a difference between them and what this harness renders
/// today becomes a provenance warning. Throws an input error for a directory that is not a run
/// directory, or whose card or profile no longer resolves.
std::shared_ptr<StagedRun> staged_run_from_directory(const fs::path& run_dir, const RunOptions& options);

/// Follows the run's Slurm job to its end and finishes the run as `run` does
/// (finish_staged_run). A run already final is reported as it is, changing nothing (exit code
/// 0 when it completed, else 1). Refused (HarnessError, exit 1) when another attach holds the
/// run directory, when the harness that run.json names still follows it (or is on another host,
/// unless `force`), when the run was never submitted, or when it is not a Slurm run (its work
/// died with its harness). The directory is input: a symbolic link among its entries
/// (refuse_linked_entries) or a run.json field that is not its declared type (RunRecord::load)
/// is an input error (exit 2) before any Slurm tool runs. SIGHUP detaches again; Ctrl-C cancels
/// the job, as in `run`, and a second Ctrl-C leaves the cancel pending (exit 130) for a later
/// attach, which sends scancel again and finishes the record.
AttachOutcome attach_run(const AttachOptions& options, std::ostream& out);

/// The outcome as `attach --json` prints it: run --json's keys, plus job and already_final.
Json attach_outcome_to_json(const AttachOutcome& outcome);

/// The human summary: `run --json`'s, said as already final when it was.
std::string format_attach_outcome(const AttachOutcome& outcome);

} // namespace harness
