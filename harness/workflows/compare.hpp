#pragma once
// `compare`: runs and bundles side by side. Each input (a packed bundle, an unpacked bundle or a
// run directory) gives its card, flattened to dotted paths, and its metrics (metrics.json where
// the input has one, else computed from its traces); the comparison keeps the card paths whose
// values differ and ranks the runs by average step time.
#include "util/fs.hpp"
#include "util/json.hpp"

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
};

/// Where a step's time goes, derived from the metrics (see step_breakdown()).
struct StepBreakdown {
    std::optional<double> step;       ///< avg_step_time, s
    std::optional<double> compute;    ///< step - exposed, s
    std::optional<double> exposed;    ///< communication not hidden behind compute, s
    std::optional<double> overlapped; ///< communication hidden behind compute, s
    std::string why;                  ///< why the breakdown is missing, when it is
};

struct ComparedRun {
    std::string input;                             ///< the path as given
    std::string kind;                              ///< "bundle" (packed), "bundle directory", "run directory"
    std::string name;                              ///< the bundle's <name>, or the run id
    std::string metrics_source;                    ///< "metrics.json" or "computed from the traces"
    std::map<std::string, std::string> card;       ///< flatten_card() of the card
    std::map<std::string, ComparedMetric> metrics; ///< by metric name
    StepBreakdown breakdown;
};

/// A card path whose value is not the same in every run; `values` is aligned with the runs,
/// empty where a run's card lacks the path.
struct CardDifference {
    std::string path;
    std::vector<std::optional<std::string>> values;
};

struct Comparison {
    std::vector<ComparedRun> runs;           ///< in the order given
    std::vector<std::size_t> ranking;        ///< indices into runs, fastest avg_step_time first, n/a last
    std::vector<CardDifference> differences; ///< sorted by path
};

struct CompareOptions {
    fs::path scratch_root; ///< where packed bundles are unpacked; empty means $TMPDIR, else /tmp
};

/// Card paths never compared: `trace_url` names the bundle itself, so it differs between any
/// two bundles and says nothing about the runs.
const std::vector<std::string>& ignored_card_paths();

/// Scalars of `node` by dotted path ("launch.steps"); sequence items get their index
/// ("metric_source.traces.0"); null scalars read "" and empty collections "[]"/"{}".
std::map<std::string, std::string> flatten_card(const YAML::Node& node);

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

/// Loads every input (two or more: fewer is an input error) and compares them.
Comparison compare_runs(const std::vector<fs::path>& inputs, const CompareOptions& options = {});

/// {"runs": [{"input", "kind", "name", "rank", "metrics_source", "metrics": {name: {value, unit,
/// why}}, "breakdown": {step, compute, exposed, overlapped, why}}], "ranking": [names],
/// "differences": [{"path", "values": [text | null]}], "ignored_paths": [...]}
Json comparison_to_json(const Comparison& comparison);

/// The ranking, the headline metrics and the card differences as aligned text for people.
std::string comparison_table(const Comparison& comparison);

} // namespace harness
