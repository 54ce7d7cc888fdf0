#include "cli/commands.hpp"
#include "cli/run_query_options.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "workflows/compare.hpp"
#include "workflows/compare_html.hpp"
#include "workflows/references.hpp"

#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct CompareCommandOptions {
    std::vector<std::string> inputs;
    std::string html;
    std::string against;
    RunQuery query;
    bool json = false;
};

int run_compare(const CompareCommandOptions& options) {
    // Ctrl-C unwinds through the scratch directories packed bundles are unpacked into.
    install_interrupt_handlers();
    const std::vector<fs::path> inputs(options.inputs.begin(), options.inputs.end());
    CompareOptions compare_options;
    compare_options.query = parse_run_query(options.query, std::time(nullptr));
    // The references are read first: a mistake in them is found before any bundle is unpacked.
    std::optional<std::vector<WorkloadReference>> references;
    if (!options.against.empty()) {
        references = load_references(options.against);
        compare_options.min_runs = 1;
    }
    const Comparison comparison = compare_runs(inputs, compare_options);
    std::optional<ReferenceReport> checked;
    if (references) {
        checked = check_references(*references, comparison.runs);
    }
    // The page is written only once every input has loaded, so bad input never leaves one behind.
    if (!options.html.empty()) {
        write_file_atomic(options.html, comparison_html(comparison));
    }
    // Card values and kernel names come from the inputs: escaped, whatever they hold.
    if (options.json) {
        Json json = comparison_to_json(comparison);
        json["references"] = checked ? reference_report_to_json(*checked) : Json();
        std::cout << json.dump();
    } else {
        std::cout << terminal_text(comparison_table(comparison), true);
        if (checked) {
            std::cout << terminal_text(reference_report_table(*checked), true);
        }
    }
    if (!options.html.empty()) {
        (options.json ? std::cerr : std::cout) << fmt::format("  page: {}\n", options.html);
    }
    return checked && checked->failed() ? k_exit_failure : k_exit_ok;
}

} // namespace

void add_compare(CLI::App& sub, Action& action) {
    auto options = std::make_shared<CompareCommandOptions>();
    sub.add_option("inputs", options->inputs,
                   "two or more runs or bundles: <name>.tar.zst (unpacked safely to a scratch directory), an unpacked "
                   "bundle <name>/, a run directory (card.yaml, run.json, traces/), a sweep directory (sweep.json: "
                   "each point with a run directory), or a results directory (its completed runs and sweeps)")
        ->required();
    sub.add_option("--html", options->html,
                   "also write one self-contained page (inline CSS and SVG, no script, no network) to this file");
    sub.add_option("--against", options->against,
                   "references.yaml: hold each run to the expected values of its workload (one run is enough); exit 1 on "
                   "a regression, a missing metric, or when no run is named by any reference")
        ->check(CLI::ExistingFile);
    add_run_query_options(sub, options->query, false);
    sub.add_flag("--json", options->json, "print one JSON object on stdout instead of the table");
    sub.footer("Metrics come from the input's metrics.json when it has one, else are computed from its traces\n"
               "(default mode, as `ccl-harness metrics`); per-rank and per-step times and communication by collective\n"
               "are read from the traces. Runs are labelled by the card values that differ (bs=16 seq=64) and ranked\n"
               "by throughput per device, highest first: batch_size x seq_len / avg_step_time / xpu_spec.total_count\n"
               "tokens/s/device (samples/s/device without seq_len; batch_size is the global batch), and by\n"
               "avg_step_time, fastest first (with a note when the batch sizes differ). n/a metrics are listed\n"
               "once per metric and reason.\n"
               "Where a step's time goes, per step: overlapped = total_communication_time x compute_comm_overlap / 100,\n"
               "exposed = total_communication_time - overlapped, compute = avg_step_time - exposed.\n"
               "Card differences: every card field (dotted path, list items by index) whose value is not the same in\n"
               "every input; trace_url is not compared (it names the bundle itself).\n"
               "A results directory stands for its completed runs and its sweeps' points; --card, --target, --since,\n"
               "--until and --where narrow those as they narrow `status` (a run or bundle named on its own is always\n"
               "compared);\n"
               "how many they left out is said (not_matching in --json).\n"
               "A bundle whose files do not match its manifest is refused (run `ccl-harness verify` on it).\n"
               "--against references.yaml holds each run to its workload's references (docs/references.md):\n"
               "  references:\n"
               "    - workload: tiny-ddp              # the card name (a glob); runs <workload>-<time>-<hash>\n"
               "      where: {workload.data.batch_size: 16}   # optional card values the run must have\n"
               "      metrics:\n"
               "        avg_step_time: {value: 0.03, tolerance: 20%}   # or an amount in the unit\n"
               "        mfu: {min: 10}\n"
               "A value past its tolerance the worse way (by the metric's direction) is a regression; the better\n"
               "way is said and passes. --json adds references {checks [{run, metric, measured, unit, expected,\n"
               "verdict (within|better|regression|missing), detail, reference}], unmatched_runs, failed} (null without\n"
               "--against).\n"
               "Exit status: 0 compared (and every reference held), 1 a reference not held, 2 bad input (fewer\n"
               "than two inputs, or none with --against, a missing path, a directory that is neither a bundle nor\n"
               "a run, an unsafe or tampered bundle, unreadable metrics or traces, a references.yaml it cannot read).\n"
               "Examples:\n"
               "  ccl-harness compare results/*.tar.zst\n"
               "  ccl-harness compare results/run-a results/run-b --html compare.html\n"
               "  ccl-harness compare results --card 'tiny-ddp*' --since 1d\n"
               "  ccl-harness compare results --where workload.data.batch_size=8\n"
               "  ccl-harness compare results/tiny-ddp-sweep-20261123T021839Z --html sweep.html\n"
               "  ccl-harness compare results --card 'tiny-ddp*' --since 1d --against references.yaml");
    sub.callback([options, &action] { action = [options] { return run_compare(*options); }; });
}

} // namespace harness::cli
