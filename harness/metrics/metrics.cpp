#include "metrics/metrics.hpp"

#include "metrics/metric_bounds.hpp"

#include "metrics/metric_functions.hpp"
#include "metrics/metrics_input.hpp"
#include "metrics/nsys_sqlite.hpp"
#include "trace/rank_set.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <optional>
#include <thread>

namespace harness::metrics {

namespace {

struct MetricDefinition {
    const char* name;
    const char* summary; ///< one line, for `ccl-harness list metrics`
    MetricFoldFactory fold;
    std::optional<ReferencePattern> pattern; ///< the tool's communication pattern, if it has one
    Better better;                           ///< website/benchmark_config.json's higher_is_better, where it lists the metric
};

const std::vector<MetricDefinition>& definitions() {
    static const std::vector<MetricDefinition> k_definitions = {
        {"avg_step_time", "mean duration of the inner training or serving steps (s)", fold_avg_step_time, std::nullopt, Better::lower},
        {"compute_comm_overlap", "share of communication kernel time overlapped by compute, per inner step (%)",
         fold_compute_comm_overlap, ReferencePattern::overlap, Better::higher},
        {"communication_fraction", "communication kernel time over all kernel time, mean of the inner steps (%)",
         fold_communication_fraction, ReferencePattern::fraction, Better::lower},
        {"total_communication_time", "merged communication kernel time per inner step (s)", fold_total_communication_time,
         ReferencePattern::total_time, Better::lower},
        {"collective_volume", "bytes moved by collectives (message elements x dtype size), by collective (bytes)",
         fold_collective_volume, std::nullopt, Better::neither},
        {"straggler", "(max - min) / max of the ranks' total communication kernel time (ratio)", fold_straggler, std::nullopt,
         Better::lower},
        {"mfu", "model FLOP utilization: FLOP/token x tokens/s over the accelerators' peak (%)", fold_mfu, std::nullopt,
         Better::higher},
        {"ttft", "time to first token: the first inference forward pass (engine step) of each rank, mean of the ranks (s)", fold_ttft,
         std::nullopt, Better::lower},
        {"tpot", "time per output token: mean decode forward pass after the first, last dropped, mean of the ranks (s)", fold_tpot,
         std::nullopt, Better::lower},
        {"total_kernel_time", "GPU kernel time summed over every kernel of every rank (s)", fold_total_kernel_time, std::nullopt,
         Better::neither},
        {"total_trace_time", "first GPU kernel start to last kernel end, over all ranks (s)", fold_total_trace_time, std::nullopt,
         Better::neither},
        {"coll_call_num", "collective kernel launches on rank 0 over the whole trace (calls)", fold_coll_call_num, std::nullopt,
         Better::neither},
    };
    return k_definitions;
}

std::vector<const MetricDefinition*> selected(const std::vector<std::string>& names) {
    std::vector<const MetricDefinition*> out;
    for (const auto& name : names) {
        const auto found = std::find_if(definitions().begin(), definitions().end(), [&](const auto& d) { return name == d.name; });
        if (found == definitions().end()) {
            const std::string suggestion = closest_match(name, metric_names());
            throw input_error(fmt::format("unknown metric \"{}\"{} (known: {})", name,
                                          suggestion.empty() ? "" : fmt::format("; did you mean \"{}\"?", suggestion),
                                          join(metric_names(), ", ")));
        }
        if (std::find(out.begin(), out.end(), &*found) == out.end()) {
            out.push_back(&*found);
        }
    }
    if (out.empty()) {
        for (const auto& definition : definitions()) {
            out.push_back(&definition);
        }
    }
    return out;
}

bool differs(const MetricValue& a, const MetricValue& b) {
    if (a.value.has_value() != b.value.has_value()) {
        return true;
    }
    if (!a.value) {
        return false;
    }
    const double scale = std::max(std::fabs(*a.value), std::fabs(*b.value));
    return std::fabs(*a.value - *b.value) > 1e-9 * scale;
}

/// The kernels of one rank whose class differs between the default classifier and `pattern`,
/// by name. Sums are per rank, merged over ranks in report order by merge_kernels.
std::vector<KernelDisagreement> rank_kernel_disagreements(const RankView& view, ReferencePattern pattern) {
    if (!view.reference_reads_events()) {
        return {};
    }
    const bool xla = view.basis() == Basis::xla_ops;
    const ReferencePattern used = xla && pattern == ReferencePattern::overlap ? ReferencePattern::xla_overlap : pattern;
    const NameTable& names = view.trace().names;
    // Per name id: -1 not yet classified, 0 agreeing, 1 disagreeing; a name is looked up once,
    // not once per span.
    std::vector<signed char> disagrees(names.size(), -1);
    std::vector<std::size_t> counts(names.size(), 0);
    std::vector<double> times(names.size(), 0);
    for (const Span& span : xla ? view.trace().xla_ops : view.trace().kernels) {
        if (disagrees[span.name] < 0) {
            disagrees[span.name] = (view.kernel_family(span.name) != CommFamily::none) != view.reference_comm(used, span.name) ? 1 : 0;
        }
        if (disagrees[span.name] == 0) {
            continue;
        }
        ++counts[span.name];
        times[span.name] += span.dur;
    }
    std::vector<KernelDisagreement> out;
    for (NameId id = 0; id < names.size(); ++id) {
        if (counts[id] == 0) {
            continue;
        }
        KernelDisagreement entry;
        entry.name = names.text(id);
        const CommFamily family = view.kernel_family(id);
        entry.standard = family_label(family);
        entry.reference = family == CommFamily::none ? "communication" : "compute";
        entry.count = counts[id];
        entry.time_us = times[id];
        out.push_back(std::move(entry));
    }
    return out;
}

/// The ranks' disagreeing kernels by name, in report order: longest total time first, at most 10.
void merge_kernels(Disagreement& out, const std::vector<std::vector<KernelDisagreement>>& per_rank,
                   const std::vector<std::size_t>& order) {
    std::map<std::string, KernelDisagreement> by_name;
    for (const std::size_t k : order) {
        for (const KernelDisagreement& rank_entry : per_rank[k]) {
            KernelDisagreement& entry = by_name[rank_entry.name];
            entry.name = rank_entry.name;
            entry.standard = rank_entry.standard;
            entry.reference = rank_entry.reference;
            entry.count += rank_entry.count;
            entry.time_us += rank_entry.time_us;
        }
    }
    std::vector<KernelDisagreement> kernels;
    for (auto& [name, entry] : by_name) {
        kernels.push_back(std::move(entry));
    }
    std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.time_us > b.time_us; });
    constexpr std::size_t k_shown = 10;
    if (kernels.size() > k_shown) {
        out.more_kernels = kernels.size() - k_shown;
        kernels.resize(k_shown);
    }
    out.kernels = std::move(kernels);
}

