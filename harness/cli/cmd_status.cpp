#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "cli/run_query_options.hpp"
#include "util/error.hpp"
#include "workflows/run_status.hpp"

#include <ctime>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct StatusCommandOptions {
    fs::path results = "results";
    RunQuery query;
    bool json = false;
};

int run_status(const StatusCommandOptions& options) {
    // A bad filter is a usage error before anything is read.
    const ParsedRunQuery query = parse_run_query(options.query, std::time(nullptr));
    const ResultsStatus all = scan_results(options.results);
    const ResultsStatus status = filter_status(all, query);
    const std::string matched = describe_query(options.query, status.runs.size(), all.runs.size());
    if (options.json) {
        Json json = status_to_json(status);
        json["total_runs"] = static_cast<long long>(all.runs.size());
        std::cout << json.dump();
    } else {
        std::cout << format_status(status) << (matched.empty() ? "" : matched + "\n");
    }
    return k_exit_ok;
}

} // namespace

void add_status(CLI::App& sub, Action& action) {
    auto options = std::make_shared<StatusCommandOptions>();
    auto* results = sub.add_option("results", options->results,
                                   "results directory, or one sweep directory (default: results: in your defaults.yaml, "
                                   "else ./results)");
    add_run_query_options(sub, options->query, true);
    sub.add_flag("--json", options->json, "print one JSON object {runs: [...], sweeps: [...], total_runs} on stdout");
    sub.footer("Lists the run directories (and those inside sweep directories) with state, target, start,\n"
               "duration, headline metrics from metrics.json (avg_step_time, compute_comm_overlap) and the\n"
               "bundle <run-id>.tar.zst when there is one; then each sweep with its points counted by state.\n"
               "A run of a sweep shows its point's overrides (point: PATH=VALUE ...). Given a sweep directory\n"
               "(sweep.json), lists that sweep alone.\n"
               "A failed, cancelled or timed-out run shows its failure class and the evidence that decided it\n"
               "(docs/failures.md) on a line below its row.\n"
               "Reads only; a record it cannot read is listed with the reason.\n"
               "--json keys: runs [{id, dir, sweep, state, card, target, start, end, duration_s, bundle, avg_step_time,\n"
               "compute_comm_overlap, problem, failure_class | null, failure_evidence | null, overrides}], sweeps [{id, dir,\n"
               "card, points, states, problem}], total_runs.\n"
               "Filters (--state, --card, --target, --since, --until, --where) keep the runs that match all of them, and\n"
               "the sweeps with a matching run; the last line says how many of how many matched (total_runs in --json).\n"
               "--where reads each run's effective card and run.json by the results store's rules (docs/results.md),\n"
               "from the directories themselves: no store needs to hold them.\n"
               "`compare` takes the same filters.\n"
               "Exit status: 0, 2 when RESULTS_DIR is not a directory or a filter's value is not valid.\n"
               "Examples:\n"
               "  ccl-harness status\n"
               "  ccl-harness status /scratch/results --json\n"
               "  ccl-harness status --state failed,timeout --since 2d\n"
               "  ccl-harness status --card 'qwen3-*' --target perlmutter\n"
               "  ccl-harness status --where Model-executor.framework.name=vllm --where workload.hardware.xpu_spec.total_count=4\n"
               "  ccl-harness status results/tiny-ddp-sweep-20261123T021839Z");
    sub.callback([options, results, &action] {
        action = [options, results] {
            apply_results_default(results, options->results);
            return run_status(*options);
        };
    });
}

} // namespace harness::cli
