#pragma once
// The CCL-Bench metrics of a run, computed from its per-rank traces: a trace file, a directory
// of rank traces (with the card beside them), a run directory or an unpacked bundle. Two modes:
// the default uses one kernel classifier for every metric; --reference reproduces the CCL-Bench
// Python tools bug for bug. Both are always computed so that disagreements can be explained.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness::metrics {

/// avg_step_time, compute_comm_overlap, communication_fraction, total_communication_time,
/// collective_volume, straggler, mfu, ttft, tpot: the report order.
const std::vector<std::string>& metric_names();

/// Each metric's name and one-line definition, in the report order.
std::vector<std::pair<std::string, std::string>> metric_summaries();

/// Which way a metric gets better: a step time down, an overlap up; none for what only describes
/// the run (bytes moved). The one table references and reproductions judge changes by.
enum class Better { lower, higher, neither };

/// The direction of `name`; `neither` for a name that is not a metric.
Better metric_better(const std::string& name);

struct MetricValue {
    std::string metric;
    std::string unit;            ///< "s", "%", "bytes", "ratio"
    std::optional<double> value; ///< empty when the metric does not apply; `why` says why
    std::string why;
    std::string basis;                                 ///< what was measured: "GPU kernels", "host-side (CPU operators)", ...
    std::vector<std::optional<double>> per_rank;       ///< aligned with MetricsReport::ranks
    std::vector<std::pair<std::string, double>> parts; ///< collective_volume: bytes per collective name
    std::vector<std::string> notes;
    /// Why the value cannot be physically right (mfu over 100 %, a step of no time...); empty
    /// when it is within bounds. metric_bounds.hpp sets it; verify warns and compare flags it.
    std::string implausible;
    /// avg_step_time, default mode: each rank's inner-step durations in s (report order), so
    /// that noise between steps can be shown. Not in metrics_to_json: `compare` reads it.
    std::vector<std::vector<double>> per_step;
    /// total_communication_time, default mode: s per step by collective operation
    /// (collective_operation()), each merged on its own, so the parts may overlap and their sum
    /// may exceed the value. Not in metrics_to_json: `compare` reads it.
    std::vector<std::pair<std::string, double>> time_by_collective;
};

/// A kernel name the two modes classify differently, summed over ranks.
struct KernelDisagreement {
    std::string name;
    std::string standard;  ///< the classifier's family ("DeepEP") or "compute"
    std::string reference; ///< "communication" or "compute"
    std::size_t count = 0;
    double time_us = 0;
};

/// A metric whose value differs between the modes, and the kernels responsible.
struct Disagreement {
    std::string metric;
    MetricValue standard;
    MetricValue reference;
    std::string pattern;                     ///< the CCL-Bench tool's regular expression
    std::vector<KernelDisagreement> kernels; ///< longest total time first, at most 10
    std::size_t more_kernels = 0;
};

struct RankSummary {
    long long rank = 0;
    fs::path file;
    std::string format; ///< kineto | legacy-autograd | not-a-trace (a JSON object the tools read as empty)
    bool compressed = false;
    std::string basis;
    std::uint64_t bytes = 0;
    std::uint64_t events = 0;
    std::size_t kernels = 0;
    std::size_t host_ops = 0;
    std::size_t xla_ops = 0;
    std::string step_source;
    std::size_t steps = 0;
    std::vector<std::string> devices; ///< the trace's deviceProperties names, when it has them
    bool in_default = true;           ///< a rank trace by its name (the default mode reads these)
    bool in_reference = true;         ///< among the files --reference reads (every .json, sampled above 16)
};

struct MetricsOptions {
    std::vector<std::string> metrics; ///< empty: all; unknown names are an input error
    bool reference = false;
    unsigned threads = 0; ///< 0: one per core, never more than the ranks
};

struct MetricsReport {
    fs::path path;
    std::string layout; ///< "trace file", "trace directory", "run directory", "bundle directory"
    std::optional<fs::path> card;
    bool reference = false;
    std::vector<RankSummary> ranks;
    std::vector<MetricValue> metrics; ///< in the chosen mode, in the order asked for
    std::vector<Disagreement> disagreements;
    std::vector<std::string> notes;
    /// "ranks 0 of 4" when the card says only those ranks were traced (metric_source.ranks_present,
    /// `ingest --ranks`); empty otherwise.
    std::string partial;
    /// The traces ran on another device than the card's xpu_spec.model says ("the traces ran on
    /// Tesla V100-SXM2-16GB; the card says nvidia_a100"); empty when they agree or cannot tell.
    std::string device_mismatch;
    /// The most ranks whose tables were in memory at the same time (measured): at most the
    /// thread count, whatever the number of ranks, since each rank is folded and dropped.
    std::size_t ranks_held_at_once = 0;
};

/// Reads every rank trace at `path` (in parallel) and computes the metrics. Bad input (no
/// traces, a malformed trace, an unknown metric, a packed bundle) throws HarnessError (exit 2)
/// naming the file and, for traces, the byte offset.
MetricsReport compute_metrics(const fs::path& path, const MetricsOptions& options);

Json metrics_to_json(const MetricsReport& report);
std::string metrics_table(const MetricsReport& report);

} // namespace harness::metrics