bool kineto_named_json(const fs::path& file) {
    const std::string name = file.filename().string();
    return starts_with(name, "kineto_trace_") && ends_with(name, ".json");
}

/// What the CCL-Bench tools make of a .json file beside the traces that is not a trace: it
/// depends on the tool's glob, and on whether kineto_trace_*.json files are there.
std::string not_a_trace_note(const fs::path& file, bool kineto_present, const std::string& why) {
    const std::string name = file.filename().string();
    const char* others = "straggler reads rank*_trace.json only (tools/straggler/_common.py:8) and collective_data_volume one "
                         "rank0_trace.json, rank*_trace.json or kineto_trace_*.json (collective_data_volume.py:193)";
    if (kineto_present) {
        return fmt::format("{}: not a trace ({}); the CCL-Bench tools ignore it: select_json_files keeps only kineto_trace_*.json "
                           "when there are any (tools/json_sampling.py:38-40), {}",
                           name, why, others);
    }
    return fmt::format("{}: not a trace ({}); avg_step_time, compute_comm_overlap, communication_fraction, total_communication_time "
                       "and mfu list every .json (tools/json_sampling.py:31-35) and read it as no events; {}",
                       name, why, others);
}

RankSummary summarize(const RankView& view, const TraceInput& input, const std::string& not_a_trace) {
    const RankTrace& trace = view.trace();
    RankSummary out;
    out.rank = view.rank();
    out.file = input.file;
    out.format = !not_a_trace.empty()                       ? "not-a-trace"
                 : trace.format == TraceFormat::kineto      ? "kineto"
                 : trace.format == TraceFormat::nsys_sqlite ? "nsys-sqlite"
                                                            : "legacy-autograd";
    out.compressed = trace.compressed;
    out.basis = basis_label(view.basis());
    out.bytes = trace.bytes;
    out.events = trace.events;
    out.kernels = trace.kernels.size();
    out.host_ops = trace.host_ops.size();
    out.xla_ops = trace.xla_ops.size();
    const StepSelection steps = standard_steps(trace);
    out.step_source = steps.source;
    out.steps = steps.steps.size();
    out.devices = trace.device_names;
    out.in_default = input.standard;
    out.in_reference = input.reference;
    return out;
}

