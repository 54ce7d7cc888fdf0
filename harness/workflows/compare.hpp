#pragma once
// `compare`: runs and bundles side by side. Each input (a packed bundle, an unpacked bundle or a
// run directory) gives its card, flattened to dotted paths, and its metrics (metrics.json where
// the input has one, else computed from its traces); the comparison keeps the card paths whose
// values differ, labels each run by those values ("bs=16 seq=64"), and ranks the runs by
// throughput per device (from the card's batch size, sequence length and device count) as well
// as by average step time. A sweep directory stands for its points' run directories. Per-rank
// and per-step detail (spread, timeline, communication by collective) is read from the traces.
#include "util/fs.hpp"
#include "util/json.hpp"
#include "workflows/run_query.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace harness {

/// One metric as metrics.json holds it: a value in `unit`, or none and `why`.
struct ComparedMetric {
    std::optional<double> value;
    std::string unit;
    std::string why;
    std::string implausible; ///< why the value cannot be physically right (metrics/metric_bounds.hpp); "" when it can
};

/// Where a step's time goes, derived from the metrics (see step_breakdown()).
struct StepBreakdown {
    std::optional<double> step;       ///< avg_step_time, s
    std::optional<double> compute;    ///< step - exposed, s
    std::optional<double> exposed;    ///< communication not hidden behind compute, s
    std::optional<double> overlapped; ///< communication hidden behind compute, s
    std::string why;                  ///< why the breakdown is missing, when it is
};

/// Work per device per second, from the card and the step time (see throughput_per_device()).
struct Throughput {
    std::optional<double> value;
    std::string unit;  ///< "tokens/s/device" or "samples/s/device"
    std::string basis; ///< how it was computed, with the card's numbers
    std::string why;   ///< why it is missing, when it is
};

/// What the traces say beyond the headline numbers; empty with `why` when they cannot be read
/// (the headline numbers then still come from metrics.json).
struct RunDetail {
    std::vector<long long> ranks;                                   ///< rank numbers, report order
    std::vector<std::optional<double>> rank_step;                   ///< avg_step_time per rank, s
    std::vector<std::optional<double>> rank_comm;                   ///< total_communication_time per rank, s per step
    std::vector<std::vector<double>> steps;                         ///< per rank: each inner step's duration, s
    std::vector<std::pair<std::string, double>> comm_by_collective; ///< s per step by operation
    std::optional<double> straggler;                                ///< the straggler metric (ratio)
    std::string why;
};

/// min / median / max of every inner step of every rank.
struct StepSpread {
    std::size_t count = 0;
    double min = 0;
    double median = 0;
    double max = 0;
};

struct ComparedRun {
    std::string input;                             ///< the path as given
    std::string kind;                              ///< "bundle" (packed), "bundle directory", "run directory"
    std::string name;                              ///< the bundle's <name>, or the run id
    std::string metrics_source;                    ///< "metrics.json" or "computed from the traces"
    std::map<std::string, std::string> card;       ///< flatten_card() of the card
    std::size_t card_paths_left_out = 0;           ///< paths past k_max_compared_card_paths, not compared
    std::map<std::string, ComparedMetric> metrics; ///< by metric name
    StepBreakdown breakdown;
    std::string label;                  ///< the differing values, "bs=16 seq=64" (run_labels())
    std::string sweep;                  ///< the sweep's id when the run came from a sweep directory
    std::vector<std::string> overrides; ///< that sweep point's PATH=VALUE overrides
    std::string reproduces;             ///< the run id of the bundle this run reproduces (provenance.json), if any
    Throughput throughput;
    RunDetail detail;
};

/// Metrics that are n/a in some runs, one note per metric and reason instead of a row of gaps.
struct MissingNote {
    std::string metric;
    std::string why;
    std::vector<std::size_t> runs; ///< indices into Comparison::runs
};

/// A card path whose value is not the same in every run; `values` is aligned with the runs,
/// empty where a run's card lacks the path.
struct CardDifference {
    std::string path;
    std::vector<std::optional<std::string>> values;
};

struct Comparison {
    std::vector<ComparedRun> runs;               ///< in the order given
    std::vector<std::size_t> ranking;            ///< indices into runs, fastest avg_step_time first, n/a last
    std::vector<std::size_t> throughput_ranking; ///< indices into runs, highest throughput first, n/a last
    std::vector<CardDifference> differences;     ///< sorted by path
    std::vector<MissingNote> missing;            ///< collapse_missing()
    std::string ranking_note;                    ///< why step time alone does not rank these runs, when it does not
    std::vector<std::string> left_out;           ///< sweep points without a run directory, and why
    std::size_t not_matching = 0;                ///< runs of the directories given that the query left out
};

struct CompareOptions {
    fs::path scratch_root; ///< where packed bundles are unpacked; empty means $TMPDIR, else /tmp
    /// Narrows the runs of results and sweep directories (never a run or bundle named on its own),
    /// as `status` does with the same query.
    ParsedRunQuery query;
    /// How many runs make a comparison: 2, or 1 when a run is held to references instead.
    std::size_t min_runs = 2;
};

