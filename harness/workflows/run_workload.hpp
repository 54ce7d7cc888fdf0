#pragma once
// `ccl-harness run`: card -> plan -> rendered run -> execution -> run record (+ traces).
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "render/render.hpp"
#include "run/record_provenance.hpp"
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "workflows/run_image.hpp"
#include "workflows/slurm_dry_run.hpp"
#include "util/process.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct RunOptions {
    fs::path card;
    std::string cluster;
    std::vector<std::string> overrides;
    fs::path results = "results";
    bool dry_run = false;
    fs::path dry_run_out; ///< with --dry-run: also write the rendered files here
    bool teardown = true; ///< TPU: delete the slice at the end (run --keep: false)
    /// Slurm: let the scheduler requeue the job when one of its nodes fails (sbatch --requeue);
    /// by default a node failure ends the run with the scheduler's reason.
    bool requeue = false;
    /// Slurm: return once the job is submitted, recorded `submitted` with its job id, for
    /// `ccl-harness attach` to follow later (run --detach). Refused for other schedulers.
    bool detach = false;
    /// run --reuse: an earlier completed run rendered alike, with a verified bundle, is the
    /// result instead of a new run (workflows/run_reuse.hpp).
    bool reuse = false;
    double grace_seconds = 5;              ///< checked by check_grace_seconds (executor.hpp)
    std::vector<std::string> secret_names; ///< --secret NAME: variables whose values are secrets whatever their names
    bool pack = true;                      ///< pack a bundle when the run completes
    fs::path git_cache;                    ///< clones of launch.source repos; empty: default_git_cache()
    fs::path home;                         ///< the harness home: templates, profiles (the command line reads it once)
    /// Where the card's diagnostics go as soon as they are known, before anything runs (the
    /// command line: stderr); null drops them (a sweep has shown them once already). They are
    /// also in RunOutcome::diagnostics.
    std::ostream* diagnostics = nullptr;
    /// Stop after the run directory is created and recorded as `rendered`, returning the run in
    /// RunOutcome::staged instead of executing it: a Slurm array sweep submits many staged runs
    /// as one job, then hands each to finish_staged_run.
    bool stage_only = false;
    /// The workload's name (`--name`), which the run id, job and bundle carry instead of the card's;
    /// empty: row_name(card), else the card file's stem.
    std::string name;
    /// Named into the run id (run_id_label): a sweep point's varied values, "bs16-seq64".
    std::string run_label;
    /// reproduce: the image the bundle's run ran, which the new run's image is held to.
    std::optional<ExpectedImage> expected_image;
};

/// The bundle a completed run was packed into.
struct PackedBundle {
    fs::path path; ///< absolute
    std::string sha256;
    std::size_t files = 0;
};

/// What a dry run would have done, instead of doing it.
struct DryRunPreview {
    std::string submission; ///< the command that would be submitted, and where
    fs::path rendered;      ///< where the rendered files would be (or were written, with --out)
    fs::path results;       ///< where the run directory would be created
    long long nodes = 0;
    long long ranks_per_node = 0;
    long long steps = 0;
    std::vector<std::string> trace_kinds;
    /// TPU: every gcloud command the launch script would run (workflows/tpu_dry_run.hpp), what
    /// bills, and why the list may be incomplete.
    std::vector<std::string> commands;
    std::string billing;
    std::string commands_problem;
    /// The job's preflight run in the built image ("passed in IMAGE:\n..."), why it was not, or
    /// "" for a run without one.
    std::string preflight;
    /// Slurm: the bill, the image work and the sbatch line (workflows/slurm_dry_run.hpp).
    std::optional<SlurmDryRun> slurm;
};

/// A run rendered into its run directory and recorded as `rendered`, not executed yet: what an
/// executor needs, and what finish_staged_run needs after it. Not movable: `record.secrets`
/// points into `facts`.
struct StagedRun {
    WorkloadCard card;
    ClusterProfile cluster;
    std::string target;
    RenderedRun run;
    RunOptions options;
    ProvenanceFacts facts;
    Environment job_secrets; ///< the card's secret-named env with values: for the job, never written
    RunDirectory dir;
    RunRecord record;

