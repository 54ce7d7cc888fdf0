#pragma once
// Which events are the steps of a rank, and which of them are the inner ones. The default mode
// picks one source for every metric; the CCL-Bench tools each pick their own, as listed.
#include "metrics/trace_events.hpp"

#include <string>
#include <vector>

namespace harness::metrics {

struct StepSelection {
    std::vector<StepMarker> steps; ///< sorted as the source says (ProfilerStep by N, others by ts)
    std::string source;            ///< "ProfilerStep#N", "execute_context_*", ... ("" when none)

    bool empty() const { return steps.empty(); }
    /// All but the first and last when there are more than two, else all.
    std::vector<StepMarker> inner() const;
};

/// ProfilerStep#N sorted by N (stable, as Python's sorted).
StepSelection profiler_steps(const RankTrace& trace);
/// vLLM execute_context_* sorted by ts.
StepSelection vllm_steps(const RankTrace& trace);
/// SGLang run_batch python functions matching `matches`, sorted by ts.
StepSelection sglang_steps(const RankTrace& trace, bool (*matches)(std::string_view));
/// SGLang bench_one_batch's forward passes (decode, extend), sorted by ts: the bench has no run_batch.
StepSelection sglang_bench_steps(const RankTrace& trace);
/// XLA: "$core.py:331 step", else StepMarker events longer than 10% of the longest, by ts.
StepSelection xla_steps(const RankTrace& trace);

/// XLA in the default mode: "$core.py:331 step", else any "$<file>:<line> step" frame, else
/// the StepMarkers xla_steps keeps.
StepSelection standard_xla_steps(const RankTrace& trace);

/// The default mode's steps, and the ones verify counts: ProfilerStep#N, else execute_context_*,
/// else \brun_batch\b, else bench_one_batch's forward passes, else the XLA markers.
StepSelection standard_steps(const RankTrace& trace);

} // namespace harness::metrics