/// One wanted metric: its fold in each mode and, where the tool has a pattern, each rank's
/// disagreeing kernels (kept in case the modes differ, which only finish() tells).
struct WantedMetric {
    const MetricDefinition* definition = nullptr;
    std::unique_ptr<MetricFold> standard;
    std::unique_ptr<MetricFold> reference;
    std::vector<std::vector<KernelDisagreement>> kernels; ///< per rank, by input position
};

/// What is kept of a rank once its view is gone.
struct RankResult {
    long long rank = 0;
    RankSummary summary;
    std::string not_a_trace; ///< why a reference-only .json file was read as empty
    std::exception_ptr error;
};

/// The most values alive at once of a counter moved up and down by several threads.
class PeakCounter {
public:
    void enter() {
        const std::size_t now = ++m_now;
        std::size_t peak = m_peak.load();
        while (now > peak && !m_peak.compare_exchange_weak(peak, now)) {
        }
    }
    void leave() { --m_now; }
    std::size_t peak() const { return m_peak.load(); }

private:
    std::atomic<std::size_t> m_now{0};
    std::atomic<std::size_t> m_peak{0};
};

/// Reads the traces on up to `threads` threads, each worker taking the next file in turn and
/// folding it into every wanted metric before it drops the rank's view: memory is held for at
/// most one rank per thread. An unreadable standard trace stops the workers from starting
/// files after it; the first one in input order is rethrown.
std::vector<RankResult> fold_ranks(const std::vector<TraceInput>& traces, const ReadOptions& read, unsigned threads,
                                   std::vector<RankFacts>& facts, std::vector<WantedMetric>& wanted, PeakCounter& held) {
    std::vector<RankResult> results(traces.size());
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> first_error{traces.size()};
    auto fold_one = [&](std::size_t k) {
        const TraceInput& input = traces[k];
        RankResult& result = results[k];
        std::optional<RankView> view;
        try {
            RankTrace trace = input.kind == TraceKind::nsys_sqlite ? read_nsys_sqlite(input.file, input.device)
                                                                   : read_trace(input.file, read);
            const long long rank = input.rank >= 0 ? input.rank : trace.distributed_rank.value_or(static_cast<long long>(k));
            view.emplace(rank, std::move(trace));
        } catch (const HarnessError& error) {
            if (input.standard) {
                throw;
            }
            // Other .json files beside the traces: what each tool makes of them is worded by
            // not_a_trace_note.
            RankTrace empty;
            empty.file = input.file;
            view.emplace(-1, std::move(empty));
            result.not_a_trace = error.what();
        }
        result.rank = view->rank();
        facts[k] = RankFacts{view->basis(), view->reference_reads_events(), input.file};
        result.summary = summarize(*view, input, result.not_a_trace);
        for (WantedMetric& metric : wanted) {
            metric.standard->add(k, *view);
            metric.reference->add(k, *view);
            if (metric.definition->pattern && input.reference) {
                metric.kernels[k] = rank_kernel_disagreements(*view, *metric.definition->pattern);
            }
        }
    };
    auto worker = [&] {
        for (std::size_t k = next++; k < traces.size(); k = next++) {
            // Ctrl-C between files: the workers stop taking traces and the check below reports
            // it. Files after a failed one are not needed: its error is what is reported.
            if (interrupt_signal() != 0 || k > first_error.load()) {
                break;
            }
            held.enter();
            try {
                fold_one(k);
            } catch (...) {
                results[k].error = std::current_exception();
                std::size_t seen = first_error.load();
                while (k < seen && !first_error.compare_exchange_weak(seen, k)) {
                }
            }
            held.leave();
        }
    };
    unsigned count = threads != 0 ? threads : std::max(1U, std::thread::hardware_concurrency());
    count = static_cast<unsigned>(std::min<std::size_t>(count, traces.size()));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < count; ++t) {
        pool.emplace_back(worker);
    }
    worker();
    for (auto& thread : pool) {
        thread.join();
    }
    if (interrupt_signal() != 0) {
        throw HarnessError("interrupted while reading the traces; nothing was computed", k_exit_interrupted);
    }
    for (const auto& result : results) {
        if (result.error) {
            std::rethrow_exception(result.error);
        }
    }
    return results;
}

