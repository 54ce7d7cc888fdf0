#pragma once
// What a workload's numbers should be, and whether a run's are: `compare --against
// references.yaml` holds each run to the references of its workload (a value with a tolerance,
// or bounds), and `reproduce` holds the new run to the bundle it reproduces, within the two
// runs' own step-to-step noise. A change is judged by the metric's direction (metrics::metric_better):
// worse beyond the tolerance is a regression, better beyond it is said and passes.
#include "util/fs.hpp"
#include "util/json.hpp"
#include "workflows/compare.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

/// One metric's expectation: a value with a tolerance (relative or in the metric's unit), or
/// bounds, or both.
struct MetricReference {
    std::string metric;
    std::optional<double> value;
    double tolerance = 0;
    bool tolerance_relative = false; ///< tolerance is a fraction of value ("10%" reads 0.10)
    std::optional<double> min;
    std::optional<double> max;
    std::string location; ///< file:line:col of the metric's entry
};

/// One entry of references.yaml: the runs of a workload (and, optionally, of some card values).
struct WorkloadReference {
    std::string workload;                                   ///< a glob over the card name: runs <workload>-<time>-<hash>
    std::vector<std::pair<std::string, std::string>> where; ///< card path -> value the run's card must hold
    std::vector<MetricReference> metrics;
    std::string location;
};

/// Reads references.yaml. Anything it cannot hold to account (an unknown key or metric, a value
/// without a tolerance, min above max, a tolerance that is not "N%" or a non-negative number) is
/// an input error naming file:line:col and the field.
std::vector<WorkloadReference> load_references(const fs::path& file);

/// The card name a run id was made from: "tiny-ddp" of "tiny-ddp-20261128T051555Z-f597b7"; the id
/// itself when it has no such suffix (a run named with --name).
std::string workload_of_run(const std::string& run_id);

enum class ReferenceVerdict { within, better, regression, missing };
const char* to_string(ReferenceVerdict verdict);

struct ReferenceCheck {
    std::string run; ///< the run's name
    std::string metric;
    std::optional<double> measured;
    std::string unit;
    std::string expected; ///< "0.03 s ± 20%", "≤ 40 %"
    ReferenceVerdict verdict = ReferenceVerdict::within;
    std::string detail;   ///< how far off, or why the metric is missing
    std::string location; ///< of the reference
};

struct ReferenceReport {
    std::vector<ReferenceCheck> checks;
    std::vector<std::string> unmatched_runs; ///< runs no reference names
    /// Regressions or missing metrics, or no run held to any reference: compare exits 1.
    bool failed() const;
};

/// Holds every run of `runs` to the references that name its workload and card values.
ReferenceReport check_references(const std::vector<WorkloadReference>& references, const std::vector<ComparedRun>& runs);

std::string reference_report_table(const ReferenceReport& report);
Json reference_report_to_json(const ReferenceReport& report);

/// A reproduction against its bundle: the mean step time of each, the noise their own steps
/// allow (twice the standard error of the difference of the means, Welch's, over the per-step
/// means across ranks), and every metric both have with its relative change.
struct ReproductionVerdict {
    bool judged = false; ///< false: too few steps in one of the runs to know the noise (`why`)
    bool within_noise = false;
    std::optional<double> original_step;   ///< s
    std::optional<double> reproduced_step; ///< s
    double noise = 0;                      ///< s: |difference| up to this is noise
    std::size_t original_steps = 0;
    std::size_t reproduced_steps = 0;
    std::string why;
    struct Change {
        std::string metric;
        std::string unit;
        double original = 0;
        double reproduced = 0;
    };
    std::vector<Change> changes;
};

ReproductionVerdict reproduction_verdict(const ComparedRun& original, const ComparedRun& reproduced);
/// "reproduced within noise: avg_step_time 0.0312 s vs the bundle's 0.0306 s (+2.0 %; noise ±6.1 %, 10 and 10 steps)"
/// and a line per metric.
std::string reproduction_verdict_text(const ReproductionVerdict& verdict);
Json reproduction_verdict_to_json(const ReproductionVerdict& verdict);

} // namespace harness
