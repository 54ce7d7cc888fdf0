// compute_comm_overlap (percent): per inner step, spans clipped to the step, communication and
// compute merged separately, overlap = |comm ∩ compute|; per rank Σ overlap ÷ Σ |comm| over the
// inner steps (a ratio of sums), then the mean over ranks.
#include "metrics/intervals.hpp"
#include "metrics/metric_functions.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace harness::metrics {

namespace {

struct StepOverlap {
    double overlap = 0;
    double comm = 0;
};

StepOverlap overlap_in_step(const SortedSpans& spans, double start, double end) {
    std::vector<Interval> comm;
    std::vector<Interval> compute;
    spans.for_candidates(start, end, [&](const ActivitySpan& span) {
        const double s = std::max(span.ts, start);
        const double e = std::min(span.ts + span.dur, end);
        if (s >= e) {
            return;
        }
        (span.comm ? comm : compute).push_back(Interval{s, e});
    });
    const bool both = !comm.empty() && !compute.empty();
    const std::vector<Interval> comm_merged = merge_intervals(std::move(comm));
    StepOverlap out;
    out.comm = total_length(comm_merged);
    if (both) {
        out.overlap = intersection_length(comm_merged, merge_intervals(std::move(compute)));
    }
    return out;
}

StepSelection steps_for(const RankView& view, MetricMode mode) {
    const RankTrace& trace = view.trace();
    if (mode == MetricMode::standard) {
        return standard_steps(trace);
    }
    if (view.basis() == Basis::xla_ops) {
        return xla_steps(trace);
    }
    for (StepSelection selection :
         {profiler_steps(trace), vllm_steps(trace), sglang_steps(trace, reference_sglang_step_for_overlap)}) {
        if (!selection.empty()) {
            return selection;
        }
    }
    return StepSelection{};
}

/// A rank's sums over its inner steps, or why it has none.
struct RankOverlap {
    enum class State : unsigned char { skipped, without_steps, without_spans, measured };
    State state = State::skipped;
    double overlap = 0;
    double comm = 0;
};

class OverlapFold final : public MetricFold {
public:
    OverlapFold(FoldInputs in, std::size_t ranks) : MetricFold(std::move(in), ranks), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        if (!in().counted[index] || (in().reference() && !view.reference_reads_events())) {
            return;
        }
        RankOverlap& slot = m_slots[index];
        const StepSelection steps = steps_for(view, in().mode);
        if (steps.empty()) {
            slot.state = RankOverlap::State::without_steps;
            return;
        }
        const ReferencePattern pattern = view.basis() == Basis::xla_ops ? ReferencePattern::xla_overlap : ReferencePattern::overlap;
        const SortedSpans spans(in().reference() ? view.reference_activity(pattern) : view.standard_activity());
        if (spans.empty()) {
            slot.state = RankOverlap::State::without_spans;
            return;
        }
        slot.state = RankOverlap::State::measured;
        for (const StepMarker& step : steps.inner()) {
            const StepOverlap one = overlap_in_step(spans, step.ts, step.ts + step.dur);
            slot.overlap += one.overlap;
            slot.comm += one.comm;
        }
    }

    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    std::vector<RankOverlap> m_slots;
};

MetricValue OverlapFold::finish(const std::vector<std::size_t>& order) {
    MetricValue out = start_value("compute_comm_overlap", "%");
    std::vector<double> ratios;
    std::size_t without_steps = 0;
    std::size_t without_spans = 0;
    std::size_t without_comm = 0;
    for (std::size_t r = 0; r < order.size(); ++r) {
        const RankOverlap& slot = m_slots[order[r]];
        switch (slot.state) {
        case RankOverlap::State::skipped: break;
        case RankOverlap::State::without_steps: ++without_steps; break;
        case RankOverlap::State::without_spans: ++without_spans; break;
        case RankOverlap::State::measured:
            if (slot.comm > 0) {
                ratios.push_back(slot.overlap / slot.comm * 100);
                out.per_rank[r] = ratios.back();
            } else {
                ++without_comm;
            }
            break;
        }
    }
    if (!ratios.empty()) {
        out.value = mean(ratios);
        if (without_comm > 0) {
            out.notes.push_back(
                fmt::format("{} rank(s) without communication in their inner steps are left out of the mean", without_comm));
        }
        if (const std::string partial = partial_ranks(in()); !partial.empty()) {
            // Each rank's ratio is measured on its own trace; the mean is of those at hand.
            out.notes.push_back(fmt::format("partial: the mean over the traced {} only; each rank's overlap is its own, and "
                                            "untraced ranks (other stages, experts) may overlap differently",
                                            partial));
        }
        return out;
    }
    if (without_steps + without_spans + without_comm == 0) {
        out.why = "no rank trace to read";
    } else if (without_comm > 0) {
        out.why = "no communication inside the inner steps of any rank (the ratio Σ overlap ÷ Σ communication is undefined)";
    } else if (without_spans > 0) {
        out.why = in().reference() ? "no GPU kernel events (the CCL-Bench tool measures kernels only)"
                                   : "no kernels or operators to measure";
    } else {
        out.why = "no step markers";
    }
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_compute_comm_overlap(FoldInputs in, std::size_t ranks) {
    return std::make_unique<OverlapFold>(std::move(in), ranks);
}

} // namespace harness::metrics
