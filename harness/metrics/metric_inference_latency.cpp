// ttft and tpot: an inference run's first forward pass and its mean decode pass, from the engine
// steps its traces mark (the dashboard's trace-derived definitions, upstream
// tools/inference_latency/inference_latency.py), in seconds.
#include "metrics/metric_functions.hpp"
#include "metrics/reference_patterns.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness::metrics {

namespace {

constexpr double k_us_per_s = 1e6;

enum class Latency { ttft, tpot };

/// inference_latency.py:90-95 _decode_durations_us: the passes after the first, and without the
/// last (a cooldown-like pass) when there are more than two.
std::vector<double> decode_passes(const std::vector<double>& passes) {
    if (passes.size() <= 1) {
        return {};
    }
    return passes.size() > 2 ? std::vector<double>(passes.begin() + 1, passes.end() - 1)
                             : std::vector<double>(passes.begin() + 1, passes.end());
}

/// One rank's value in µs: the first pass (ttft) or the decode passes' mean (tpot);
/// inference_latency.py:98-110 _summarize_rank_sequences.
std::optional<double> rank_latency(const std::vector<double>& passes, Latency which, bool starts_mid_decode) {
    if (passes.empty()) {
        return std::nullopt;
    }
    if (which == Latency::ttft) {
        return passes.front();
    }
    // Traced from mid-decode: every pass is a decode, none a prefill to leave out.
    std::vector<double> decode = passes;
    if (!starts_mid_decode) {
        decode = decode_passes(passes);
    } else if (decode.size() > 2) {
        decode.pop_back();
    }
    return decode.empty() ? std::nullopt : std::optional<double>(mean(decode));
}

std::vector<double> durations(const StepSelection& selection) {
    std::vector<double> out;
    out.reserve(selection.steps.size());
    for (const StepMarker& step : selection.steps) {
        out.push_back(step.dur);
    }
    return out;
}

struct RankPasses {
    std::vector<double> passes; ///< µs, by start time
    std::string source;
    /// The first traced pass is not the prefill: SGLang bench_one_batch profiles from
    /// --profile-start-step, mid-decode by default, so its first traced pass is a decode.
    bool starts_mid_decode = false;
    bool vllm = false; ///< --reference: vLLM's markers win over SGLang's across ranks (inference_latency.py:176-179)
};

class InferenceLatencyFold final : public MetricFold {
public:
    InferenceLatencyFold(FoldInputs in, std::size_t ranks, Latency which)
        : MetricFold(std::move(in), ranks), m_which(which), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        if (!in().counted[index]) {
            return;
        }
        const RankTrace& trace = view.trace();
        RankPasses& slot = m_slots[index];
        if (in().reference()) {
            if (!view.reference_reads_events()) {
                return;
            }
            // inference_latency.py:200-203: json_tpu reads the XLA step frames only, json the
            // engines' markers (vLLM's execute_context_* user annotations, else SGLang's run_batch).
            const bool tpu = in().card != nullptr && in().card->traces_json_tpu;
            const StepSelection selection = tpu ? xla_steps(trace) : vllm_steps(trace);
            if (tpu && selection.source != "$core.py:331 step") {
                return;
            }
            slot.vllm = !tpu && !selection.empty();
            const StepSelection chosen = tpu || !selection.empty() ? selection
                                                                   : sglang_steps(trace, reference_sglang_step_for_step_time);
            slot.passes = durations(chosen);
            slot.source = chosen.source;
            return;
        }
        // The default mode: every engine's forward-pass marker, SGLang bench_one_batch's extend
        // and decode passes and any XLA step frame included, whatever metric_source lists.
        for (StepSelection selection : {vllm_steps(trace), sglang_steps(trace, reference_sglang_step_for_overlap),
                                        sglang_bench_steps(trace), standard_xla_steps(trace)}) {
            if (!selection.empty()) {
                slot.passes = durations(selection);
                const StepMarker& first = selection.steps.front();
                slot.starts_mid_decode = first.kind == StepKind::sglang_bench_forward &&
                                         ends_with(trace.names.text(first.name), "): decode");
                slot.source = std::move(selection.source);
                return;
            }
        }
    }

