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
    for (StepSelection selection : {profiler_steps(trace), vllm_steps(trace), sglang_steps(trace, reference_sglang_step_for_overlap)}) {
        if (!selection.empty()) {
            return selection;
        }
    }
    return StepSelection{};
}

} // namespace

MetricValue metric_compute_comm_overlap(const MetricInputs& in) {
    MetricValue out = start_value(in, "compute_comm_overlap", "%");
    std::vector<double> ratios;
    std::size_t without_steps = 0;
    std::size_t without_spans = 0;
    std::size_t without_comm = 0;
    for (std::size_t r = 0; r < in.ranks.size(); ++r) {
        const RankView& view = in.ranks[r];
        if (!in.counted[r] || (in.reference() && !view.reference_reads_events())) {
            continue;
        }
        const StepSelection steps = steps_for(view, in.mode);
        if (steps.empty()) {
            ++without_steps;
            continue;
        }
        const ReferencePattern pattern = view.basis() == Basis::xla_ops ? ReferencePattern::xla_overlap : ReferencePattern::overlap;
        const SortedSpans spans(in.reference() ? view.reference_activity(pattern) : view.standard_activity());
        if (spans.empty()) {
            ++without_spans;
            continue;
        }
        double overlap = 0;
        double comm = 0;
        for (const StepMarker& step : steps.inner()) {
            const StepOverlap one = overlap_in_step(spans, step.ts, step.ts + step.dur);
            overlap += one.overlap;
            comm += one.comm;
        }
        if (comm > 0) {
            ratios.push_back(overlap / comm * 100);
            out.per_rank[r] = ratios.back();
        } else {
            ++without_comm;
        }
    }
    if (!ratios.empty()) {
        out.value = mean(ratios);
        if (without_comm > 0) {
            out.notes.push_back(fmt::format("{} rank(s) without communication in their inner steps are left out of the mean", without_comm));
        }
        return out;
    }
    if (without_steps + without_spans + without_comm == 0) {
        out.why = "no rank trace to read";
    } else if (without_comm > 0) {
        out.why = "no communication inside the inner steps of any rank (the ratio Σ overlap ÷ Σ communication is undefined)";
    } else if (without_spans > 0) {
        out.why = in.reference() ? "no GPU kernel events (the CCL-Bench tool measures kernels only)" : "no kernels or operators to measure";
    } else {
        out.why = "no step markers";
    }
    return out;
}

} // namespace harness::metrics
