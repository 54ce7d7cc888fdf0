#include "bundle/bundle_metrics.hpp"
#include "cli/commands.hpp"
#include "metrics/metrics.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct MetricsCommandOptions {
    std::string path;
    metrics::MetricsOptions metrics;
    bool json = false;
};

int run_metrics(const MetricsCommandOptions& options) {
    // Ctrl-C becomes exit 130 (and a removed scratch directory), not a half-printed report.
    install_interrupt_handlers();
    const fs::path path = options.path;
    const metrics::MetricsReport report = metrics_of_input(path, options.metrics);
    // Kernel names and paths come from the traces: escaped, whatever they hold.
    std::cout << (options.json ? metrics::metrics_to_json(report).dump() : terminal_text(metrics::metrics_table(report), true));
    return k_exit_ok;
}

} // namespace

void add_metrics(CLI::App& sub, Action& action) {
    auto options = std::make_shared<MetricsCommandOptions>();
    sub.add_option(
           "path", options->path,
           "a trace file (.json or .json.gz), a directory of rank traces with an optional card (*.yaml) beside them, "
           "a run directory (traces/ + card.yaml), or a bundle (<name>.tar.zst, unpacked safely to a scratch directory, or <name>/)")
        ->required();
    sub.add_option("--metric", options->metrics.metrics,
                   "compute only this metric (repeatable): " + join(metrics::metric_names(), ", "));
    sub.add_flag("--reference", options->metrics.reference,
                 "reproduce the CCL-Bench Python tools bug for bug (their per-metric name patterns and step rules)");
    sub.add_flag("--json", options->json, "print one JSON object on stdout");
    sub.add_option("--threads", options->metrics.threads, "ranks read at once (default: one per core)");
    sub.footer("Both modes are always computed; where they disagree the report says so and names the kernels\n"
               "responsible. A metric that does not apply says why instead of printing a number.\n"
               "Over a partial set of ranks (the card's metric_source.ranks_present, from ingest --ranks) the\n"
               "default mode computes what the traced ranks support, each such metric noting \"partial: ...\", and\n"
               "says n/a with the reason where every rank is needed (straggler); --reference reads what is there.\n"
               "JSON keys: path, layout, card, mode, partial (null or \"ranks 0 of 4\"), ranks [{rank, file, format,\n"
               "compressed, basis, bytes, events, kernels, host_ops, xla_ops, steps, step_source, in_default,\n"
               "in_reference}], ranks_held_at_once, metrics {NAME: {value, unit, basis, why, per_rank, by_collective,\n"
               "notes}}, disagreements [{metric, default, reference, pattern, kernels, more_kernels}], notes.\n"
               "Exit status: 0 when the metrics were computed, 2 for bad input (no traces, a malformed trace\n"
               "with its byte offset, an unknown metric, an unsafe archive).\n"
               "Examples:\n"
               "  ccl-harness metrics results/tiny-ddp-20250101T000000Z-abc123\n"
               "  ccl-harness metrics --reference --json traces/\n"
               "  ccl-harness metrics --metric compute_comm_overlap kineto_trace_0.json");
    sub.callback([options, &action] { action = [options] { return run_metrics(*options); }; });
}

} // namespace harness::cli
