// straggler (ratio): (max − min) ÷ max of the ranks' total communication time. The default mode
// takes the union of each rank's communication spans. The reference is CCL-Bench's
// tools/straggler (straggler_metrics.py, _common.py) bug for bug: only files named
// rank*_trace.json, only kernels named ncclDevKernel_*, durations summed per (file, pid) group,
// and 0.0 (not "does not apply") when there are fewer than two groups. Over a partial set of ranks
// (the card's metric_source.ranks_present) the default mode says n/a: it needs every rank.
#include "metrics/intervals.hpp"
#include "metrics/metric_functions.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <utility>

namespace harness::metrics {

namespace {

constexpr std::string_view k_tool_prefix = "nccldevkernel_";

/// _common.py:8 globs rank*_trace.json in the directory; fnmatch is case-sensitive on POSIX, so
/// Rank0_trace.json, rank0_trace.json.gz and the canonical kineto_trace_0.json are never read.
bool tool_globs(const fs::path& file) {
    const std::string name = file.filename().string();
    return name.size() >= std::string_view("rank_trace.json").size() && starts_with(name, "rank") && ends_with(name, "_trace.json");
}

/// _common.py:33-35: the lowercased name starts with "nccldevkernel_".
bool tool_counts(const std::string& name) {
    return name.size() >= k_tool_prefix.size() && to_lower(std::string_view(name).substr(0, k_tool_prefix.size())) == k_tool_prefix;
}

std::string file_list(const FoldInputs& in, const std::vector<std::size_t>& order) {
    std::vector<std::string> names;
    for (const std::size_t k : order) {
        names.push_back(in.fact(k).file.filename().string());
    }
    constexpr std::size_t k_shown = 3;
    std::string out;
    for (std::size_t k = 0; k < names.size() && k < k_shown; ++k) {
        out += (k == 0 ? "" : ", ") + names[k];
    }
    return names.size() > k_shown ? out + fmt::format(", ... ({} files)", names.size()) : out;
}

struct RankStraggler {
    bool globbed = false;            ///< reference: the tool's glob takes the file
    std::map<NameId, double> groups; ///< reference: ncclDevKernel_* time per pid
    std::optional<double> time_s;    ///< reference: the file's ncclDevKernel_* time; default: merged comm time
};

class StragglerFold final : public MetricFold {
public:
    StragglerFold(FoldInputs in, std::size_t ranks) : MetricFold(std::move(in), ranks), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        if (in().reference()) {
            add_reference(m_slots[index], view);
            return;
        }
        if (!in().counted[index] || view.basis() == Basis::none) {
            return;
        }
        std::vector<Interval> comm;
        for (const ActivitySpan& span : view.standard_activity()) {
            if (span.comm) {
                comm.push_back(Interval{span.ts, span.ts + span.dur});
            }
        }
        m_slots[index].time_s = total_length(merge_intervals(std::move(comm))) / 1e6;
    }

    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    static void add_reference(RankStraggler& slot, const RankView& view);
    MetricValue finish_reference(const std::vector<std::size_t>& order) const;

