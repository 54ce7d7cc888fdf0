#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "cli/store_hook.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "workflows/run_repeat.hpp"
#include "workflows/run_workload.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

constexpr int k_max_repeat = 100;

/// One run to its end, recorded in the store; what `run` prints of it is left to the caller.
RunOutcome run_once(const RunOptions& options, const ReportFlags& flags, bool quiet) {
    RunOutcome outcome = run_workload(options, progress_stream(flags.json, quiet));
    if (outcome.invalid_input) {
        return outcome;
    }
    print_dropped_warnings(outcome.warnings, quiet);
    if (!outcome.run_dir.empty()) {
        record_runs({outcome.run_dir});
    }
    if (!outcome.pack_error.empty()) {
        std::cerr << fmt::format("ccl-harness: error: packing failed: {}\n  the run directory is intact; retry with: "
                                 "ccl-harness pack {}\n",
                                 outcome.pack_error, outcome.run_dir.string());
    }
    return outcome;
}

int run_run(RunOptions options, const ReportFlags& flags, int repeat) {
    const bool quiet = quiet_wanted();
    options.diagnostics = &std::cerr; // before the run starts, not after it ends
    options.home = harness_home();
    if (repeat < 1 || repeat > k_max_repeat) {
        throw input_error(fmt::format("--repeat {}: expected 1 to {} runs", repeat, k_max_repeat));
    }
    if (repeat > 1 && (options.reuse || options.detach || options.dry_run)) {
        throw input_error(fmt::format("--repeat {} with {}: repeats are new runs, each followed to its end", repeat,
                                      options.reuse    ? "--reuse"
                                      : options.detach ? "--detach"
                                                       : "--dry-run"));
    }
    if (repeat == 1) {
        const RunOutcome outcome = run_once(options, flags, quiet);
        if (!outcome.invalid_input) {
            print_outcome(flags.json, quiet, format_run_outcome(outcome), run_outcome_to_json(outcome));
        }
        return outcome.exit_code;
    }
    std::vector<RunOutcome> runs;
    for (int i = 0; i < repeat; ++i) {
        progress_stream(flags.json, quiet) << fmt::format("repeat {} of {}\n", i + 1, repeat);
        RunOutcome outcome = run_once(options, flags, quiet);
        if (outcome.invalid_input) {
            return outcome.exit_code;
        }
        if (!flags.json && !quiet) {
            std::cout << format_run_outcome(outcome);
        }
        const bool interrupted = outcome.exit_code == k_exit_interrupted;
        runs.push_back(std::move(outcome));
        if (interrupted) {
            break; // Ctrl-C stops the repeats, not only the run
        }
    }
    const RepeatOutcome summary = summarize_repeats(std::move(runs));
    print_outcome(flags.json, quiet, format_repeat_summary(summary), repeat_outcome_to_json(summary));
    return summary.exit_code;
}

} // namespace

