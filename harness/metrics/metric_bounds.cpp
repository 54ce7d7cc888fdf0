#include "metrics/metric_bounds.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <set>

namespace harness::metrics {

namespace {

/// Whether `word` reads as a device model: letters, then a digit (a100, v100, h100, mi250x).
bool model_like(const std::string& word) {
    std::size_t i = 0;
    while (i < word.size() && std::isalpha(static_cast<unsigned char>(word[i])) != 0) {
        ++i;
    }
    return i > 0 && i < word.size() && std::isdigit(static_cast<unsigned char>(word[i])) != 0;
}

/// A device name's words, lowercased: "NVIDIA A100-SXM4-40GB" -> nvidia, a100, sxm4, 40gb.
std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> out(1);
    for (const char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
            out.back().push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        } else if (!out.back().empty()) {
            out.emplace_back();
        }
    }
    if (out.back().empty()) {
        out.pop_back();
    }
    return out;
}

/// The model part of a card's GPU name: nvidia_a100_80gb -> a100, amd_mi250x -> mi250x; "" for a
/// name without one (tpu_v6e is checked nowhere here: XLA traces carry no device names).
std::string gpu_model(const std::string& card_model) {
    const std::string lower = to_lower(trim(card_model));
    std::string rest;
    for (const char* vendor : {"nvidia_", "amd_"}) {
        if (starts_with(lower, vendor)) {
            rest = lower.substr(std::string_view(vendor).size());
        }
    }
    const std::string model = rest.substr(0, rest.find('_'));
    // dgx or "spark" names no model.
    return model_like(model) ? model : std::string();
}

} // namespace

std::string implausible_value(const std::string& name, double v) {
    if (name == "mfu" && v > 100) {
        return fmt::format("{:.4g} % is above 100 %: more FLOP/s than the card's devices can do, so the step time, the "
                           "model's FLOPs or the card's xpu_spec does not describe this run",
                           v);
    }
    if ((name == "mfu" || name == "communication_fraction" || name == "compute_comm_overlap") && (v < 0 || v > 100)) {
        return fmt::format("{:.4g} % is outside 0..100 %", v);
    }
    if (name == "avg_step_time" && !(v > 0)) {
        return fmt::format("a step of {} s: no step takes no time", v);
    }
    if (name == "straggler" && (v < 0 || v > 1)) {
        return fmt::format("{:.4g} is outside 0..1 ((max - min) / max)", v);
    }
    if ((name == "total_communication_time" || name == "collective_volume") && v < 0) {
        return fmt::format("{} is negative", v);
    }
    return {};
}

std::string device_mismatch(const std::string& card_model, const std::vector<std::string>& devices) {
    const std::string model = gpu_model(card_model);
    if (model.empty() || devices.empty()) {
        return {};
    }
    // A device name that names no model ("AMD Radeon Graphics", ROCm's for an MI250) cannot
    // disagree; one that names models, none of them the card's, does.
    std::set<std::string> other;
    for (const std::string& device : devices) {
        const std::vector<std::string> words = words_of(device);
        const bool names_a_model = std::any_of(words.begin(), words.end(), model_like);
        if (names_a_model && std::find(words.begin(), words.end(), model) == words.end()) {
            other.insert(device);
        }
    }
    if (other.empty()) {
        return {};
    }
    return fmt::format("the traces ran on {} (their deviceProperties), but the card's xpu_spec.model is {}: the card does "
                       "not describe this run, and mfu's peak comes from the card",
                       join(std::vector<std::string>(other.begin(), other.end()), ", "), card_model);
}

void check_bounds(MetricsReport& report, const std::string& card_model) {
    std::vector<std::string> devices;
    for (const RankSummary& rank : report.ranks) {
        devices.insert(devices.end(), rank.devices.begin(), rank.devices.end());
    }
    report.device_mismatch = device_mismatch(card_model, devices);
    if (!report.device_mismatch.empty()) {
        report.notes.push_back(report.device_mismatch);
    }
    for (MetricValue& metric : report.metrics) {
        if (!metric.value) {
            continue;
        }
        metric.implausible = implausible_value(metric.metric, *metric.value);
        if (!metric.implausible.empty() && metric.metric == "mfu" && !report.device_mismatch.empty()) {
            metric.implausible += "; " + report.device_mismatch;
        }
    }
}

} // namespace harness::metrics
