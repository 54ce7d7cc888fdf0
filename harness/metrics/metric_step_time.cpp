// avg_step_time: mean duration of the inner steps, averaged over ranks (seconds).
#include "metrics/metric_functions.hpp"

#include <fmt/format.h>

namespace harness::metrics {

namespace {

constexpr double k_us_per_s = 1e6;

/// Mean inner-step duration in µs, or nothing when the selection is empty.
std::optional<double> inner_mean(const StepSelection& selection) {
    const std::vector<StepMarker> inner = selection.inner();
    if (inner.empty()) {
        return std::nullopt;
    }
    std::vector<double> durations;
    for (const StepMarker& step : inner) {
        durations.push_back(step.dur);
    }
    return mean(durations);
}

MetricValue standard(const MetricInputs& in) {
    MetricValue out = start_value(in, "avg_step_time", "s");
    std::vector<double> rank_means;
    std::string sources;
    for (std::size_t r = 0; r < in.ranks.size(); ++r) {
        const StepSelection steps = standard_steps(in.ranks[r].trace());
        if (const auto value = inner_mean(steps); in.counted[r] && value) {
            rank_means.push_back(*value);
            out.per_rank[r] = *value / k_us_per_s;
            if (sources.find(steps.source) == std::string::npos) {
                sources += sources.empty() ? steps.source : ", " + steps.source;
            }
        }
    }
    if (rank_means.empty()) {
        out.why = "no step markers in any rank (ProfilerStep#N, execute_context_*, run_batch, $core.py:331 step, StepMarker)";
        return out;
    }
    out.value = mean(rank_means) / k_us_per_s;
    out.basis = "steps: " + sources;
    return out;
}

/// avg_step_time.py: per rank three candidate families; the first family any rank has wins.
MetricValue reference(const MetricInputs& in) {
    MetricValue out = start_value(in, "avg_step_time", "s");
    struct Family {
        const char* label;
        std::vector<double> means;
        std::vector<std::optional<double>> per_rank;
    };
    std::vector<Family> families = {{"ProfilerStep#N", {}, {}}, {"execute_context_*", {}, {}}, {"run_batch", {}, {}}, {"$core.py:331 step", {}, {}}};
    for (auto& family : families) {
        family.per_rank.assign(in.ranks.size(), std::nullopt);
    }
    for (std::size_t r = 0; r < in.ranks.size(); ++r) {
        const RankView& view = in.ranks[r];
        if (!in.counted[r] || !view.reference_reads_events()) {
            continue;
        }
        const RankTrace& trace = view.trace();
        // The XLA path reads "$core.py:331 step" only (its wall-time ÷ iteration fallback is not reproduced).
        const StepSelection candidates[] = {profiler_steps(trace), vllm_steps(trace),
                                            sglang_steps(trace, reference_sglang_step_for_step_time),
                                            view.basis() == Basis::xla_ops ? xla_steps(trace) : StepSelection{}};
        for (std::size_t f = 0; f < families.size(); ++f) {
            if (f == 3 && candidates[3].source != "$core.py:331 step") {
                continue;
            }
            if (const auto value = inner_mean(candidates[f])) {
                families[f].means.push_back(*value);
                families[f].per_rank[r] = *value / k_us_per_s;
            }
        }
    }
    for (const Family& family : families) {
        if (!family.means.empty()) {
            out.value = mean(family.means) / k_us_per_s;
            out.per_rank = family.per_rank;
            out.basis = fmt::format("steps: {}", family.label);
            return out;
        }
    }
    out.why = "no ProfilerStep#N, execute_context_* or run_batch step markers the CCL-Bench tool reads";
    return out;
}

} // namespace

MetricValue metric_avg_step_time(const MetricInputs& in) { return in.reference() ? reference(in) : standard(in); }

} // namespace harness::metrics