bool asks_for(const std::vector<const MetricDefinition*>& wanted, std::string_view name) {
    return std::any_of(wanted.begin(), wanted.end(), [&](const MetricDefinition* d) { return std::string_view(d->name) == name; });
}

/// The card's facts beside the traces, when there is a card; its error becomes a note.
std::optional<CardFacts> read_card(const MetricsInput& input, MetricsReport& report) {
    std::optional<CardFacts> card;
    if (input.card) {
        card = load_card_facts(*input.card);
        if (!card->error.empty()) {
            report.notes.push_back(card->error);
        }
    }
    return card;
}

/// --reference shows the tools' values: above 16 files they read a sample of 16, so the files
/// outside it are not read at all (the default mode, kept for the disagreements, is then
/// computed on the same files). The straggler tool reads every rank*_trace.json: with it asked
/// for, every file is read.
void keep_tools_sample(const std::vector<const MetricDefinition*>& wanted, bool reference, MetricsInput& input,
                       MetricsReport& report) {
    if (!reference || asks_for(wanted, "straggler")) {
        return;
    }
    const std::size_t before = input.traces.size();
    input.traces.erase(std::remove_if(input.traces.begin(), input.traces.end(), [](const TraceInput& t) { return t.outside_sample; }),
                       input.traces.end());
    if (input.traces.size() < before) {
        report.notes.push_back(fmt::format("--reference: the {} .json files outside the tools' sample are not read; the default-mode "
                                           "values in the disagreements are over the {} files read",
                                           before - input.traces.size(), input.traces.size()));
    }
}

/// Each wanted metric's fold in both modes, over `traces`; the folds keep pointers to `facts`
/// and `card`.
std::vector<WantedMetric> start_folds(const std::vector<const MetricDefinition*>& wanted, const std::vector<TraceInput>& traces,
                                      std::vector<RankFacts>& facts, const CardFacts* card) {
    const std::size_t count = traces.size();
    FoldInputs standard_in;
    FoldInputs reference_in;
    standard_in.mode = MetricMode::standard;
    reference_in.mode = MetricMode::reference;
    for (const TraceInput& trace : traces) {
        standard_in.counted.push_back(trace.standard);
        reference_in.counted.push_back(trace.reference);
    }
    standard_in.facts = reference_in.facts = &facts;
    standard_in.card = reference_in.card = card;
    std::vector<WantedMetric> metrics;
    for (const MetricDefinition* definition : wanted) {
        WantedMetric metric;
        metric.definition = definition;
        metric.standard = definition->fold(standard_in, count);
        metric.reference = definition->fold(reference_in, count);
        metric.kernels.resize(definition->pattern ? count : 0);
        metrics.push_back(std::move(metric));
    }
    return metrics;
}

/// Ranks in rank order for the report; every sum over ranks is taken in this order.
std::vector<std::size_t> rank_order(const std::vector<RankResult>& results) {
    std::vector<std::size_t> order(results.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        order[k] = k;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return results[a].rank < results[b].rank; });
    return order;
}

/// Whether the tools find no trace because every one here is .json.gz (said in a note): the
/// tools list names ending in .json only, and "no ProfilerStep" would send the reader looking
/// in the wrong place.
bool tools_find_only_gzip(const std::vector<TraceInput>& traces, const std::vector<RankResult>& results, MetricsReport& report) {
    std::size_t gzip_traces = 0;
    bool reference_reads_a_trace = false;
    for (std::size_t k = 0; k < traces.size(); ++k) {
        gzip_traces += traces[k].standard && ends_with(traces[k].file.filename().string(), ".json.gz") ? 1U : 0U;
        reference_reads_a_trace = reference_reads_a_trace || (traces[k].reference && results[k].not_a_trace.empty());
    }
    const bool only_gzip = gzip_traces > 0 && !reference_reads_a_trace;
    if (only_gzip) {
        report.notes.push_back(
            fmt::format("--reference: the CCL-Bench tools read plain .json files only (tools/json_sampling.py:34 lists "
                        "names ending in .json; straggler/_common.py:8 globs rank*_trace.json; "
                        "collective_data_volume.py:193 rank*_trace.json or kineto_trace_*.json); the {} trace file{} "
                        "here {} .json.gz, so the tools find no trace: gunzip them to compare",
                        gzip_traces, gzip_traces == 1 ? "" : "s", gzip_traces == 1 ? "is" : "are"));
    }
    return only_gzip;
}

