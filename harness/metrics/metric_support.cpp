#include "metrics/metric_functions.hpp"

#include "trace/rank_set.hpp"

#include <algorithm>
#include <set>

namespace harness::metrics {

SortedSpans::SortedSpans(std::vector<ActivitySpan> spans) : m_spans(std::move(spans)) {
    std::stable_sort(m_spans.begin(), m_spans.end(), [](const ActivitySpan& a, const ActivitySpan& b) { return a.ts < b.ts; });
    for (const ActivitySpan& span : m_spans) {
        m_max_dur = std::max(m_max_dur, span.dur);
    }
}

std::vector<ActivitySpan>::const_iterator SortedSpans::lower_bound(double ts) const {
    return std::lower_bound(m_spans.begin(), m_spans.end(), ts,
                            [](const ActivitySpan& span, double value) { return span.ts < value; });
}

double mean(const std::vector<double>& values) {
    double sum = 0;
    for (const double value : values) {
        sum += value;
    }
    return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

MetricValue MetricFold::start_value(const char* metric, const char* unit) const {
    MetricValue out;
    out.metric = metric;
    out.unit = unit;
    out.per_rank.assign(m_ranks, std::nullopt);
    out.basis = basis_of(m_in);
    return out;
}

std::string partial_ranks(const FoldInputs& in) {
    if (in.reference() || in.card == nullptr || in.card->ranks_present.empty() || !in.card->total_count) {
        return {};
    }
    return describe_partial_ranks(in.card->ranks_present, static_cast<long long>(*in.card->total_count));
}

std::string basis_of(const FoldInputs& in) {
    std::set<std::string> labels;
    for (std::size_t k = 0; k < in.counted.size(); ++k) {
        if (in.counted[k] && in.fact(k).basis != Basis::none) {
            labels.insert(basis_label(in.fact(k).basis));
        }
    }
    if (labels.empty()) {
        return basis_label(Basis::none);
    }
    std::string out;
    for (const auto& label : labels) {
        out += out.empty() ? label : " + " + label;
    }
    return labels.size() > 1 ? "mixed: " + out : out;
}

} // namespace harness::metrics