/// Card paths never compared: `trace_url` names the bundle itself, so it differs between any
/// two bundles and says nothing about the runs.
const std::vector<std::string>& ignored_card_paths();

/// Bounds on what compare reads of a card and shows of it: a 76 KB bundle's card can expand
/// through aliases to a million nodes (within the YAML limits), and each of its paths would be a
/// line of text and a row of the page. The first paths are compared and the rest counted; a long
/// value is compared and shown as its first bytes, its size and its sha256.
constexpr std::size_t k_max_compared_card_paths = 10000;
constexpr std::size_t k_max_compared_value_bytes = 256;
/// Differing paths printed or drawn at most; --json lists every path compared.
constexpr std::size_t k_max_shown_differences = 200;

/// Scalars of `node` by dotted path ("launch.steps"); sequence items get their index
/// ("metric_source.traces.0"); null scalars read "" and empty collections "[]"/"{}". At most
/// k_max_compared_card_paths paths; `left_out`, when given, counts the leaves past them.
std::map<std::string, std::string> flatten_card(const YAML::Node& node, std::size_t* left_out = nullptr);

/// overlapped = total_communication_time x compute_comm_overlap / 100, exposed = communication
/// - overlapped, compute = avg_step_time - exposed (all per step). Missing when any input is.
StepBreakdown step_breakdown(const std::map<std::string, ComparedMetric>& metrics);

/// Reads one input. A packed bundle is unpacked safely into a scratch directory removed
/// afterwards. A bundle whose files disagree with its manifest is refused (the numbers it would
/// show cannot be trusted; `verify` lists every problem). Bad input throws HarnessError with
/// exit 2 naming the path: missing, neither a bundle nor a run directory, unsafe archive,
/// unreadable card or metrics.json, traces that do not parse.
ComparedRun load_compared_run(const fs::path& input, const CompareOptions& options = {});

/// The differing card paths (ignored_card_paths() left out) of `runs`.
std::vector<CardDifference> card_differences(const std::vector<ComparedRun>& runs);

/// One label per run made of the differing card values, `key=value` joined by spaces, at most
/// four then "+N more". Keys are short: bs (workload.data.batch_size), seq (seq_len), devices
/// (xpu_spec.total_count), else the path's last name (two when the last is a list index, the
/// whole path when two paths would read the same), after "reproduces <run id>" for a run that
/// reproduces a bundle. No differences: the run's name. Repeated labels get " (2)", " (3)"...
std::vector<std::string> run_labels(const std::vector<ComparedRun>& runs, const std::vector<CardDifference>& differences);

/// tokens/s/device = workload.data.batch_size x seq_len / avg_step_time / xpu_spec.total_count
/// (batch_size is the global batch, as the CCL-Bench cards and mfu.py read it); without seq_len,
/// samples/s/device. Missing with `why` when the step time or a card number is missing or not
/// positive.
Throughput throughput_per_device(const std::map<std::string, std::string>& card, const std::optional<double>& step);

/// Indices of `runs`, highest throughput first, runs without one last in the order given.
std::vector<std::size_t> rank_by_throughput(const std::vector<ComparedRun>& runs);

/// Non-empty when the runs' batch sizes differ (a faster step may just be a smaller batch).
std::string step_ranking_note(const std::vector<ComparedRun>& runs);

/// The n/a metrics of `runs`, grouped by metric and reason, in metric name order.
std::vector<MissingNote> collapse_missing(const std::vector<ComparedRun>& runs);

/// "mfu: n/a for 3 of 3 runs: no peak FLOP/s known ..."
std::string missing_note_text(const MissingNote& note, std::size_t runs);

/// The spread of the run's steps over every rank; nullopt without per-step times.
std::optional<StepSpread> step_spread(const RunDetail& detail);

/// Loads every input (options.min_runs or more: fewer is an input error) and compares them. A directory
/// with sweep.json stands for its points that have a run directory.
Comparison compare_runs(const std::vector<fs::path>& inputs, const CompareOptions& options = {});

/// {"runs": [{"input", "kind", "name", "rank", "metrics_source", "metrics": {name: {value, unit,
/// why}}, "breakdown": {step, compute, exposed, overlapped, why}, "label", "sweep", "overrides",
/// "throughput_rank", "throughput": {value, unit, basis, why}, "step_spread": {steps, min, median,
/// max} | null, "ranks": [{rank, avg_step_time, total_communication_time, steps: [s]}],
/// "communication_by_collective": {operation: s per step}, "detail_why"}], "ranking": [names by
/// step time], "throughput_ranking": [names], "ranking_note", "differences": [{"path", "values":
/// [text | null]}], "ignored_paths": [...], "missing": [{metric, why, runs: [names], text}],
/// "left_out": [sweep points not compared]}
Json comparison_to_json(const Comparison& comparison);

/// The ranking, the headline metrics and the card differences as aligned text for people.
std::string comparison_table(const Comparison& comparison);

/// What the card bounds left out, a line each ("" when nothing): differing paths not shown, and
/// each card flattened to more paths than were compared. For the table and the page.
std::string card_bounds_note(const Comparison& comparison);

} // namespace harness
