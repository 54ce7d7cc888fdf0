#include "cli/commands.hpp"
#include "sweep.hpp"

#include <iostream>
#include <memory>

namespace harness::cli {

void add_sweep(CLI::App& sub, Action& action) {
    auto options = std::make_shared<SweepOptions>();
    sub.add_option("card", options->card, "workload card");
    sub.add_option("--vary", options->vary, "a card field and its values: PATH=V1,V2,... (repeatable; values cannot contain ',')");
    sub.add_flag("--zip", options->zip, "pair the i-th values of every --vary instead of crossing them (lists must be equally long)");
    sub.add_option("--cluster", options->cluster, "target cluster profile for every point (default: each point's launch.cluster)");
    sub.add_option("--results", options->results, "where the sweep directory goes (default: results)");
    sub.add_flag("--dry-run", options->dry_run, "expand and check the points; run nothing, write nothing");
    sub.add_option("--resume", options->resume, "finish a sweep: run again every point not completed or skipped");
    sub.add_option("--grace", options->grace_seconds, "seconds between SIGTERM and SIGKILL when stopping ranks (default 5)");
    sub.add_option("--git-cache", options->git_cache, "where clones of launch.source repos are kept");
    sub.footer("Each point is the card with --set PATH=VALUE overrides (the cross product of the --vary lists,\n"
               "or with --zip their i-th values). Every point is checked as with validate --strict first;\n"
               "points that fail are recorded as skipped with the reason and never run. The others run one\n"
               "after another, each as `ccl-harness run` would (run directory and bundle inside the sweep\n"
               "directory results/sweep-<card>-<UTC time>-<hash>/, whose sweep.json records every point's\n"
               "state, run directory, bundle and exit code). A failed point never stops the others.\n"
               "On Slurm the points are submitted as independent jobs one after another, not as a job array.\n"
               "Exit status: 0 every runnable point completed, 1 some failed, 2 invalid input or no point\n"
               "passes the check, 130 interrupted (Ctrl-C; the current point is recorded as cancelled).\n"
               "Examples:\n"
               "  ccl-harness sweep workloads/tiny-ddp/tiny-ddp.yaml --vary launch.steps=10,20 --vary workload.data.batch_size=8,16\n"
               "  ccl-harness sweep card.yaml --zip --vary workload.data.seq_len=1024,2048 --vary workload.data.batch_size=16,8\n"
               "  ccl-harness sweep --resume results/sweep-tiny-ddp-20261123T131500Z-a1b2c3");
    sub.callback([options, &action] { action = [options] { return run_sweep(*options, std::cout); }; });
}

} // namespace harness::cli
