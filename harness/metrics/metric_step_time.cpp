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

constexpr std::size_t k_families = 4;
constexpr const char* k_family_labels[k_families] = {"ProfilerStep#N", "execute_context_*", "run_batch", "$core.py:331 step"};

/// A rank's inner-step means, in µs: the default mode's one selection, or each family the tool tries.
struct RankSteps {
    std::optional<double> standard;
    std::vector<double> durations; ///< the default mode's inner steps, s
    std::string source;
    std::optional<double> families[k_families];
};

class StepTimeFold final : public MetricFold {
public:
    StepTimeFold(FoldInputs in, std::size_t ranks) : MetricFold(std::move(in), ranks), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        if (!in().counted[index]) {
            return;
        }
        RankSteps& slot = m_slots[index];
        const RankTrace& trace = view.trace();
        if (!in().reference()) {
            StepSelection steps = standard_steps(trace);
            slot.standard = inner_mean(steps);
            for (const StepMarker& step : steps.inner()) {
                slot.durations.push_back(step.dur / k_us_per_s);
            }
            slot.source = std::move(steps.source);
            return;
        }
        if (!view.reference_reads_events()) {
            return;
        }
        // The XLA path reads "$core.py:331 step" only (its wall-time ÷ iteration fallback is not reproduced).
        const StepSelection candidates[k_families] = {profiler_steps(trace), vllm_steps(trace),
                                                      sglang_steps(trace, reference_sglang_step_for_step_time),
                                                      view.basis() == Basis::xla_ops ? xla_steps(trace) : StepSelection{}};
        for (std::size_t f = 0; f < k_families; ++f) {
            if (f == 3 && candidates[3].source != "$core.py:331 step") {
                continue;
            }
            slot.families[f] = inner_mean(candidates[f]);
        }
    }

    MetricValue finish(const std::vector<std::size_t>& order) override {
        return in().reference() ? reference(order) : standard(order);
    }

private:
    MetricValue standard(const std::vector<std::size_t>& order) const {
        MetricValue out = start_value("avg_step_time", "s");
        std::vector<double> rank_means;
        out.per_step.resize(order.size());
        std::string sources;
        for (std::size_t r = 0; r < order.size(); ++r) {
            const RankSteps& slot = m_slots[order[r]];
            if (in().counted[order[r]] && slot.standard) {
                rank_means.push_back(*slot.standard);
                out.per_rank[r] = *slot.standard / k_us_per_s;
                out.per_step[r] = slot.durations;
                if (sources.find(slot.source) == std::string::npos) {
                    sources += sources.empty() ? slot.source : ", " + slot.source;
                }
            }
        }
        if (rank_means.empty()) {
            out.why = "no step markers in any rank (ProfilerStep#N, execute_context_*, run_batch, $core.py:331 step, StepMarker)";
            return out;
        }
        out.value = mean(rank_means) / k_us_per_s;
        out.basis = "steps: " + sources;
        if (const std::string partial = partial_ranks(in()); !partial.empty()) {
            // The ranks of a synchronous job meet at every collective, so one rank's steps last
            // as long as the job's: a subset times the job.
            out.notes.push_back(fmt::format("partial: the mean over the traced {}; every rank waits for the others at each "
                                            "step's collectives, so a traced rank's steps are the job's",
                                            partial));
        }
        return out;
    }

    /// avg_step_time.py: per rank three candidate families; the first family any rank has wins.
    MetricValue reference(const std::vector<std::size_t>& order) const {
        MetricValue out = start_value("avg_step_time", "s");
        for (std::size_t f = 0; f < k_families; ++f) {
            std::vector<double> means;
            std::vector<std::optional<double>> per_rank(order.size(), std::nullopt);
            for (std::size_t r = 0; r < order.size(); ++r) {
                if (const std::optional<double>& value = m_slots[order[r]].families[f]) {
                    means.push_back(*value);
                    per_rank[r] = *value / k_us_per_s;
                }
            }
            if (!means.empty()) {
                out.value = mean(means) / k_us_per_s;
                out.per_rank = std::move(per_rank);
                out.basis = fmt::format("steps: {}", k_family_labels[f]);
                return out;
            }
        }
        out.why = "no ProfilerStep#N, execute_context_* or run_batch step markers the CCL-Bench tool reads";
        return out;
    }

    std::vector<RankSteps> m_slots;
};

} // namespace

std::unique_ptr<MetricFold> fold_avg_step_time(FoldInputs in, std::size_t ranks) {
    return std::make_unique<StepTimeFold>(std::move(in), ranks);
}

} // namespace harness::metrics
