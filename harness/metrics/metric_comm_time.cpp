// total_communication_time (seconds per step): communication spans merged, clipped to
// [start of the first inner step, end of the last inner step], total ÷ number of inner steps;
// mean over ranks.
#include "metrics/intervals.hpp"
#include "metrics/metric_functions.hpp"

#include <algorithm>

namespace harness::metrics {

namespace {

constexpr double k_us_per_s = 1e6;

double clipped_comm(const std::vector<ActivitySpan>& spans, double start, double end) {
    std::vector<Interval> comm;
    for (const ActivitySpan& span : spans) {
        if (!span.comm) {
            continue;
        }
        const double s = std::max(span.ts, start);
        const double e = std::min(span.ts + span.dur, end);
        if (s < e) {
            comm.push_back(Interval{s, e});
        }
    }
    return total_length(merge_intervals(std::move(comm)));
}

/// total_communication_time.py, including what it does with two steps or fewer (the whole
/// trace's communication, unclipped, divided by the step count) and with none (not divided).
std::optional<double> reference_rank(const RankView& view) {
    const std::vector<ActivitySpan> spans = view.reference_activity(ReferencePattern::total_time);
    if (spans.empty()) {
        return std::nullopt;
    }
    std::vector<Interval> comm;
    for (const ActivitySpan& span : spans) {
        if (span.comm) {
            comm.push_back(Interval{span.ts, span.ts + span.dur});
        }
    }
    double total = total_length(merge_intervals(comm)) / k_us_per_s;
    const StepSelection steps = profiler_steps(view.trace());
    if (steps.empty()) {
        return total;
    }
    const std::vector<StepMarker> inner = steps.inner();
    if (steps.steps.size() > 2) {
        total = clipped_comm(spans, inner.front().ts, inner.back().ts + inner.back().dur) / k_us_per_s;
    }
    return total / static_cast<double>(inner.size());
}

std::optional<double> standard_rank(const RankView& view) {
    const StepSelection steps = standard_steps(view.trace());
    if (steps.empty() || view.standard_activity().empty()) {
        return std::nullopt;
    }
    const std::vector<StepMarker> inner = steps.inner();
    double start = inner.front().ts;
    double end = inner.front().ts + inner.front().dur;
    for (const StepMarker& step : inner) {
        start = std::min(start, step.ts);
        end = std::max(end, step.ts + step.dur);
    }
    return clipped_comm(view.standard_activity(), start, end) / k_us_per_s / static_cast<double>(inner.size());
}

} // namespace

MetricValue metric_total_communication_time(const MetricInputs& in) {
    MetricValue out = start_value(in, "total_communication_time", "s");
    std::vector<double> rank_values;
    bool any_spans = false;
    for (std::size_t r = 0; r < in.ranks.size(); ++r) {
        const RankView& view = in.ranks[r];
        if (!in.counted[r] || (in.reference() && !view.reference_reads_events())) {
            continue;
        }
        if (in.reference() && view.basis() == Basis::xla_ops) {
            out.why = "not reproduced for XLA traces (the CCL-Bench TPU path delegates to comm_time-group-21 and the card's iteration count)";
            return out;
        }
        any_spans = any_spans || view.basis() != Basis::none;
        const std::optional<double> value = in.reference() ? reference_rank(view) : standard_rank(view);
        if (value) {
            rank_values.push_back(*value);
            out.per_rank[r] = value;
        }
    }
    if (!rank_values.empty()) {
        out.value = mean(rank_values);
        return out;
    }
    if (in.reference()) {
        out.why = "no GPU kernel events (the CCL-Bench tool measures kernels only)";
    } else {
        out.why = any_spans ? "no step markers: a time per step needs steps" : "no kernels or operators to measure";
    }
    return out;
}

} // namespace harness::metrics
