#pragma once
// One trial of a tuning loop (CCL-Search, a sweep driven from Python): a card with a config of
// field values run (or reused) to a verified bundle, scored by an objective over its metrics.
// What a loop records of a trial, in one document, so that it never reads logs or stderr.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace harness {

/// A config key, as a tuning config names it (tp, batch_size...), and the card path it sets.
using KeyMap = std::map<std::string, std::string>;

/// Reads a key mapping file: `keys: {KEY: card.path, ...}` and optionally `card: PATH` (relative
/// to the file). Input errors name the file and the key.
struct KeyMapFile {
    KeyMap keys;
    fs::path card; ///< "" when the file names none
};
KeyMapFile load_key_map(const fs::path& file);

/// An objective: `min:` or `max:` and METRIC[*WEIGHT] terms, comma-separated
/// ("min:avg_step_time", "max:mfu,communication_fraction*-0.5"); score = sum of weight × value.
struct Objective {
    bool minimize = true;
    std::vector<std::pair<std::string, double>> terms;
};
Objective parse_objective(const std::string& text);

struct EvalOptions {
    fs::path card;
    Json config = Json::object(); ///< {KEY or card.path: value}
    KeyMap keys;                  ///< short keys → card paths
    Objective objective;
    std::string cluster;
    fs::path results;
    fs::path trace_dir; ///< where the canonical traces are copied ("" for nowhere)
    bool reuse = true;
    fs::path home;
};

struct EvalOutcome {
    std::string status; ///< success | error | timeout (upstream execute()'s words)
    std::string failure_class;
    std::string error_msg; ///< one line: why it is not a success
    std::map<std::string, double> metrics;
    std::optional<double> score; ///< empty unless every objective metric has a value
    bool cached = false;         ///< the run was reused (run --reuse), nothing ran
    fs::path run_dir, bundle;
    std::vector<std::string> overrides;
    int exit_code = 0; ///< 0 success, 1 the run failed or a metric is missing
};

/// The config as --set overrides (a key not in `keys` and without a '.' is an input error naming
/// it and the keys there are); values as JSON scalars (true/false/numbers/strings).
std::vector<std::string> config_overrides(const Json& config, const KeyMap& keys);

/// Config from the environment, as upstream execute() passes it: for each key of `keys`, the
/// variable KEY in upper case when set.
Json config_from_environment(const KeyMap& keys);

/// Runs (or reuses) the card with the config, scores it, copies the traces. Progress on `out`.
EvalOutcome eval_trial(const EvalOptions& options, std::ostream& out);

Json eval_outcome_to_json(const EvalOutcome& outcome);

} // namespace harness
