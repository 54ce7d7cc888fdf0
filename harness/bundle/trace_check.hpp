#pragma once
// One trace file checked the way a maintainer checks a submission: it parses, it has a form the
// CCL-Bench tools read, and it marks its steps as the metrics count them. Nothing is written.
// Which names are traces is trace_names' to say (is_trace_file_name, misplaced_trace_problem).
#include "trace/trace_names.hpp"

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
    std::size_t steps = 0;   ///< the steps the metrics take (metrics::standard_steps)
    /// Which markers were counted: metrics::standard_steps' source, the first rule that finds
    /// any of "ProfilerStep#N" (cat user_annotation, so the GPU-side copy Kineto writes of each
    /// CPU step is not counted twice), "execute_context_*" (vLLM), "run_batch" (SGLang),
    /// "bench_one_batch decode/extend" (SGLang's bench), "$core.py:331 step" or "StepMarker"
    /// (XLA). Empty when none was found.
    std::string step_marker;
    /// Why the trace is unusable, or empty: unreadable, "truncated at byte N", "not valid JSON at
    /// byte N: ...", "nested deeper than ...", the wrong top-level type, no traceEvents array, an
    /// event the metrics cannot read (not an object, an X event without ts or dur), a Kineto trace
    /// whose distributedInfo.rank is not the rank its name says, or no step markers.
    std::string problem;
};

/// Reads and checks one trace with the metrics' streaming reader (metrics::read_trace): memory
/// stays bounded whatever the size, gzip (recognized by its magic bytes) is inflated on the fly,
/// and a trace passes only if the metrics can read it. Never throws for bad content: every way a
/// trace can be wrong comes back in `problem`, naming the byte offset where there is one. Ctrl-C
/// (HarnessError with k_exit_interrupted) is passed on.
TraceCheck check_trace(const fs::path& file);

} // namespace harness