    MetricValue finish(const std::vector<std::size_t>& order) override {
        const bool ttft = m_which == Latency::ttft;
        MetricValue out = start_value(ttft ? "ttft" : "tpot", "s");
        if (const std::string why = not_applicable(); !why.empty()) {
            out.why = why;
            return out;
        }
        // --reference: when any rank has vLLM's markers, only those ranks count.
        bool any_vllm = false;
        for (std::size_t index : order) {
            any_vllm = any_vllm || m_slots[index].vllm;
        }
        std::vector<double> values;
        std::string sources;
        bool mid_decode = false;
        for (std::size_t r = 0; r < order.size(); ++r) {
            const RankPasses& slot = m_slots[order[r]];
            if (!in().counted[order[r]] || (in().reference() && any_vllm && !slot.vllm)) {
                continue;
            }
            if (ttft && slot.starts_mid_decode) {
                mid_decode = true;
                continue;
            }
            if (const std::optional<double> value = rank_latency(slot.passes, m_which, slot.starts_mid_decode)) {
                values.push_back(*value);
                out.per_rank[r] = *value / k_us_per_s;
                if (sources.find(slot.source) == std::string::npos) {
                    sources += sources.empty() ? slot.source : ", " + slot.source;
                }
            }
        }
        if (values.empty() && mid_decode) {
            out.why = "the traces start at a decode pass (SGLang bench_one_batch profiles from --profile-start-step): no "
                      "prefill was traced, so no first token";
            return out;
        }
        if (values.empty()) {
            out.why = ttft ? "no inference forward-pass markers in any rank (execute_context_*, run_batch, bench_one_batch's "
                             "extend/decode, $core.py:331 step)"
                           : "no rank has a decode pass after its first forward pass (execute_context_*, run_batch, "
                             "bench_one_batch's decode, $core.py:331 step)";
            return out;
        }
        out.value = mean(values) / k_us_per_s;
        out.basis = "forward passes: " + sources;
        // What the client saw is another number (queueing, HTTP, the scheduler's batching): said
        // beside the engine's, never in its place.
        if (const CardFacts* card = in().card; !in().reference() && card != nullptr && card->serving) {
            const std::optional<double>& client = ttft ? card->serving->mean_ttft_ms : card->serving->mean_tpot_ms;
            if (client) {
                out.notes.push_back(fmt::format("the serving client measured a mean {} of {:.6g} s per request ({}: with "
                                                "queueing and the HTTP round trip)",
                                                ttft ? "time to first token" : "time per output token", *client / 1000.0,
                                                card->serving->file.filename().string()));
            }
        }
        if (const std::string partial = partial_ranks(in()); !partial.empty()) {
            out.notes.push_back(fmt::format("partial: the mean over the traced {}; the ranks of one engine step together", partial));
        }
        return out;
    }

private:
    /// Why the card rules the metric out (inference_latency.py:189-196), else empty.
    std::string not_applicable() const {
        const CardFacts* card = in().card;
        const std::string phase = card != nullptr ? card->phase : std::string();
        // The default mode counts a serving run (the harness's phase: serving) as inference too.
        const bool inference = phase == "inference" || (!in().reference() && phase == "serving");
        if (card == nullptr || !inference) {
            return fmt::format("only inference runs have {}: the card's workload.model.phase is {}",
                               m_which == Latency::ttft ? "a time to first token" : "a time per output token",
                               phase.empty() ? "not given" : "\"" + phase + "\"");
        }
        if (m_which == Latency::tpot && card->output_len && *card->output_len <= 1) {
            return "output_len 1: no token after the first, so no decode pass";
        }
        if (in().reference() && !card->traces_json && !card->traces_json_tpu) {
            return "the card's metric_source.traces lists neither json nor json_tpu, the traces the CCL-Bench tool reads";
        }
        return {};
    }

    Latency m_which;
    std::vector<RankPasses> m_slots;
};

} // namespace

std::unique_ptr<MetricFold> fold_ttft(FoldInputs in, std::size_t ranks) {
    return std::make_unique<InferenceLatencyFold>(std::move(in), ranks, Latency::ttft);
}

std::unique_ptr<MetricFold> fold_tpot(FoldInputs in, std::size_t ranks) {
    return std::make_unique<InferenceLatencyFold>(std::move(in), ranks, Latency::tpot);
}

} // namespace harness::metrics
