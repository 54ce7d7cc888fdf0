#pragma once
// Where the traces and the card of a metrics PATH are: one trace file, a directory of rank
// traces with an optional card beside them (CCL-Bench trace_collection), a run directory
// (traces/ + card.yaml) or an unpacked bundle (<name>/<name>.yaml beside the traces).
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness::metrics {

struct TraceInput {
    fs::path file;
    long long rank = -1;         ///< from the file name, -1 when it does not say
    bool standard = true;        ///< read by the default mode (a rank trace by its name)
    bool reference = true;       ///< read by --reference (select_json_files: every *.json, sampled above 16)
    bool outside_sample = false; ///< a .json the tools would list but leave out of their sample of 16
};

struct MetricsInput {
    std::string layout; ///< "trace file", "trace directory", "run directory", "bundle directory"
    fs::path trace_dir;
    std::vector<TraceInput> traces; ///< sorted by path, as the tools list them
    std::optional<fs::path> card;
    std::vector<std::string> notes;
};

/// A vLLM benchmark's batch latency (`vllm bench latency --output-json`), which mfu.py takes as
/// the step time in place of the traces' ProfilerStep#N.
struct VllmLatency {
    fs::path file;
    double seconds = 0; ///< avg_latency
};

/// mfu.py's _load_vllm_latency_s (tools/mfu/mfu.py:113-125): the first `*.latency.json` under
/// `dir` (recursively, hidden names skipped, sorted by path as glob's list is) that is a JSON
/// object whose avg_latency is a number, a boolean or a numeric string; files that are not are
/// skipped. Symbolic links to directories are not followed.
std::optional<VllmLatency> find_vllm_latency(const fs::path& dir);

/// Throws HarnessError (exit 2) when `path` does not exist, is a packed bundle, or holds no trace.
MetricsInput resolve_metrics_input(const fs::path& path);

} // namespace harness::metrics
