#pragma once
// Where the traces and the card of a metrics PATH are: one trace file, a directory of rank
// traces with an optional card beside them (CCL-Bench trace_collection), a run directory
// (traces/ + card.yaml) or an unpacked bundle (<name>/<name>.yaml beside the traces).
#include "trace/trace_names.hpp"
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
    /// Which reader takes it: nsys_sqlite (read_nsys_sqlite) or a JSON kind (read_trace).
    TraceKind kind = TraceKind::kineto;
    /// An nsys export holding several GPUs' kernels is one input per device (its rank then -1:
    /// numbered by position, files in path order and devices ascending).
    std::optional<long long> device = std::nullopt;
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

/// What the serving client measured (`vllm bench serve --save-result`), per request: its means.
struct ServingResult {
    fs::path file;
    std::optional<double> mean_ttft_ms;
    std::optional<double> mean_tpot_ms;
};

/// The client result the serving template keeps, logs/bench_serve.json under `dir` (the run or
/// bundle directory; trace_names.hpp's k_serving_result_stem), when it is a JSON object of
/// at most 64 MiB; the means it lacks stay empty.
std::optional<ServingResult> find_serving_result(const fs::path& dir);

/// Throws HarnessError (exit 2) when `path` does not exist, is a packed bundle, or holds no trace.
/// Nsight Systems SQLite exports (nsys_<rank>.sqlite; any *.sqlite given alone) are traces for
/// the ranks no Kineto trace covers: Kineto stays the source where a rank has both, so no rank is
/// counted twice; the notes say which file each such rank was read from. An .nsys-rep without
/// its export is a note (how to export it), not an error.
MetricsInput resolve_metrics_input(const fs::path& path);

} // namespace harness::metrics