/// report.ranks in rank order, with a note for each .json file that was not a trace.
void add_ranks(const std::vector<TraceInput>& traces, const std::vector<RankResult>& results, const std::vector<std::size_t>& order,
               MetricsReport& report) {
    const bool kineto_present = std::any_of(traces.begin(), traces.end(),
                                            [](const TraceInput& t) { return kineto_named_json(t.file); });
    for (const std::size_t k : order) {
        report.ranks.push_back(results[k].summary);
        if (!results[k].not_a_trace.empty()) {
            report.notes.push_back(not_a_trace_note(traces[k].file, kineto_present, results[k].not_a_trace));
        }
    }
}

/// Each metric's value in the mode asked for, and a disagreement where the modes differ.
void finish_metrics(std::vector<WantedMetric>& metrics, const std::vector<std::size_t>& order, bool only_gzip,
                    const std::optional<CardFacts>& card, bool reference, MetricsReport& report) {
    for (WantedMetric& metric : metrics) {
        const MetricDefinition* definition = metric.definition;
        MetricValue standard_value = metric.standard->finish(order);
        MetricValue reference_value = metric.reference->finish(order);
        if (only_gzip && !reference_value.value) {
            reference_value.why =
                "no plain .json trace: the CCL-Bench tools read *.json only (tools/json_sampling.py:34) and the traces here "
                "are .json.gz";
        }
        if (card && !card->error.empty() && std::string(definition->name) == "mfu") {
            standard_value.why = reference_value.why = card->error;
        }
        if (differs(standard_value, reference_value)) {
            Disagreement disagreement;
            disagreement.metric = definition->name;
            if (definition->pattern) {
                disagreement.pattern = pattern_text(*definition->pattern);
                merge_kernels(disagreement, metric.kernels, order);
            }
            disagreement.standard = standard_value;
            disagreement.reference = reference_value;
            report.disagreements.push_back(std::move(disagreement));
        }
        report.metrics.push_back(reference ? std::move(reference_value) : std::move(standard_value));
    }
}

} // namespace

std::vector<std::pair<std::string, std::string>> metric_summaries() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& definition : definitions()) {
        out.emplace_back(definition.name, definition.summary);
    }
    return out;
}

Better metric_better(const std::string& name) {
    for (const auto& definition : definitions()) {
        if (name == definition.name) {
            return definition.better;
        }
    }
    return Better::neither;
}

const std::vector<std::string>& metric_names() {
    static const std::vector<std::string> k_names = [] {
        std::vector<std::string> names;
        for (const auto& definition : definitions()) {
            names.emplace_back(definition.name);
        }
        return names;
    }();
    return k_names;
}

MetricsReport compute_metrics(const fs::path& path, const MetricsOptions& options) {
    const std::vector<const MetricDefinition*> wanted = selected(options.metrics);
    MetricsInput input = resolve_metrics_input(path);
    MetricsReport report;
    report.path = path;
    report.layout = input.layout;
    report.card = input.card;
    report.reference = options.reference;
    report.notes = input.notes;
    const std::optional<CardFacts> card = read_card(input, report);
    if (card && card->error.empty() && !card->ranks_present.empty() && card->total_count) {
        report.partial = describe_partial_ranks(card->ranks_present, static_cast<long long>(*card->total_count));
    }
    keep_tools_sample(wanted, options.reference, input, report);

    std::vector<RankFacts> facts(input.traces.size());
    std::vector<WantedMetric> metrics = start_folds(wanted, input.traces, facts, card && card->error.empty() ? &*card : nullptr);
    PeakCounter held;
    // What the reader keeps follows the metrics asked for.
    ReadOptions read;
    read.collective_args = asks_for(wanted, "collective_volume");
    const std::vector<RankResult> results = fold_ranks(input.traces, read, options.threads, facts, metrics, held);
    report.ranks_held_at_once = held.peak();

    const std::vector<std::size_t> order = rank_order(results);
    const bool only_gzip = tools_find_only_gzip(input.traces, results, report);
    add_ranks(input.traces, results, order, report);
    finish_metrics(metrics, order, only_gzip, card, options.reference, report);
    check_bounds(report, card && card->error.empty() ? card->xpu_model : std::string());
    return report;
}

} // namespace harness::metrics
