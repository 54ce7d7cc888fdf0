// mfu (percent): FLOP/token × tokens/s ÷ (total_count × peak FLOP/s), with
//   training:  FLOP/token = 6(N_active − N_emb) + 12·L·H·Q·S
//   inference: FLOP/token = 2(N − N_emb) + 4·L·H·Q·S
// tokens/s = batch_size × seq_len ÷ avg_step_time; peaks A100 312, H100 989, TPU v6e 918 TFLOP/s.
#include "metrics/metric_functions.hpp"

#include <cctype>
#include <cmath>
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

} // namespace

MetricValue metric_mfu(const MetricInputs& in) {
    MetricValue out = start_value(in, "mfu", "%");
    const CardFacts* card = in.card;
    if (card == nullptr) {
        out.why = "no workload card beside the traces (mfu needs model_arch, data and xpu_spec)";
        return out;
    }
    out.basis = "card " + card->file.filename().string();
    if (!card->has_model_arch) {
        out.why = fmt::format("{}: workload.model.model_arch is missing", card->file.string());
        return out;
    }
    const bool reference = in.reference();
    // The tool defaults what the card leaves out (batch 1, seq_len 1, one device); the default
    // mode says what is missing instead.
    const std::string missing = missing_list({
        {"model_arch.num_params", card->num_params.has_value()},
        {"model_arch.num_layers", card->num_layers.has_value()},
        {"model_arch.head_dim", card->head_dim.has_value()},
        {"model_arch.num_heads", card->num_heads.has_value()},
        {"data.batch_size", reference || card->batch_size.has_value()},
        {"data.seq_len", reference || card->seq_len.has_value()},
        {"xpu_spec.total_count (> 0)", reference || card->total_count.value_or(0) > 0},
    });
    if (!missing.empty()) {
        out.why = fmt::format("{}: the card lacks {}", card->file.string(), missing);
        return out;
    }
    const auto peak = peak_tflops(card->xpu_model);
    if (!peak) {
        out.why = fmt::format("no peak FLOP/s known for xpu_spec.model \"{}\" (known: nvidia_a100, nvidia_h100, tpu_v6e)", card->xpu_model);
        return out;
    }
    const bool inference = card->phase == "inference" || card->phase == "serving";
    if (!reference && !inference && card->phase != "training") {
        out.why = fmt::format("workload.model.phase is \"{}\": expected training or inference", card->phase);
        return out;
    }
    MetricValue step = metric_avg_step_time(in);
    if (reference && step.basis != "steps: ProfilerStep#N") {
        step.value.reset();  // mfu.py reads ProfilerStep#N only
    }
    if (!step.value || *step.value <= 0) {
        out.why = "no step time: " + (step.why.empty() ? std::string("mfu.py reads ProfilerStep#N step markers only") : step.why);
        return out;
    }
    const double n_total = *card->num_params;
    // The default mode charges MoE models their active parameters in both phases.
    const double n_active = card->num_params_active.value_or(n_total);
    const double n_emb = card->num_params_embedding.value_or(0);
    const double layers = *card->num_layers;
    const double head_dim = *card->head_dim;
    const double heads = *card->num_heads;
    const double batch = card->batch_size.value_or(1);
    const double seq = card->seq_len.value_or(1);
    const double devices = card->total_count.value_or(0) > 0 ? *card->total_count : 1;
    const double attention = layers * head_dim * heads * seq;
    const double flop_per_token = inference ? 2 * ((reference ? n_total : n_active) - n_emb) + 4 * attention
                                            : 6 * (n_active - n_emb) + 12 * attention;
    const double tokens_per_s = batch * seq / *step.value;
    double value = flop_per_token * tokens_per_s / (*peak * 1e12 * devices) * 100.0;
    if (reference) {
        value = std::round(value * 1e4) / 1e4;  // mfu.py rounds to 4 decimals
    }
    out.value = value;
    out.notes.push_back(fmt::format("{} FLOP/token, {:.6g} tokens/s, step {:.6g} s, peak {} TFLOP/s × {}", flop_per_token,
                                    tokens_per_s, *step.value, *peak, devices));
    return out;
}

} // namespace harness::metrics
