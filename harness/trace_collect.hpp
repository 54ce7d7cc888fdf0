#pragma once
// Gathers what the tracers wrote into <run>/traces/ under the names the CCL-Bench tools read,
// normalizing on the way, and says which ranks are missing a trace.
#include "plan.hpp"
#include "util/fs.hpp"

#include <string>
#include <vector>

namespace harness {

struct CollectedTraces {
    std::vector<std::string> files;     ///< relative to the traces directory, sorted
    std::vector<long long> missing;     ///< ranks without their expected trace
    std::string missing_message;        ///< "no kineto_trace_1.json (rank 1)"
};

/// Looks under `produced` (the rendered directory's traces/, recursively) for per-rank traces:
/// kineto_trace_<r>.json, TorchTitan rank<r>_trace.json, Megatron rank-<r>.json(.gz),
/// nsys_<r>.nsys-rep and .sqlite, TPU *.trace.json(.gz) / *.xplane.pb.
CollectedTraces collect_traces(const Plan& plan, const fs::path& produced, const fs::path& traces_dir);

} // namespace harness
