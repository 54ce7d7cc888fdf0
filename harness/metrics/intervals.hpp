#pragma once
// Interval arithmetic on span lists, done the way the CCL-Bench tools do it (sort by start then
// end, merge when the next start is <= the current end, sum in order) so that sums of
// floating-point lengths come out the same.
#include <vector>

namespace harness::metrics {

struct Interval {
    double start = 0;
    double end = 0;
};

/// Sorts `intervals` and merges overlapping and touching ones.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);

/// Σ (end − start) over already merged intervals.
double total_length(const std::vector<Interval>& merged);

/// Length of the intersection of two merged lists.
double intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

} // namespace harness::metrics
