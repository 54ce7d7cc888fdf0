#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "cli/store_hook.hpp"
#include "run/slurm_client.hpp"
#include "util/home.hpp"
#include "workflows/attach_run.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

int run_attach(AttachOptions options, const ReportFlags& flags) {
    const bool quiet = quiet_wanted();
    options.home = harness_home();
    const AttachOutcome outcome = attach_run(options, progress_stream(flags.json, quiet));
    print_dropped_warnings(outcome.run.warnings, quiet);
    if (!outcome.run.run_dir.empty()) {
        record_runs({outcome.run.run_dir});
    }
    if (!outcome.run.pack_error.empty()) {
        std::cerr << fmt::format("ccl-harness: error: packing failed: {}\n  the run directory is intact; retry with: "
                                 "ccl-harness pack {}\n",
                                 outcome.run.pack_error, outcome.run.run_dir.string());
    }
    print_outcome(flags.json, quiet, format_attach_outcome(outcome), attach_outcome_to_json(outcome));
    return outcome.run.exit_code;
}

} // namespace

void add_attach(CLI::App& sub, Action& action) {
    auto options = std::make_shared<AttachOptions>();
    auto flags = std::make_shared<ReportFlags>();
    sub.add_option("run_dir", options->run_dir, "the run directory of a Slurm run (results/<run-id>)")->required();
    sub.add_flag("!--no-pack", options->pack,
                 "do not pack a bundle when the run completes (pack it later with `ccl-harness pack DIR`)");
    sub.add_option("--secret", options->secret_names,
                   "NAME: the value of environment variable NAME is a secret, as given to `run --secret` (repeatable)");
    sub.add_flag("--force", options->force,
                 "follow the run although run.json names a harness on another host (which cannot be checked from here)");
    sub.footer(
        fmt::format("Follows the Slurm job of a run that `run --detach` left, whose SSH session dropped (SIGHUP) or\n"
                    "whose harness died, to its end, then does what `run` does after the job: logs, traces, metrics,\n"
                    "provenance.json and, when it completed, the bundle. The job is found with scontrol, else in\n"
                    "sacct when it ended long ago; a job that ended meanwhile loses nothing. The plan is made again\n"
                    "from the run's effective card and the profile named by run.json's target; rendered/ stays what\n"
                    "ran. A run that had already ended is reported as it is and left unchanged. One attach at a\n"
                    "time: another one, or a live harness following the run, is refused.\n"
                    "SIGHUP detaches again (the job goes on); Ctrl-C or SIGTERM cancels the job, as in `run`, and\n"
                    "waits at most {:.0f} s for it to end; Ctrl-C again stops waiting (exit 130) and leaves the run\n"
                    "open with its cancel pending: a later attach sends scancel again and finishes the record.\n"
                    "The run directory is input: a symbolic link among its entries, or a run.json field that is not\n"
                    "its declared type (a job id that is not a Slurm job id...), is refused (exit 2) before any\n"
                    "Slurm tool runs.\n"
                    "Exit status: as `run` (0 completed or detached, 1 failed, timed out or refused, 2 not a run\n"
                    "directory or one refused as input, 130 interrupted); a run that had already ended: 0 completed, 1 otherwise.\n"
                    "--json keys: run --json's (failure_class and failure_evidence included: docs/failures.md), plus job\n"
                    "(the Slurm job id) and already_final.\n"
                    "Examples:\n"
                    "  ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-local --detach\n"
                    "  ccl-harness attach results/tiny-ddp-20261124T121500Z-0a1b2c",
                    k_cancel_wait_seconds));
    add_report_flags(sub, *flags);
    sub.callback([options, flags, &action] { action = [options, flags] { return run_attach(*options, *flags); }; });
}

} // namespace harness::cli
