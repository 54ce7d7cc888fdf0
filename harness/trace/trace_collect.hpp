#pragma once
// Gathers what the tracers wrote into <run>/traces/ under the names the CCL-Bench tools read,
// normalizing on the way, and says which ranks are missing a trace.
#include "util/fs.hpp"

#include <string>
#include <vector>

namespace harness {

/// What a run's tracers are expected to leave; the plan says (plan/trace_expectation.hpp), so
/// that no framework name is decided here.
struct TraceExpectation {
    long long world_size = 1;
    std::string backend = "gloo"; ///< written into a normalized trace's distributedInfo
    bool per_rank = true;         ///< one trace per rank, named by its rank
    bool serving = false;         ///< a serving engine: one nsys report for the engine, not per rank
    bool rank0_only = false;      ///< the framework profiles rank 0 only
    bool torch_profiler = false;  ///< the trace kinds the card asks for
    bool nsys = false;
    bool xplane = false;
};

struct CollectedTraces {
    std::vector<std::string> files; ///< relative to the traces directory, sorted
    std::vector<long long> missing; ///< ranks without their expected trace
    /// Everything wrong with the traces, "; "-joined, empty when nothing is: two files claiming one
    /// rank ("a and b both claim rank 0"), a rank at or past the world size, then the missing
    /// ranks ("no kineto_trace_1.json (rank 1)").
    std::string missing_message;
};

/// Looks under `produced` (the rendered directory's traces/, recursively) for every name
/// classify_trace_name (trace_names.hpp) knows. Torch traces become kineto_trace_<r>.json
/// (normalized) or kineto_trace_<r>.json.gz (copied, still compressed), the rank from the name or,
/// for the tensorboard handler's <worker>.<ns>.pt.trace.json(.gz), from the trace's
/// distributedInfo; nsys reports become nsys_<r>.nsys-rep / .sqlite; XLA traces and traces whose
/// rank is unknown keep their path. Of two files claiming one rank the first (by path) is kept.
CollectedTraces collect_traces(const TraceExpectation& expect, const fs::path& produced, const fs::path& traces_dir);

} // namespace harness