    std::vector<RankStraggler> m_slots;
};

void StragglerFold::add_reference(RankStraggler& slot, const RankView& view) {
    // Every file the glob matches, not the sample of 16 the other tools draw: the straggler
    // tool does not sample.
    if (!tool_globs(view.trace().file)) {
        return;
    }
    slot.globbed = true;
    if (!view.reference_reads_events()) {
        return;
    }
    const NameTable& names = view.trace().names;
    std::vector<signed char> counts(names.size(), -1); // per name id: -1 unknown, else 0/1
    double file_total = 0;
    bool any = false;
    for (const Span& span : view.trace().kernels) {
        if (counts[span.name] < 0) {
            counts[span.name] = tool_counts(names.text(span.name)) ? 1 : 0;
        }
        if (counts[span.name] == 0) {
            continue;
        }
        // Groups are keyed (file, pid): the span's thread id carries the pid where the reader
        // keeps it, else every kernel of a file shares id 0 and the file is one group. Summed
        // in file order, left to right, as Python's sum() over the list does.
        slot.groups[span.thread] += span.dur;
        file_total += span.dur;
        any = true;
    }
    if (any) {
        slot.time_s = file_total / 1e6;
    }
}

MetricValue StragglerFold::finish_reference(const std::vector<std::size_t>& order) const {
    MetricValue out = start_value("straggler", "ratio");
    std::size_t globbed = 0;
    std::size_t groups = 0;
    double low = 0;
    double high = 0;
    for (std::size_t r = 0; r < order.size(); ++r) {
        const RankStraggler& slot = m_slots[order[r]];
        globbed += slot.globbed ? 1U : 0U;
        for (const auto& [pid, total] : slot.groups) {
            low = groups == 0 ? total : std::min(low, total);
            high = groups == 0 ? total : std::max(high, total);
            ++groups;
        }
        out.per_rank[r] = slot.time_s;
    }
    out.basis = "ncclDevKernel_* kernels of rank*_trace.json";
    out.notes.emplace_back(
        "as tools/straggler/straggler_metrics.py computes it: ncclDevKernel_* durations summed per (rank*_trace.json "
        "file, pid), (max - min) / max; per_rank: each file's ncclDevKernel_* time in seconds");
    if (globbed == 0) {
        // main.py prints the metric_cal value even when no file was found: 0.0, not an error.
        out.value = 0.0;
        out.notes.push_back(
            fmt::format("the tool globs rank*_trace.json only (tools/straggler/_common.py:8) and none of the files here "
                        "({}) is named so: it finds no trace and prints 0.0",
                        file_list(in(), order)));
        return out;
    }
    if (groups < 2) {
        out.value = 0.0;
        out.notes.push_back(fmt::format("the tool returns 0.0 with fewer than two (file, pid) groups of ncclDevKernel_* kernels "
                                        "(straggler_metrics.py:12-13); here {}",
                                        groups == 0 ? std::string("none") : std::string("one")));
        return out;
    }
    if (high <= 0) {
        out.value = 0.0;
        out.notes.emplace_back("the tool returns 0.0 when no group has positive ncclDevKernel_* time (straggler_metrics.py:23-24)");
        return out;
    }
    if (low == 0) {
        out.why = "the CCL-Bench tool fails here: a (file, pid) group's ncclDevKernel_* time is 0, and max / min for "
                  "the slowdown "
                  "raises ZeroDivisionError (straggler_metrics.py:26) before the value is printed";
        return out;
    }
    out.value = (high - low) / high;
    return out;
}

MetricValue StragglerFold::finish(const std::vector<std::size_t>& order) {
    if (in().reference()) {
        return finish_reference(order);
    }
    MetricValue out = start_value("straggler", "ratio");
    std::vector<double> times;
    for (std::size_t r = 0; r < order.size(); ++r) {
        if (const std::optional<double>& time = m_slots[order[r]].time_s) {
            times.push_back(*time);
            out.per_rank[r] = *time;
        }
    }
    if (const std::string partial = partial_ranks(in()); !partial.empty()) {
        // (max - min) / max is over every rank: an untraced rank may be the slowest or the
        // fastest, so no subset bounds it. per_rank keeps what the traced ranks measured.
        out.why = fmt::format("partial: {} traced; straggler compares every rank's communication time, and a rank without "
                              "its trace may be the slowest",
                              partial);
        return out;
    }
    if (times.size() < 2) {
        out.why = times.empty() ? "no kernels or operators to measure" : "one rank: a straggler needs at least two";
        return out;
    }
    const auto [low, high] = std::minmax_element(times.begin(), times.end());
    if (*high <= 0) {
        out.why = "no communication in any rank";
        return out;
    }
    out.value = (*high - *low) / *high;
    out.notes.emplace_back("per_rank: each rank's total communication time in seconds");
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_straggler(FoldInputs in, std::size_t ranks) {
    return std::make_unique<StragglerFold>(std::move(in), ranks);
}

} // namespace harness::metrics
