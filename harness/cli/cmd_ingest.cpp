#include "cli/card_options.hpp"
#include "bundle/bundle_verify.hpp"
#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "cli/store_hook.hpp"
#include "trace/rank_set.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "workflows/ingest.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct IngestCommandOptions {
    IngestOptions ingest;
    std::string ranks; ///< --ranks as typed; given or not is the option's count
    ReportFlags report;
};

int run_ingest(const IngestCommandOptions& options) {
    install_interrupt_handlers();
    IngestOptions ingest = options.ingest;
    ingest.home = harness_home();
    std::ostream& progress = progress_stream(options.report.json, quiet_wanted());
    const IngestOutcome outcome = ingest_run(ingest, progress);
    if (!outcome.run_dir.empty()) {
        record_runs({outcome.run_dir});
    }
    // Left-out files are warnings whatever the verbosity: the user should know what is not in the bundle.
    for (const std::string& warning : outcome.warnings) {
        std::cerr << fmt::format("ccl-harness: warning: {}\n", terminal_text(warning));
    }
    if (options.report.json) {
        std::cout << ingest_outcome_to_json(outcome).dump();
        return k_exit_ok;
    }
    for (const IngestedTrace& trace : outcome.traces) {
        std::cout << fmt::format("  {} <- {}{}\n", terminal_text(trace.name), terminal_text(trace.source),
                                 trace.rank_from.empty() || trace.rank_from == "name"
                                     ? ""
                                     : fmt::format(" (rank {} from {})", trace.rank, trace.rank_from));
    }
    const std::string partial = outcome.ranks_present.empty()
                                    ? ""
                                    : ", partial: " + describe_partial_ranks(outcome.ranks_present, outcome.total_count);
    std::cout << fmt::format("run directory: {}\nbundle: {}\n  valid, {}{} ({} files, {} traces, {} steps)\n  sha256: {}\n",
                             terminal_text(outcome.run_dir.string()), terminal_text(outcome.bundle.string()), k_unpinned_ingested,
                             partial, outcome.files, outcome.traces.size(), outcome.steps, outcome.bundle_sha256);
    return k_exit_ok;
}

} // namespace

void add_ingest(CLI::App& sub, Action& action) {
    auto options = std::make_shared<IngestCommandOptions>();
    sub.add_option("card", options->ingest.card, "the workload card the job ran (checked as validate checks it)")->required();
    sub.add_option("trace_dir", options->ingest.traces,
                   "the traces as the tools wrote them: rank<r>_trace.json, <host>_<pid>.<ns>.pt.trace.json(.gz), "
                   "kineto_trace_<r>.json(.gz), nsys_<r>.nsys-rep / .sqlite, <host>.trace.json.gz")
        ->required();
    sub.add_option("--scripts", options->ingest.scripts, "the scripts that ran (files only), bundled as scripts/");
    sub.add_option("--logs", options->ingest.logs, "the job's logs, bundled as logs/");
    auto* ranks = sub.add_option("--ranks", options->ranks,
                                 "LIST: the ranks TRACE_DIR has traces for when not every rank's (0, 0,2, 0-3): exactly these, "
                                 "recorded as a partial bundle");
    auto* results = add_results_option(sub, options->ingest.results, "where the run directory and bundle go");
    add_report_flags(sub, options->report);
    sub.footer("Makes results/<card>-<time>-<hash>/ and its bundle from a job the harness did not run (a hand-run\n"
               "job, an archived CCL-Bench data point). Each trace is named by its global rank: from its name, else\n"
               "from its distributedInfo (torch's tensorboard handler), else rank 0 when the card has one rank.\n"
               "provenance.json says origin \"ingested\": the given files with their sha256, no harness or framework\n"
               "commit, hosts unknown; verify reports the bundle as \"valid, unpinned, ingested\", and reproduce\n"
               "refuses it. A file of TRACE_DIR that is plainly no trace (a card, a README, a log) is left out with\n"
               "a warning; a *.json, *.gz, *.pb, *.sqlite, *.nsys-rep or *trace* file it cannot place, a link, two\n"
               "traces of one rank or a missing rank is an error, and nothing is written.\n"
               "An archive with some ranks' traces only (upstream's rank0_trace.json rows) takes --ranks LIST: exactly\n"
               "those ranks' traces, no others; provenance.json (ingested.ranks_present, total_count) and the card\n"
               "(metric_source.ranks_present) record them, verify reports \"partial: ranks 0 of 4\", and metrics\n"
               "marks what needs every rank (straggler) n/a.\n"
               "JSON keys: run_id, run_dir, bundle, sha256, files, steps, traces [{source, name, rank, rank_from}],\n"
               "warnings, provenance, partial (null, or {ranks_present, total_count, summary}).\n"
               "Exit status: 0 ingested, 1 failed, 2 bad input (nothing written), 130 interrupted.\n"
               "Examples:\n"
               "  ccl-harness ingest llama-8b-tp4.yaml /data/llama-8b-tp4/traces --scripts job/ --logs job/logs\n"
               "  ccl-harness ingest card.yaml tb_logs/ --json\n"
               "  ccl-harness ingest llama-8b-tp4.yaml archive/rank0-only/ --ranks 0");
    sub.callback([options, results, ranks, &action] {
        action = [options, results, ranks] {
            apply_results_default(results, options->ingest.results);
            if (ranks->count() > 0) {
                options->ingest.ranks = options->ranks;
            }
            return run_ingest(*options);
        };
    });
}

} // namespace harness::cli
