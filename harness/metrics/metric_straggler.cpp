// straggler (ratio): (max − min) ÷ max of the ranks' total communication time. The default mode
// takes the union of each rank's communication spans; the reference sums the durations of the
// kernels total_communication_time's pattern matches.
#include "metrics/intervals.hpp"
#include "metrics/metric_functions.hpp"

#include <algorithm>

namespace harness::metrics {

MetricValue metric_straggler(const MetricInputs& in) {
    MetricValue out = start_value(in, "straggler", "ratio");
    std::vector<double> times;
    for (std::size_t r = 0; r < in.ranks.size(); ++r) {
        const RankView& view = in.ranks[r];
        if (!in.counted[r] || (in.reference() && !view.reference_reads_events()) || view.basis() == Basis::none) {
            continue;
        }
        if (in.reference() && view.basis() != Basis::gpu_kernels) {
            continue;
        }
        double total = 0;
        if (in.reference()) {
            for (const ActivitySpan& span : view.reference_activity(ReferencePattern::total_time)) {
                total += span.comm ? span.dur : 0;
            }
        } else {
            std::vector<Interval> comm;
            for (const ActivitySpan& span : view.standard_activity()) {
                if (span.comm) {
                    comm.push_back(Interval{span.ts, span.ts + span.dur});
                }
            }
            total = total_length(merge_intervals(std::move(comm)));
        }
        times.push_back(total / 1e6);
        out.per_rank[r] = times.back();
    }
    if (times.size() < 2) {
        out.why = times.empty() ? (in.reference() ? "no GPU kernel events" : "no kernels or operators to measure")
                                : "one rank: a straggler needs at least two";
        return out;
    }
    const auto [low, high] = std::minmax_element(times.begin(), times.end());
    if (*high <= 0) {
        out.why = "no communication in any rank";
        return out;
    }
    out.value = (*high - *low) / *high;
    out.notes.push_back("per_rank: each rank's total communication time in seconds");
    return out;
}

} // namespace harness::metrics
