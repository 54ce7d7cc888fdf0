// total_communication_time (seconds per step): communication spans merged, clipped to
// [start of the first inner step, end of the last inner step], total ÷ number of inner steps;
// mean over ranks.
#include "metrics/intervals.hpp"
#include "metrics/metric_functions.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

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

/// Seconds per step by collective_operation(), each operation's spans merged on their own.
std::map<std::string, double> by_collective(const RankView& view, double start, double end, double steps) {
    std::map<std::string, std::vector<ActivitySpan>> spans;
    for (const ActivitySpan& span : view.standard_activity()) {
        if (span.comm) {
            spans[collective_operation(view.trace().names.text(span.name))].push_back(span);
        }
    }
    std::map<std::string, double> out;
    for (const auto& [operation, list] : spans) {
        out[operation] = clipped_comm(list, start, end) / k_us_per_s / steps;
    }
    return out;
}

std::optional<double> standard_rank(const RankView& view, std::map<std::string, double>& operations) {
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
    operations = by_collective(view, start, end, static_cast<double>(inner.size()));
    return clipped_comm(view.standard_activity(), start, end) / k_us_per_s / static_cast<double>(inner.size());
}

struct RankCommTime {
    enum class State : unsigned char { skipped, xla_reference, read };
    State state = State::skipped;
    bool spans = false; ///< read: the rank has a basis to measure
    std::optional<double> value;
    std::map<std::string, double> operations; ///< default mode: s per step by collective operation
};

class CommTimeFold final : public MetricFold {
public:
    CommTimeFold(FoldInputs in, std::size_t ranks) : MetricFold(std::move(in), ranks), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        if (!in().counted[index] || (in().reference() && !view.reference_reads_events())) {
            return;
        }
        RankCommTime& slot = m_slots[index];
        if (in().reference() && view.basis() == Basis::xla_ops) {
            slot.state = RankCommTime::State::xla_reference;
            return;
        }
        slot.state = RankCommTime::State::read;
        slot.spans = view.basis() != Basis::none;
        slot.value = in().reference() ? reference_rank(view) : standard_rank(view, slot.operations);
    }

    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    std::vector<RankCommTime> m_slots;
};

MetricValue CommTimeFold::finish(const std::vector<std::size_t>& order) {
    MetricValue out = start_value("total_communication_time", "s");
    std::vector<double> rank_values;
    bool any_spans = false;
    for (std::size_t r = 0; r < order.size(); ++r) {
        const RankCommTime& slot = m_slots[order[r]];
        if (slot.state == RankCommTime::State::xla_reference) {
            out.why = "not reproduced for XLA traces (the CCL-Bench TPU path delegates to comm_time-group-21 and the card's iteration "
                      "count)";
            return out;
        }
        if (slot.state != RankCommTime::State::read) {
            continue;
        }
        any_spans = any_spans || slot.spans;
        if (slot.value) {
            rank_values.push_back(*slot.value);
            out.per_rank[r] = slot.value;
        }
    }
    if (!rank_values.empty()) {
        out.value = mean(rank_values);
        // The mean over the ranks that have a value, as for the total.
        std::map<std::string, double> sums;
        for (const std::size_t index : order) {
            const RankCommTime& slot = m_slots[index];
            if (slot.state == RankCommTime::State::read && slot.value) {
                for (const auto& [operation, seconds] : slot.operations) {
                    sums[operation] += seconds;
                }
            }
        }
        for (const auto& [operation, sum] : sums) {
            out.time_by_collective.emplace_back(operation, sum / static_cast<double>(rank_values.size()));
        }
        if (const std::string partial = partial_ranks(in()); !partial.empty()) {
            // A rank's communication time is read from its own kernels; it needs no other rank.
            out.notes.push_back(fmt::format("partial: the mean over the traced {} only; each rank's communication time is "
                                            "measured on its own trace",
                                            partial));
        }
        return out;
    }
    if (in().reference()) {
        out.why = "no GPU kernel events (the CCL-Bench tool measures kernels only)";
    } else {
        out.why = any_spans ? "no step markers: a time per step needs steps" : "no kernels or operators to measure";
    }
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_total_communication_time(FoldInputs in, std::size_t ranks) {
    return std::make_unique<CommTimeFold>(std::move(in), ranks);
}

} // namespace harness::metrics
