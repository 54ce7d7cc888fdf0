#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "util/error.hpp"
#include "workflows/run_status.hpp"

#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct StatusCommandOptions {
    fs::path results = "results";
    bool json = false;
};

int run_status(const StatusCommandOptions& options) {
    const ResultsStatus status = scan_results(options.results);
    std::cout << (options.json ? status_to_json(status).dump() : format_status(status));
    return k_exit_ok;
}

} // namespace

void add_status(CLI::App& sub, Action& action) {
    auto options = std::make_shared<StatusCommandOptions>();
    auto* results = sub.add_option("results", options->results,
                                   "results directory, or one sweep directory (default: results: in your defaults.yaml, "
                                   "else ./results)");
    sub.add_flag("--json", options->json, "print one JSON object {runs: [...], sweeps: [...]} on stdout");
    sub.footer("Lists the run directories (and those inside sweep directories) with state, target, start,\n"
               "duration, headline metrics from metrics.json (avg_step_time, compute_comm_overlap) and the\n"
               "bundle <run-id>.tar.zst when there is one; then each sweep with its points counted by state.\n"
               "A run of a sweep shows its point's overrides (point: PATH=VALUE ...). Given a sweep directory\n"
               "(sweep.json), lists that sweep alone.\n"
               "Reads only; a record it cannot read is listed with the reason.\n"
               "Exit status: 0, 2 when RESULTS_DIR is not a directory.\n"
               "Examples:\n"
               "  ccl-harness status\n"
               "  ccl-harness status /scratch/results --json\n"
               "  ccl-harness status results/tiny-ddp-sweep-20261123T021839Z");
    sub.callback([options, results, &action] {
        action = [options, results] {
            apply_results_default(results, options->results);
            return run_status(*options);
        };
    });
}

} // namespace harness::cli
