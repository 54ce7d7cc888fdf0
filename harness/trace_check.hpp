#pragma once
// One trace file checked the way a maintainer checks a submission: it parses, it has a form the
// CCL-Bench tools read, and it marks its steps. Nothing is written.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace harness {

namespace fs = std::filesystem;

struct TraceCheck {
    /// "kineto" ({"traceEvents": [...]} in a file not named like an XLA trace), "legacy-array"
    /// (torch's autograd profiler: a bare array of events) or "xla" ({"traceEvents": [...]} in
    /// <host>.trace.json(.gz)); empty when the file did not parse into one of them.
    std::string form;
    bool compressed = false; ///< gzip; byte offsets then count uncompressed bytes
    std::size_t events = 0;  ///< entries of traceEvents (of the array for legacy-array)
    std::size_t steps = 0;   ///< step markers counted under `step_marker`'s rule
    /// Which markers were counted, the first rule that finds any:
    ///   kineto, legacy-array: "ProfilerStep#N" (distinct N, so the GPU-side copy Kineto writes
    ///     of each CPU step is not counted twice), else "execute_context_*" with cat
    ///     user_annotation (vLLM), else "run_batch" with cat python_function (SGLang): the
    ///     markers the CCL-Bench tools take as steps;
    ///   xla: "$<file>:<line> step" (the Python frame of a training step, as MaxText's traces
    ///     have it), else "StepMarker".
    /// Empty when none was found.
    std::string step_marker;
    /// Why the trace is unusable, or empty: unreadable, "truncated at byte N", "not JSON at byte
    /// N: ...", the wrong top-level type, no traceEvents array, or no step markers.
    std::string problem;
};

/// True for the JSON trace names a bundle holds traces under, as classify_trace_name
/// (trace_names.hpp) has them: kineto_trace_<rank>.json(.gz), <host>.trace.json(.gz) (but not
/// torch's <worker>.pt.trace.json).
bool is_trace_file_name(std::string_view name);

/// The rank in kineto_trace_<rank>.json or kineto_trace_<rank>.json.gz, or -1 for any other name.
long long kineto_trace_rank(std::string_view name);

/// Why the file at `relative_path` (inside a bundle) looks like a trace the CCL-Bench tools will
/// not find, naming the name they expect, or empty: a canonical trace name inside a folder,
/// TorchTitan's rank<r>_trace.json, Megatron's rank-<r>.json(.gz), a rank with leading zeros,
/// torch's tensorboard-handler <worker>.pt.trace.json, any other top-level *trace*.json.
std::string misplaced_trace_problem(std::string_view relative_path);

/// Reads and checks one trace. The whole (uncompressed) trace is held in memory, up to simdjson's
/// limit of 4 GiB; a larger one is reported as a problem, not read. Gzip is recognized by its
/// magic bytes and expanded with libarchive. Never throws for bad content: every way a trace can
/// be wrong comes back in `problem`, naming the byte offset where there is one.
TraceCheck check_trace(const fs::path& file);

} // namespace harness
