// mfu (percent): FLOP/token × tokens/s ÷ (total_count × peak FLOP/s), with
//   training:  FLOP/token = 6(N_eff − N_emb) + 12·L·H·Q·S
//   inference: FLOP/token = 2(N_eff − N_emb) + 4·L·H·Q·S
// N_eff = num_params_active, else num_params, in both phases (tools/mfu/mfu.py:229);
// tokens/s = batch_size × seq_len ÷ step time, the step time being a vLLM latency record's
// avg_latency when one lies beside the card, else the inner ProfilerStep#N mean;
// peaks A100 312, H100 989, TPU v6e 918 TFLOP/s.
#include "metrics/metric_functions.hpp"

#include "util/strings.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <map>

namespace harness::metrics {

namespace {

std::optional<double> peak_tflops(const std::string& xpu_model) {
    std::string key;
    for (const char c : xpu_model) {
        key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    static const std::map<std::string, double> k_peaks = {{"nvidia_a100", 312.0}, {"nvidia_h100", 989.0}, {"tpu_v6e", 918.0}};
    if (const auto found = k_peaks.find(key); found != k_peaks.end()) {
        return found->second;
    }
    return std::nullopt;
}

std::string missing_list(const std::vector<std::pair<const char*, bool>>& fields) {
    std::string out;
    for (const auto& [name, present] : fields) {
        if (!present) {
            out += out.empty() ? name : std::string(", ") + name;
        }
    }
    return out;
}

/// `value or 1`: Python's `or` takes a zero (or an absent field) as false.
double or_one(const std::optional<double>& value) { return value && *value != 0 ? *value : 1; }

/// Python's round(value, 4): correctly rounded on the exact binary value, as printf's %.4f is.
double python_round4(double value) { return std::strtod(fmt::format("{:.4f}", value).c_str(), nullptr); }

/// What mfu.py:194-226 takes from a rank file: whether it reads it, and its inner ProfilerStep#N mean.
struct RankStep {
    bool tool_file = false; ///< a counted .json whose name starts with "rank" or "kineto"
    std::optional<double> mean_us;
};

/// Why mfu cannot be computed from `card` (what mfu.py does not read; a field missing), or empty.
std::string card_problem(const CardFacts& card, bool reference) {
    if (reference && card.traces_json_tpu) {
        return "metric_source.traces names json_tpu: mfu.py then reads active_tflops from the XLA profile "
               "(mfu.py:71-105, 264-265), which --reference does not reproduce";
    }
    if (reference && !card.traces_json) {
        return "metric_source.traces does not name json: mfu.py computes no mfu for such a card (mfu.py:267-271)";
    }
    if (card.arch_at.empty()) {
        return fmt::format("{}: workload.model.model_arch is missing (or not a mapping) and workload.model is no mapping to "
                           "fall back to",
                           card.file.string());
    }
    // The tool defaults what the card leaves out (batch 1, seq_len 1, one device); the default
    // mode says what is missing instead.
    const std::string arch = card.arch_at + ".";
    const std::string n_field = arch + "num_params";
    const std::string l_field = arch + "num_layers";
    const std::string h_field = arch + "head_dim";
    const std::string q_field = arch + "num_heads";
    const std::string missing = missing_list({
        {n_field.c_str(), card.num_params.has_value()},
        {l_field.c_str(), card.num_layers.has_value()},
        {h_field.c_str(), card.head_dim.has_value()},
        {q_field.c_str(), card.num_heads.has_value()},
        {"data.batch_size", reference || card.batch_size.has_value()},
        {"data.seq_len", reference || card.seq_len.has_value()},
        {"xpu_spec.total_count (> 0)", reference || card.total_count.value_or(0) > 0},
    });
    if (!missing.empty()) {
        return fmt::format("{}: {}the card lacks {}", card.file.string(),
                           card.arch_at == "model" ? "workload.model.model_arch is missing, read workload.model instead; " : "",
                           missing);
    }
    return {};
}

/// Whether the inference formula applies; nullopt (out.why set) for a phase mfu does not know.
std::optional<bool> inference_formula(const CardFacts& card, bool reference, MetricValue& out) {
    // mfu.py:236 takes only the exact word "inference"; "serving" gets the training formula there.
    const bool serving = card.phase == "serving";
    const bool inference = card.phase == "inference" || (!reference && serving);
    if (!reference && !inference && card.phase != "training") {
        out.why = fmt::format("workload.model.phase is \"{}\": expected training, inference or serving", card.phase);
        return std::nullopt;
    }
    if (serving) {
        out.notes.emplace_back(reference ? "phase \"serving\": mfu.py applies the training formula to every phase but \"inference\""
                                         : "phase \"serving\" counted as inference (mfu.py --reference applies the training formula)");
    }
    return inference;
}

/// The step time tokens/s divides by, and what it is.
struct StepTime {
    double seconds = 0;
    std::string label;
};

/// FLOP/token × tokens/s ÷ peak FLOP/s into out.value, with the note that shows the terms;
/// out.why when the peak is not positive.
void apply_formula(const CardFacts& card, bool reference, bool inference, const StepTime& step, double peak, MetricValue& out) {
    const double n_total = *card.num_params;
    // `N_active or N` (mfu.py:229), in both phases: an MoE model is charged its active
    // parameters. The default mode also reads the num_active_params spelling, which mfu.py ignores.
    double n_eff = n_total;
    if (card.num_params_active && *card.num_params_active != 0) {
        n_eff = *card.num_params_active;
    } else if (!reference && card.num_active_params && *card.num_active_params != 0) {
        n_eff = *card.num_active_params;
        out.notes.emplace_back("num_active_params read as num_params_active (mfu.py reads only num_params_active)");
    }
    const double n_emb = card.num_params_embedding.value_or(0);
    const double layers = *card.num_layers;
    const double head_dim = *card.head_dim;
    const double heads = *card.num_heads;
    const double batch = reference ? or_one(card.batch_size) : card.batch_size.value_or(1);
    const double seq = reference ? or_one(card.seq_len) : card.seq_len.value_or(1);
    const double devices = reference ? or_one(card.total_count) : *card.total_count;
    const double peak_total = peak * 1e12 * devices;
    if (!(peak_total > 0)) {
        out.why = fmt::format("xpu_spec.total_count is {}: no positive peak FLOP/s (mfu.py:247-248)", devices);
        return;
    }
    const double attention = layers * head_dim * heads * seq;
    const double flop_per_token = inference ? 2 * (n_eff - n_emb) + 4 * attention : 6 * (n_eff - n_emb) + 12 * attention;
    const double tokens_per_s = batch * seq / step.seconds;
    double value = flop_per_token * tokens_per_s / peak_total * 100.0;
    if (reference) {
        value = python_round4(value); // mfu.py:250
    }
    out.value = value;
    out.notes.push_back(fmt::format("{} FLOP/token, {:.6g} tokens/s, step {:.6g} s ({}), peak {} TFLOP/s × {}", flop_per_token,
                                    tokens_per_s, step.seconds, step.label, peak, devices));
}

class MfuFold final : public MetricFold {
public:
    MfuFold(FoldInputs in, std::size_t ranks) : MetricFold(in, ranks), m_slots(ranks) {
        // The default mode's step time is avg_step_time's; fold it only where it may be asked.
        if (!this->in().reference() && this->in().card != nullptr && !this->in().card->latency_s) {
            m_step_time = fold_avg_step_time(std::move(in), ranks);
        }
    }

    void add(std::size_t index, const RankView& view) override {
        if (m_step_time) {
            m_step_time->add(index, view);
        }
        if (!in().reference() || in().card == nullptr || in().card->latency_s) {
            return;
        }
        const std::string name = view.trace().file.filename().string();
        if (!in().counted[index] || !(starts_with(name, "rank") || starts_with(name, "kineto"))) {
            return;
        }
        RankStep& slot = m_slots[index];
        slot.tool_file = true;
        if (!view.reference_reads_events()) {
            return;
        }
        std::vector<double> durations;
        for (const StepMarker& step : profiler_steps(view.trace()).inner()) {
            durations.push_back(step.dur);
        }
        if (!durations.empty()) {
            slot.mean_us = mean(durations);
        }
    }

    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    /// The card's batch latency, else the step markers' time (the tool's in --reference);
    /// nullopt (out.why set) when there is none or it is not positive.
    std::optional<StepTime> step_time(const std::vector<std::size_t>& order, MetricValue& out) const;

    /// mfu.py:194-226: the mean over rank files of each file's inner ProfilerStep#N mean, reading
    /// only the .json files select_json_files keeps whose names start with "rank" or "kineto".
    std::optional<double> tool_step_time_s(const std::vector<std::size_t>& order, std::string& why) const {
        std::vector<double> rank_means;
        bool any_file = false;
        for (const std::size_t k : order) {
            any_file = any_file || m_slots[k].tool_file;
            if (m_slots[k].mean_us) {
                rank_means.push_back(*m_slots[k].mean_us);
            }
        }
        if (!any_file) {
            why =
                "mfu.py reads only .json rank traces whose names start with \"rank\" or \"kineto\" (mfu.py:196-199), and none is here";
            return std::nullopt;
        }
        if (rank_means.empty()) {
            why = "no ProfilerStep#N step markers in the rank traces mfu.py reads (it reads no other step marker, mfu.py:207-223)";
            return std::nullopt;
        }
        return mean(rank_means) / 1e6;
    }

    std::vector<RankStep> m_slots;
    std::unique_ptr<MetricFold> m_step_time;
};

std::optional<StepTime> MfuFold::step_time(const std::vector<std::size_t>& order, MetricValue& out) const {
    const CardFacts& card = *in().card;
    std::optional<double> step_s;
    std::string step_label;
    if (card.latency_s) {
        // mfu.py:192 prefers the benchmark's batch latency to any trace marker; the default mode
        // does too: batch × seq_len tokens are the whole batch, not one execute_context step.
        step_s = card.latency_s;
        step_label = fmt::format("avg_latency of {}", card.latency_file->filename().string());
    } else if (in().reference()) {
        std::string why;
        step_s = tool_step_time_s(order, why);
        if (!step_s) {
            out.why = "no step time: " + why;
            return std::nullopt;
        }
        step_label = "inner ProfilerStep#N";
    } else {
        const MetricValue step = m_step_time->finish(order);
        if (!step.value) {
            out.why = "no step time: " + step.why;
            return std::nullopt;
        }
        step_s = step.value;
        step_label = step.basis;
    }
    if (!(*step_s > 0)) {
        out.why = fmt::format("no step time: {} is {} s, not positive", step_label, *step_s);
        return std::nullopt;
    }
    return StepTime{*step_s, step_label};
}

MetricValue MfuFold::finish(const std::vector<std::size_t>& order) {
    MetricValue out = start_value("mfu", "%");
    const CardFacts* card = in().card;
    if (card == nullptr) {
        out.why = "no workload card beside the traces (mfu needs model_arch, data and xpu_spec)";
        return out;
    }
    out.basis = "card " + card->file.filename().string();
    const bool reference = in().reference();
    out.why = card_problem(*card, reference);
    if (!out.why.empty()) {
        return out;
    }
    if (card->arch_at == "model") {
        out.notes.emplace_back("no workload.model.model_arch: the architecture is read from workload.model, as mfu.py:157 does");
    }
    const auto peak = peak_tflops(card->xpu_model);
    if (!peak) {
        out.why = fmt::format("no peak FLOP/s known for xpu_spec.model \"{}\" (known: nvidia_a100, nvidia_h100, tpu_v6e)",
                              card->xpu_model);
        return out;
    }
    const std::optional<bool> inference = inference_formula(*card, reference, out);
    if (!inference) {
        return out;
    }
    const std::optional<StepTime> step = step_time(order, out);
    if (!step) {
        return out;
    }
    apply_formula(*card, reference, *inference, *step, *peak, out);
    if (const std::string partial = partial_ranks(in()); out.value && !partial.empty()) {
        // FLOP/token, the global batch and total_count x peak are the card's; only the step time
        // is the traces', and a synchronous job's steps are one length on every rank.
        out.notes.push_back(fmt::format("partial: the step time is that of the traced {}; the FLOP, batch and every accelerator's "
                                        "peak are the card's, so this is the job's MFU",
                                        partial));
    }
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_mfu(FoldInputs in, std::size_t ranks) { return std::make_unique<MfuFold>(std::move(in), ranks); }

} // namespace harness::metrics
