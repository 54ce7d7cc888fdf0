#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "cli/store_hook.hpp"
#include "util/home.hpp"
#include "workflows/sweep.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

int run_sweep_command(SweepOptions options, const ReportFlags& flags) {
    const bool quiet = quiet_wanted();
    options.home = harness_home();
    const SweepOutcome outcome = run_sweep(options, progress_stream(flags.json, quiet));
    std::vector<fs::path> run_dirs;
    for (const SweepPoint& point : outcome.points) {
        if (!point.run_dir.empty()) {
            run_dirs.emplace_back(point.run_dir);
        }
    }
    record_runs(run_dirs);
    print_outcome(flags.json, quiet, format_sweep_outcome(outcome), sweep_outcome_to_json(outcome));
    return outcome.exit_code;
}

} // namespace

void add_sweep(CLI::App& sub, Action& action) {
    auto options = std::make_shared<SweepOptions>();
    auto flags = std::make_shared<ReportFlags>();
    sub.add_option("card", options->card, "workload card");
    auto vary_paths = std::make_shared<OverridePaths>();
    add_override_options(sub, *vary_paths, "--vary", options->vary,
                         "a card field and its values: PATH=V1,V2,... (repeatable; values cannot contain ',')");
    sub.add_flag("--zip", options->zip, "pair the i-th values of every --vary instead of crossing them (lists must be equally long)");
    add_cluster_option(sub, options->cluster, "each point's launch.cluster, else from xpu_spec.model");
    auto* results = add_results_option(sub, options->results, "where the sweep directory goes");
    sub.add_flag("--dry-run", options->dry_run, "expand and check the points; run nothing, write nothing");
    sub.add_option("--resume", options->resume, "finish a sweep: run again every point not completed or skipped");
    sub.add_option("--grace", options->grace_seconds, "seconds between SIGTERM and SIGKILL when stopping ranks (default 5)");
    sub.add_option("--secret", options->secret_names,
                   "NAME: the value of environment variable NAME is a secret, scrubbed from everything the run writes and "
                   "prints, although its name does not say so (repeatable)");
    sub.add_option("--git-cache", options->git_cache, "where clones of launch.source repos are kept");
    sub.add_flag("--reuse", options->reuse,
                 "a point rendered byte for byte as an earlier completed run (in the results store) with a verified bundle "
                 "is not run again: that run is its result (as run --reuse)");
    sub.add_option(
           "--max-points", options->max_points,
           fmt::format("refuse a sweep of more points than this (default {}); counted before any is built", k_sweep_max_points))
        ->check(CLI::PositiveNumber);
    sub.footer("Each point is the card with --set PATH=VALUE overrides (the cross product of the --vary lists,\n"
               "or with --zip their i-th values). Every point is checked as with validate --strict first;\n"
               "points that fail are recorded as skipped with the reason and never run. The others run one\n"
               "after another, each as `ccl-harness run` would (run directory and bundle inside the sweep\n"
               "directory results/sweep-<card>-<UTC time>-<hash>/, whose sweep.json records every point's\n"
               "state, run directory, bundle and exit code). A failed point never stops the others.\n"
               "On Slurm every point is rendered first, then all go as one job array (sbatch --array=0-N%K,\n"
               "K from --max-parallel) whose task i runs point i's rendered launch script; points whose\n"
               "#SBATCH options differ (nodes, time limit, account...) go to one array per set of options.\n"
               "The tasks are followed together (one scontrol call per array per poll) and each point is\n"
               "finished as a run when its task ends; sweep.json records each task (job_id, slurm_state).\n"
               "--resume submits a new array for the points not completed. Local points run one after another.\n"
               "--reuse looks each point up in the results store first, as `run --reuse` does: a point reused is\n"
               "completed at once with the earlier run's directory and bundle (reused: true in sweep.json); on\n"
               "Slurm it never joins the job array. Points with nothing alike run as usual.\n"
               "Exit status: 0 every runnable point completed, 1 some failed, 2 invalid input or no point\n"
               "passes the check, 130 interrupted (Ctrl-C; the current point is recorded as cancelled).\n"
               "--json keys: sweep_id, sweep_dir, card, dry_run, interrupted, exit_code, points [{overrides, state, reason, run_dir, "
               "bundle, exit_code, job_id, slurm_state, reused}] (as in sweep.json); with --dry-run of a new sweep also points[].bill "
               "(as `run --help` documents preview.bill; null for a skipped or non-Slurm point) and bill_total {node_hours, "
               "allocation_hours (null when a point's charge factor is unknown)} | null (no point on Slurm).\n"
               "Slurm --dry-run: each point's node-hours (nodes x time limit: the most it can charge) and their sum.\n"
               "Examples:\n"
               "  ccl-harness sweep workloads/tiny-ddp/tiny-ddp.yaml --vary launch.steps=10,20 --vary workload.data.batch_size=8,16\n"
               "  ccl-harness sweep card.yaml --zip --vary workload.data.seq_len=1024,2048 --vary workload.data.batch_size=16,8\n"
               "  ccl-harness sweep --resume results/sweep-tiny-ddp-20261123T131500Z-a1b2c3");
    sub.add_option("--max-parallel", options->max_parallel,
                   "Slurm: run at most K points at once (the job array's --array=...%K; default: no limit)")
        ->check(CLI::PositiveNumber);
    add_report_flags(sub, *flags);
    sub.callback([options, flags, vary_paths, results, &action] {
        action = [options, flags, vary_paths, results] {
            apply_results_default(results, options->results);
            // Before any point runs: a misspelt path would run identical points.
            vary_paths->check(options->vary);
            return run_sweep_command(*options, *flags);
        };
    });
}

} // namespace harness::cli