    StagedRun(WorkloadCard card_, ClusterProfile cluster_, std::string target_, RenderedRun run_, RunOptions options_);
    StagedRun(const StagedRun&) = delete;
    StagedRun& operator=(const StagedRun&) = delete;
};

/// The metrics a completed run ends by saying (RunOutcome::headline), in this order.
inline constexpr const char* k_headline_metrics[] = {"avg_step_time", "compute_comm_overlap", "communication_fraction", "mfu"};

/// What run_workload / execute_rendered_run did: everything a caller (cli, sweep, reproduce)
/// needs, so that none of them reads the progress text back.
struct RunOutcome {
    std::string card;              ///< the card's name
    std::string target;            ///< the cluster profile it ran on
    std::string run_id;            ///< empty when nothing ran (dry run, invalid input)
    fs::path run_dir;              ///< absolute; empty when nothing ran
    std::optional<RunState> state; ///< the final state; empty when nothing ran
    std::string reason;            ///< why it did not complete, from run.json
    std::string failure_class;     ///< run.json's failure_class: failed, cancelled or timeout only
    std::string failure_evidence;  ///< what decided failure_class
    int exit_code = 0;             ///< 0 completed (or a dry run), 1 failed/timed out/packing failed, 2 invalid input, 130 cancelled
    std::vector<fs::path> traces;  ///< absolute paths of the collected traces
    /// A completed run's headline metrics (metrics.json), by name: avg_step_time in seconds, the
    /// fractions in percent; what `run` ends by saying.
    std::vector<std::pair<std::string, double>> headline;
    std::optional<PackedBundle> bundle;
    std::string pack_error;            ///< packing failed: why (the run directory is intact)
    std::vector<std::string> warnings; ///< also streamed as progress; shown even when progress is not
    std::optional<DryRunPreview> dry_run;
    bool invalid_input = false;        ///< the card or plan had errors (see diagnostics); nothing ran
    std::string diagnostics;           ///< the card's and plan's errors and warnings, formatted ("file:line:col: ...")
    std::shared_ptr<StagedRun> staged; ///< with RunOptions::stage_only: the run, not executed yet
    /// The Slurm job left running unfollowed (run --detach, SIGHUP): `state` is submitted or
    /// running and `ccl-harness attach <run_dir>` takes it to the end. Empty otherwise.
    std::string detached_job;
    /// run --reuse found an earlier run rendered alike with a verified bundle: that run is the
    /// result (run_id, run_dir, bundle, headline are its), and nothing ran.
    bool reused = false;
};

/// Runs the card to a final state, streaming progress and rank output to `out`. Input that
/// cannot run at all (a missing card or cluster, an unresolvable ref) throws; a card with
/// errors is reported on stderr and returned with `invalid_input` (exit code 2).
RunOutcome run_workload(const RunOptions& options, std::ostream& out);

/// The second half of run_workload, also used by reproduce: a new run directory for an
/// already-rendered run, execution, traces, provenance (naming the bundle it `reproduces`, if
/// any) and, when it completes, its bundle.
RunOutcome execute_rendered_run(const WorkloadCard& card, const ClusterProfile& cluster, const std::string& target,
                                const RenderedRun& run, const RunOptions& options, const std::optional<ReproducedBundle>& reproduces,
                                std::ostream& out);

/// The last half of execute_rendered_run, for a staged run whose job an executor (or a Slurm
/// array) took to a final state or left `running`/`submitted` to be judged by its traces: logs
/// gathered, traces collected, metrics, provenance and, when it completed, the bundle.
RunOutcome finish_staged_run(StagedRun& staged, std::ostream& out);

/// What a run left to Slurm unfinished is: its id, directory, state and job (exit code 0).
RunOutcome detached_run_outcome(const StagedRun& staged);

/// The outcome as `run --json` prints it (keys documented in `run --help`).
Json run_outcome_to_json(const RunOutcome& outcome);

/// The human summary: `run <id> <state>[: reason]`, run directory, traces, bundle; or the
/// dry run's preview.
std::string format_run_outcome(const RunOutcome& outcome);

} // namespace harness
