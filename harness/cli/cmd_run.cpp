#include "cli/commands.hpp"
#include "run.hpp"

#include <iostream>
#include <memory>

namespace harness::cli {

void add_run(CLI::App& sub, Action& action) {
    auto options = std::make_shared<RunOptions>();
    sub.add_option("card", options->card, "workload card")->required();
    sub.add_option("--cluster", options->cluster, "target cluster profile (default: launch.cluster, else from xpu_spec.model)");
    sub.add_option("--set", options->overrides, "override a card field: PATH=VALUE (repeatable)");
    sub.add_option("--results", options->results, "where run directories go (default: results)");
    sub.add_flag("--dry-run", options->dry_run, "render and print what would be submitted and where; run nothing");
    sub.add_option("--out", options->dry_run_out, "with --dry-run: also write the rendered files to this directory");
    sub.add_flag("--teardown", options->teardown, "TPU: delete the queued resource when the run ends");
    sub.add_flag("!--no-pack", options->pack, "do not pack a bundle when the run completes (pack it later with `ccl-harness pack DIR`)");
    sub.add_option("--grace", options->grace_seconds, "seconds between SIGTERM and SIGKILL when stopping ranks (default 5)");
    sub.add_option("--git-cache", options->git_cache,
                   "where clones of launch.source repos are kept (default: $XDG_CACHE_HOME/ccl-harness/git)");
    sub.footer("The card is checked as with validate --strict first. The run directory\n"
               "results/<card>-<UTC time>-<hash>/ holds card.yaml, plan.json, rendered/, logs/, traces/ and\n"
               "run.json (state: rendered -> submitted -> running -> completed | failed | cancelled | timeout), and\n"
               "provenance.json. A completed run is packed into results/<run-id>.tar.zst (see `pack --help`).\n"
               "launch.source.ref is resolved to a commit SHA (cloned or fetched into the git cache) before\n"
               "anything is rendered: the scripts check out that SHA.\n"
               "Exit status: 0 completed, 1 failed or timed out, 2 invalid input, 130 interrupted (Ctrl-C).\n"
               "Examples:\n"
               "  ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml\n"
               "  ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-local\n"
               "  ccl-harness run card.yaml --dry-run");
    sub.callback([options, &action] { action = [options] { return run_workload(*options, std::cout); }; });
}

} // namespace harness::cli
