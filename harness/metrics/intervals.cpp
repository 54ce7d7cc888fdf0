#include "metrics/intervals.hpp"

#include <algorithm>

namespace harness::metrics {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
    std::sort(intervals.begin(), intervals.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start || (a.start == b.start && a.end < b.end); });
    std::vector<Interval> merged;
    for (const Interval& next : intervals) {
        if (!merged.empty() && next.start <= merged.back().end) {
            merged.back().end = std::max(merged.back().end, next.end);
        } else {
            merged.push_back(next);
        }
    }
    return merged;
}

double total_length(const std::vector<Interval>& merged) {
    double total = 0;
    for (const Interval& interval : merged) {
        total += interval.end - interval.start;
    }
    return total;
}

double intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    double total = 0;
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < a.size() && j < b.size()) {
        const double start = std::max(a[i].start, b[j].start);
        const double end = std::min(a[i].end, b[j].end);
        if (start < end) {
            total += end - start;
        }
        if (a[i].end < b[j].end) {
            ++i;
        } else {
            ++j;
        }
    }
    return total;
}

} // namespace harness::metrics
