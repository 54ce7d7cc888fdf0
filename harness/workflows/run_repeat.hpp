#pragma once
// run --repeat N: the same card run N times, each its own run directory and bundle, so that the
// spread between runs of one configuration can be measured (references.yaml's "within the
// spread of N repeats", reproduce's verdict) rather than guessed.
#include "workflows/run_workload.hpp"

#include <map>
#include <string>
#include <vector>

namespace harness {

/// A headline metric over the repeats that completed with a value.
struct RepeatSpread {
    std::size_t runs = 0;
    double mean = 0;
    double stdev = 0; ///< sample standard deviation (n − 1); 0 for one run
    double min = 0;
    double max = 0;
};

struct RepeatOutcome {
    std::vector<RunOutcome> runs;
    std::size_t completed = 0;
    std::map<std::string, RepeatSpread> spread; ///< by headline metric name
    int exit_code = 0;                          ///< the first non-zero run's, else 0
};

/// The spread of each headline metric (k_headline_metrics) over the completed runs.
RepeatOutcome summarize_repeats(std::vector<RunOutcome> runs);

/// "repeat: 3 runs, 3 completed\n  avg_step_time mean ... s, stdev ..., min ..., max ... (spread ...%)\n"
std::string format_repeat_summary(const RepeatOutcome& outcome);

/// {"runs": [run_outcome_to_json...], "completed", "spread": {METRIC: {runs, mean, stdev, min, max}}, "exit_code"}
Json repeat_outcome_to_json(const RepeatOutcome& outcome);

} // namespace harness
