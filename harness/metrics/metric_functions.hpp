#pragma once
// The metric definitions, one file each (metric_<name>.cpp), as folds over the ranks' views.
// Internal to harness/metrics: metrics.cpp feeds them every rank in both modes and compares.
#include "metrics/metrics.hpp"
#include "metrics/metrics_input.hpp"
#include "metrics/rank_view.hpp"
#include "metrics/step_windows.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace harness::metrics {

/// What mfu needs from the card, as written (absent fields stay empty), and the vLLM latency
/// record beside it.
struct CardFacts {
    fs::path file;
    std::string phase; ///< lowercased
    /// Where the architecture fields were read: "model_arch", or "model" when model_arch is
    /// absent or empty (mfu.py:157 falls back to workload.model), "" when neither is a map.
    std::string arch_at;
    std::optional<double> num_params;
    std::optional<double> num_params_active; ///< the spelling mfu.py reads
    std::optional<double> num_active_params; ///< another spelling, taken by the default mode only
    std::optional<double> num_params_embedding;
    std::optional<double> num_layers;
    std::optional<double> head_dim;
    std::optional<double> num_heads;
    std::optional<double> batch_size;
    std::optional<double> seq_len;
    std::optional<double> output_len; ///< workload.data.output_len: tpot needs more than one token
    std::optional<double> total_count;
    std::string xpu_model;
    /// metric_source.traces holds "json" / "json_tpu" (mfu.py:264-268 computes nothing else).
    bool traces_json = false;
    bool traces_json_tpu = false;
    std::optional<fs::path> latency_file; ///< a vLLM *.latency.json under the card's directory
    std::optional<double> latency_s;      ///< its avg_latency: mfu.py's step time (mfu.py:192)
    std::optional<ServingResult> serving; ///< the serving client's result beside the card, if any
    /// metric_source.ranks_present (`ingest --ranks`): the only ranks traced, ascending; empty when
    /// the card names none (every rank) or writes something else (verify says what).
    std::vector<long long> ranks_present;
    std::string error; ///< why the card could not be read
};

/// Reads the card's fields for mfu, and the vLLM latency record under the card's directory (the
/// directory mfu.py is given). A card that is not valid YAML gives facts with `error` set.
CardFacts load_card_facts(const fs::path& file);

/// What every fold knows of each rank besides its own results: filled on the worker that read
/// the rank, read by finish() once every rank is in.
struct RankFacts {
    Basis basis = Basis::none;
    bool reference_reads_events = false;
    fs::path file;
};

/// One mode's view of the run for a fold; the vectors are indexed by input position (the order
/// the traces were listed), not by report position.
struct FoldInputs {
    std::vector<bool> counted; ///< per rank: read by this mode (the reference keeps its sample)
    MetricMode mode = MetricMode::standard;
    const CardFacts* card = nullptr;
    const std::vector<RankFacts>* facts = nullptr; ///< complete when finish() runs

    bool reference() const { return mode == MetricMode::reference; }
    const RankFacts& fact(std::size_t index) const { return (*facts)[index]; }
};

/// One metric in one mode, reduced rank by rank so that no rank's tables outlive its reading.
/// add() runs on the worker that read the rank, concurrently with other ranks' add(); it writes
/// only the per-rank slot `index`, sized at construction. finish() combines the slots walking
/// `order` (input positions in report order), so every sum over ranks is taken in report order.
class MetricFold {
public:
    MetricFold(FoldInputs in, std::size_t ranks) : m_in(std::move(in)), m_ranks(ranks) {}
    MetricFold(const MetricFold&) = delete;
    MetricFold& operator=(const MetricFold&) = delete;
    virtual ~MetricFold() = default;

    virtual void add(std::size_t index, const RankView& view) = 0;
    virtual MetricValue finish(const std::vector<std::size_t>& order) = 0;

protected:
    const FoldInputs& in() const { return m_in; }
    std::size_t ranks() const { return m_ranks; }
    /// A value with a per_rank entry for every rank (report order) and the counted ranks' basis.
    MetricValue start_value(const char* metric, const char* unit) const;

private:
    FoldInputs m_in;
    std::size_t m_ranks;
};

using MetricFoldFactory = std::unique_ptr<MetricFold> (*)(FoldInputs in, std::size_t ranks);

std::unique_ptr<MetricFold> fold_avg_step_time(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_compute_comm_overlap(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_communication_fraction(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_total_communication_time(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_collective_volume(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_straggler(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_mfu(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_ttft(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_tpot(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_total_kernel_time(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_total_trace_time(FoldInputs in, std::size_t ranks);
std::unique_ptr<MetricFold> fold_coll_call_num(FoldInputs in, std::size_t ranks);

/// The activity spans of a rank sorted by start, for the per-step windows.
class SortedSpans {
public:
    explicit SortedSpans(std::vector<ActivitySpan> spans);
    bool empty() const { return m_spans.empty(); }
    const std::vector<ActivitySpan>& spans() const { return m_spans; }

    /// Calls f(span) for every span that may touch [start, end): a superset of the spans with
    /// ts < end and ts + dur > start; callers apply the exact test of their metric.
    template <class F> void for_candidates(double start, double end, F&& f) const {
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
/// "ranks 0 of 4" when the card says only some ranks were traced (CardFacts::ranks_present),
/// else empty. The default mode only: --reference reproduces the tools, which read what is there.
/// Each metric says in its own file what a partial set does to it.
std::string partial_ranks(const FoldInputs& in);
/// The basis label of the counted ranks ("GPU kernels", or "mixed: ..." when they differ).
std::string basis_of(const FoldInputs& in);

} // namespace harness::metrics
