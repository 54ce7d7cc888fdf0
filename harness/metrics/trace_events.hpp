#pragma once
// One rank's trace reduced to what the metrics read: compact tables of spans (GPU kernels, host
// operators, XLA ops), step markers and collective arguments. The reader streams the file once
// (plain or gzip; Kineto object form, legacy autograd array form, XLA Chrome traces) and never
// holds the whole document, so memory follows the number of kept events, not the file size.
#include "metrics/name_table.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::metrics {

/// One `ph:"X"` event, times in the trace's unit (µs).
struct Span {
    double ts = 0;
    double dur = 0;
    NameId name = 0;
    NameId thread = 0; ///< interned "pid/tid" of XLA ops (uncategorized XLA events: the pid alone); a kernel's pid; 0 for host ops
};

enum class StepKind : std::uint8_t {
    profiler_step,        ///< ProfilerStep#N, cat user_annotation
    vllm_execute_context, ///< execute_context_*, cat user_annotation
    sglang_run_batch,     ///< a python_function whose name contains run_batch
    /// SGLang bench_one_batch's forward pass, a python_function "<path>/bench_one_batch.py(<line>):
    /// decode" (": extend" for the prefill): the bench has no run_batch and no ProfilerStep.
    sglang_bench_forward,
    xla_core_step,   ///< "$core.py:331 step"
    xla_python_step, ///< another host Python frame "$<file>:<line> step" (what other JAX versions name it)
    xla_step_marker, ///< StepMarker
};

struct StepMarker {
    double ts = 0;
    double dur = 0;
    long long number = -1; ///< N of ProfilerStep#N (digits to the end of the name), else -1
    NameId name = 0;
    StepKind kind = StepKind::profiler_step;
};

/// The NCCL arguments PyTorch records on a collective (on the kernel, or on the host
/// `record_param_comms` operator).
struct CollectiveArgs {
    bool on_kernel = false;
    std::uint32_t span = 0; ///< index into kernels or host_ops
    NameId collective = 0;  ///< args["Collective name"]
    NameId dtype = 0;       ///< args["dtype"]
    bool has_nelems = false;
    double nelems = 0; ///< args["In msg nelems"]
};

enum class TraceFormat : std::uint8_t { kineto, legacy_autograd, nsys_sqlite };

/// What a profiler says of a GPU beyond its name, where it does (nsys TARGET_INFO_GPU).
struct DeviceInfo {
    long long id = -1;
    std::string name;
    long long sm_count = 0;      ///< 0 when not recorded
    double memory_bandwidth = 0; ///< bytes/s, 0 when not recorded
};

/// A trace names each of its process's GPUs; a node has at most a few dozen.
inline constexpr std::size_t k_max_device_names = 64;

struct RankTrace {
    fs::path file;
    TraceFormat format = TraceFormat::kineto;
    bool compressed = false;
    std::uint64_t bytes = 0;                   ///< uncompressed bytes read
    std::uint64_t events = 0;                  ///< entries of traceEvents
    std::optional<long long> distributed_rank; ///< distributedInfo.rank when the trace says
    /// deviceProperties[].name (Kineto: the GPUs the process saw, "NVIDIA A100-SXM4-40GB"), at most
    /// k_max_device_names of them.
    std::vector<std::string> device_names;
    std::vector<DeviceInfo> device_info; ///< nsys TARGET_INFO_GPU rows, at most k_max_device_names
    std::string schema_version;          ///< nsys EXPORT_SCHEMA_VERSION, when the export records one

    NameTable names;               ///< span and step names, threads, collective names, dtypes
    std::vector<Span> kernels;     ///< cat "kernel"
    std::vector<Span> host_ops;    ///< host operators the classifier cares about (aten::, gloo:, c10d::...)
    std::vector<Span> xla_ops;     ///< X events without a cat (XLA/TPU profiler traces)
    std::vector<StepMarker> steps; ///< every step-marker candidate, in file order
    std::vector<CollectiveArgs> collectives;
    std::map<std::string, std::string> process_names; ///< pid (as written) -> process_name metadata
    std::map<std::string, std::string> thread_names;  ///< "pid\ttid" -> thread_name metadata
};

struct ReadOptions {
    /// Starts small enough to stay in cache while it is parsed, and grows when one event is larger.
    std::size_t buffer_bytes = std::size_t{1} << 20;
    /// Keep the NCCL arguments of collectives (RankTrace::collectives): only collective_volume
    /// reads them, and walking every event's args is a quarter of the parse. Without them the
    /// args of all but metadata (ph "M") events are skipped, still checked as JSON.
    bool collective_args = true;
};

/// A trace the reader refused, with the parts of its message as data: what() is the whole
/// sentence ("<file>: byte N: <problem>"); verify words the same facts its own way.
class TraceReadError : public HarnessError {
public:
    enum class Kind : std::uint8_t {
        truncated, ///< the file ends inside `unit` (`problem` names it), which starts at `unit_start`
        malformed, ///< bad JSON, a wrong type, a limit passed: `problem`
        no_events, ///< a JSON object without a traceEvents array
    };
    TraceReadError(const std::string& what, Kind kind, std::optional<std::uint64_t> offset, std::string problem)
        : HarnessError(what, k_exit_usage), m_kind(kind), m_offset(offset), m_problem(std::move(problem)) {}
    Kind kind() const { return m_kind; }
    /// Byte offset in the (uncompressed) stream, when the error has one.
    std::optional<std::uint64_t> offset() const { return m_offset; }
    /// The problem without the file and offset ("expected ':' after a key", "the start of the trace").
    const std::string& problem() const { return m_problem; }

private:
    Kind m_kind;
    std::optional<std::uint64_t> m_offset;
    std::string m_problem;
};

/// Reads one trace file. Malformed input (not JSON, truncated, wrong top-level type, traceEvents
/// not an array, an event that is not an object, an X event without a numeric ts or dur) throws
/// TraceReadError (exit 2) naming the file and the byte offset (uncompressed, for gzip); a file
/// that cannot be opened or a damaged gzip stream throws HarnessError.
RankTrace read_trace(const fs::path& path, const ReadOptions& options = {});

} // namespace harness::metrics