void add_run(CLI::App& sub, Action& action) {
    auto options = std::make_shared<RunOptions>();
    auto flags = std::make_shared<ReportFlags>();
    auto repeat = std::make_shared<int>(1);
    sub.add_option("card", options->card, "workload card")->required();
    add_cluster_option(sub, options->cluster, "launch.cluster, else from xpu_spec.model");
    auto set_paths = std::make_shared<OverridePaths>();
    add_override_options(sub, *set_paths, "--set", options->overrides, "override a card field: PATH=VALUE (repeatable)");
    sub.add_option("--name", options->name,
                   "name the run, its job and its bundle NAME rather than after the card (letters, digits, ._- ; "
                   "default: the card file's name, or its directory's for a card.yaml)");
    auto* results = add_results_option(sub, options->results, "where run directories go");
    sub.add_flag("--dry-run", options->dry_run, "render and print what would be submitted and where; run nothing");
    sub.add_option("--out", options->dry_run_out, "with --dry-run: also write the rendered files to this directory");
    sub.add_flag("--teardown", options->teardown, "TPU: delete the queued resource when the run ends (the default)");
    sub.add_flag_callback(
        "--keep", [options] { options->teardown = false; },
        "TPU: keep the queued resource when the run ends (it goes on billing; a later run reuses it)");
    sub.add_flag("--requeue", options->requeue,
                 "Slurm: let the scheduler requeue the job when a node fails (default: the run ends with the scheduler's reason)");
    sub.add_flag("--detach", options->detach,
                 "Slurm: return once the job is submitted; `ccl-harness attach RUN_DIR` follows it to the end later");
    sub.add_option("--repeat", *repeat,
                   "run the card N times (each its own run directory and bundle) and end with the spread of the headline "
                   "metrics over the runs: mean, stdev, min, max (1 to 100)");
    sub.add_flag("--reuse", options->reuse,
                 "do not run again what already completed: an earlier run in the results store rendered byte for byte "
                 "alike (same effective card, cluster, image, pinned source commit and templates), whose bundle verifies, "
                 "is the result");
    sub.add_flag("!--no-pack", options->pack,
                 "do not pack a bundle when the run completes (pack it later with `ccl-harness pack DIR`)");
    sub.add_option("--grace", options->grace_seconds,
                   "seconds between SIGTERM and SIGKILL when stopping ranks (default 5, at most 3600)");
    sub.add_option("--secret", options->secret_names,
                   "NAME: the value of environment variable NAME is a secret, scrubbed from everything the run writes and "
                   "prints, although its name does not say so (repeatable)");
    sub.add_option("--git-cache", options->git_cache,
                   "where clones of launch.source repos are kept (default: $XDG_CACHE_HOME/ccl-harness/git)");
    sub.footer(
        "The card is checked as with validate --strict first. The run directory\n"
        "results/<name>-<UTC time>-<hash>/ holds card.yaml, plan.json, rendered/, logs/, traces/ and\n"
        "run.json (state: rendered -> submitted -> running -> completed | failed | cancelled | timeout), and\n"
        "provenance.json. A completed run is packed into results/<run-id>.tar.zst (see `pack --help`).\n"
        "Secrets: the values of environment variables whose names hold TOKEN, KEY, SECRET, PASSWORD,\n"
        "CREDENTIAL or AUTH, of such entries of launch.env, and of each --secret NAME are replaced by\n"
        "[REDACTED] in the ranks' output as it streams (terminal and logs) and in every record written;\n"
        "a secret launch.env value is handed to the job in its environment, never written into a file.\n"
        "launch.source.ref is resolved to a commit SHA (cloned or fetched into the git cache) before\n"
        "anything is rendered: the scripts check out that SHA.\n"
        "Slurm: --detach, or a hangup (SIGHUP: the SSH session dropped), leaves the job running and the run\n"
        "submitted or running; `ccl-harness attach RUN_DIR` takes it to the end (--json adds detached_job, attach).\n"
        "Every run is recorded in the per-user results store (see `results --help`; CCL_HARNESS_STORE=none turns it off).\n"
        "--repeat N runs it N times and ends with each headline metric's mean, stdev, min and max over the\n"
        "completed runs (--json: {runs: [the keys below], completed, spread {METRIC: {runs, mean, stdev, min, max}},\n"
        "exit_code}, the first failed run's exit code).\n"
        "--reuse looks there first: a completed run whose rendered files are the same bytes (render key) and whose\n"
        "bundle verifies is returned as this run's result, and nothing runs (--json reused: true).\n"
        "Exit status: 0 completed or detached, 1 failed or timed out, 2 invalid input, 130 interrupted (Ctrl-C).\n"
        "A failed, cancelled or timed-out run gets one failure class (out_of_memory_device, collective_timeout,\n"
        "time_limit, ..., unknown) and the evidence that decided it, in run.json, the summary and status:\n"
        "docs/failures.md lists the classes and the log signatures, each cited from its framework's source.\n"
        "--json keys: run_id, run_dir, card, target, state, reason, failure_class | null, failure_evidence | null, exit_code, reused, "
        "traces, "
        "bundle {path, sha256, files} | null, "
        "pack_error, warnings, dry_run, preview {submission, rendered, results, nodes, ranks_per_node, steps, trace_kinds, commands, "
        "billing, commands_problem, preflight, bill, image, sbatch} | null; on Slurm (else null): bill {account, qos, partition, "
        "constraint, nodes, gpus_per_node, gpus, time_limit, time_limit_hours, node_hours (nodes x time limit: the most the job "
        "can charge), charge_factor, allocation_hours (node_hours x charge_factor; null when the profile's slurm.charge_factors "
        "lacks the QOS), charge_factor_source}, image {runtime, tag, base, migrate, present (yes|no|unknown), present_note, "
        "commands, problem} | null, sbatch {command, cwd, directives}.\n"
        "Slurm --dry-run shows the bill, the image build and migrate `run` does first, and the sbatch line with the\n"
        "rendered #SBATCH directives; it asks the container runtime only whether the image exists.\n"
        "Examples:\n"
        "  ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml\n"
        "  ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-local\n"
        "  ccl-harness run card.yaml --dry-run\n"
        "  ccl-harness run workloads/qwen3-4b-torchtitan-perlmutter/qwen3-4b-torchtitan-perlmutter.yaml --dry-run "
        "--set launch.account=m1234");
    add_report_flags(sub, *flags);
    sub.callback([options, flags, set_paths, results, repeat, &action] {
        action = [options, flags, set_paths, results, repeat] {
            set_paths->check(options->overrides);
            apply_results_default(results, options->results);
            return run_run(*options, *flags, *repeat);
        };
    });
}

} // namespace harness::cli
