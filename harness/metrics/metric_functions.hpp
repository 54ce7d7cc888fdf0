#pragma once
// The metric definitions, one file each (metric_<name>.cpp), over the ranks' views. Internal to
// harness/metrics: metrics.cpp calls them for both modes and compares.
#include "metrics/metrics.hpp"
#include "metrics/rank_view.hpp"
#include "metrics/step_windows.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness::metrics {

/// What mfu needs from the card, as written (absent fields stay empty), and the vLLM latency
/// record beside it.
struct CardFacts {
    fs::path file;
    std::string phase;  ///< lowercased
    /// Where the architecture fields were read: "model_arch", or "model" when model_arch is
    /// absent or empty (mfu.py:157 falls back to workload.model), "" when neither is a map.
    std::string arch_at;
    std::optional<double> num_params;
    std::optional<double> num_params_active;  ///< the spelling mfu.py reads
    std::optional<double> num_active_params;  ///< another spelling, taken by the default mode only
    std::optional<double> num_params_embedding;
    std::optional<double> num_layers;
    std::optional<double> head_dim;
    std::optional<double> num_heads;
    std::optional<double> batch_size;
    std::optional<double> seq_len;
    std::optional<double> total_count;
    std::string xpu_model;
    /// metric_source.traces holds "json" / "json_tpu" (mfu.py:264-268 computes nothing else).
    bool traces_json = false;
    bool traces_json_tpu = false;
    std::optional<fs::path> latency_file;  ///< a vLLM *.latency.json under the card's directory
    std::optional<double> latency_s;       ///< its avg_latency: mfu.py's step time (mfu.py:192)
    std::string error;  ///< why the card could not be read
};

/// Reads the card's fields for mfu, and the vLLM latency record under the card's directory (the
/// directory mfu.py is given). A card that is not valid YAML gives facts with `error` set.
CardFacts load_card_facts(const fs::path& file);

struct MetricInputs {
    const std::vector<RankView>& ranks;
    std::vector<bool> counted;  ///< per rank: read by this mode (the reference keeps its sample)
    MetricMode mode = MetricMode::standard;
    const CardFacts* card = nullptr;

    bool reference() const { return mode == MetricMode::reference; }
};

MetricValue metric_avg_step_time(const MetricInputs& in);
MetricValue metric_compute_comm_overlap(const MetricInputs& in);
MetricValue metric_communication_fraction(const MetricInputs& in);
MetricValue metric_total_communication_time(const MetricInputs& in);
MetricValue metric_collective_volume(const MetricInputs& in);
MetricValue metric_straggler(const MetricInputs& in);
MetricValue metric_mfu(const MetricInputs& in);

/// The activity spans of a rank sorted by start, for the per-step windows.
class SortedSpans {
public:
    explicit SortedSpans(std::vector<ActivitySpan> spans);
    bool empty() const { return m_spans.empty(); }
    const std::vector<ActivitySpan>& spans() const { return m_spans; }

    /// Calls f(span) for every span that may touch [start, end): a superset of the spans with
    /// ts < end and ts + dur > start; callers apply the exact test of their metric.
    template <class F>
    void for_candidates(double start, double end, F&& f) const {
        auto it = lower_bound(start - m_max_dur - 1.0);
        for (; it != m_spans.end() && it->ts < end; ++it) {
            f(*it);
        }
    }

private:
    std::vector<ActivitySpan>::const_iterator lower_bound(double ts) const;
    std::vector<ActivitySpan> m_spans;
    double m_max_dur = 0;
};

double mean(const std::vector<double>& values);
/// A value for each counted rank, to the report's per_rank.
MetricValue start_value(const MetricInputs& in, const char* metric, const char* unit);
/// The basis label of the counted ranks ("GPU kernels", or "mixed: ..." when they differ).
std::string basis_of(const MetricInputs& in);

} // namespace harness::metrics
