// communication_fraction (percent): per inner step, over the spans touching the step window
// (ts + dur > start and ts < end), unclipped communication time ÷ unclipped time of all spans;
// mean over inner steps, then over ranks. Without step markers: over all spans. Host operators
// nest (aten::linear holds aten::addmm), so on CPU-only traces both times are unions, not sums.
#include "metrics/intervals.hpp"
#include "metrics/metric_functions.hpp"

#include <fmt/format.h>

namespace harness::metrics {

namespace {

struct Times {
    double all = 0;
    double comm = 0;
};

template <class Spans> Times times_of(const Spans& spans, bool unions) {
    Times out;
    if (!unions) {
        for (const ActivitySpan& span : spans) {
            out.all += span.dur;
            out.comm += span.comm ? span.dur : 0;
        }
        return out;
    }
    std::vector<Interval> all;
    std::vector<Interval> comm;
    for (const ActivitySpan& span : spans) {
        all.push_back(Interval{span.ts, span.ts + span.dur});
        if (span.comm) {
            comm.push_back(Interval{span.ts, span.ts + span.dur});
        }
    }
    out.all = total_length(merge_intervals(std::move(all)));
    out.comm = total_length(merge_intervals(std::move(comm)));
    return out;
}

struct RankFraction {
    enum class State : unsigned char { skipped, xla_reference, without_spans, measured };
    State state = State::skipped;
    std::optional<double> value; ///< measured: percent, when there was kernel time
};

class FractionFold final : public MetricFold {
public:
    FractionFold(FoldInputs in, std::size_t ranks) : MetricFold(std::move(in), ranks), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        if (!in().counted[index] || (in().reference() && !view.reference_reads_events())) {
            return;
        }
        RankFraction& slot = m_slots[index];
        if (in().reference() && view.basis() == Basis::xla_ops) {
            slot.state = RankFraction::State::xla_reference;
            return;
        }
        const SortedSpans spans(in().reference() ? view.reference_activity(ReferencePattern::fraction) : view.standard_activity());
        if (spans.empty()) {
            slot.state = RankFraction::State::without_spans;
            return;
        }
        slot.state = RankFraction::State::measured;
        const bool unions = !in().reference() && view.basis() == Basis::host_ops;
        // The tool reads ProfilerStep#N only; the default mode uses the same steps everywhere.
        const StepSelection steps = in().reference() ? profiler_steps(view.trace()) : standard_steps(view.trace());
        if (steps.empty()) {
            const Times times = times_of(spans.spans(), unions);
            if (times.all > 0) {
                slot.value = times.comm / times.all * 100.0;
            }
            return;
        }
        std::vector<double> fractions;
        for (const StepMarker& step : steps.inner()) {
            const double start = step.ts;
            const double end = step.ts + step.dur;
            std::vector<ActivitySpan> touching;
            spans.for_candidates(start, end, [&](const ActivitySpan& span) {
                if (span.ts + span.dur > start && span.ts < end) {
                    touching.push_back(span);
                }
            });
            const Times times = times_of(touching, unions);
            if (times.all > 0) {
                fractions.push_back(times.comm / times.all * 100.0);
            }
        }
        if (!fractions.empty()) {
            slot.value = mean(fractions);
        }
    }

    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    std::vector<RankFraction> m_slots;
};

MetricValue FractionFold::finish(const std::vector<std::size_t>& order) {
    MetricValue out = start_value("communication_fraction", "%");
    std::vector<double> rank_values;
    bool any_spans = false;
    for (std::size_t r = 0; r < order.size(); ++r) {
        const RankFraction& slot = m_slots[order[r]];
        if (slot.state == RankFraction::State::xla_reference) {
            out.why = "not reproduced for XLA traces (the CCL-Bench TPU path reads device_duration_ps and hlo_category)";
            return out;
        }
        if (slot.state != RankFraction::State::measured) {
            continue;
        }
        any_spans = true;
        if (slot.value) {
            rank_values.push_back(*slot.value);
            out.per_rank[r] = rank_values.back();
        }
    }
    if (!rank_values.empty()) {
        out.value = mean(rank_values);
        if (!in().reference() && out.basis == basis_label(Basis::host_ops)) {
            out.notes.emplace_back("host operators nest, so both times are unions of spans rather than sums");
        }
        if (const std::string partial = partial_ranks(in()); !partial.empty()) {
            // A per-rank ratio of that rank's own kernels: the traced ranks' mean, said to be so.
            out.notes.push_back(fmt::format("partial: the mean over the traced {} only; each rank's fraction is of its own "
                                            "kernels, and untraced ranks may spend another share communicating",
                                            partial));
        }
        return out;
    }
    out.why = any_spans ? "no kernel time inside any inner step"
                        : (in().reference() ? "no GPU kernel events" : "no kernels or operators to measure");
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_communication_fraction(FoldInputs in, std::size_t ranks) {
    return std::make_unique<FractionFold>(std::move(in), ranks);
}

} // namespace harness::metrics
