#pragma once
// The one place that knows which file names are traces, which rank a name carries, and which
// names the CCL-Bench tools read. Collection (trace_collect), pack (bundle_card), verify
// (trace_check) and metrics (metrics_input) all ask here, each keeping its own policy.
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace harness {

/// The serving client's result kept beside the traces: logs/<stem>.json in a run or bundle (a
/// two-pass run also keeps logs/<stem>_profile.json). The serving templates name the file with
/// fw.result_stem, which the plan sets from here; metrics read it back (find_serving_result).
inline constexpr const char* k_serving_result_stem = "bench_serve";

enum class TraceKind {
    not_a_trace,
    kineto,      ///< torch profiler JSON (Kineto's object form or the legacy autograd array)
    nsys_rep,    ///< Nsight Systems report
    nsys_sqlite, ///< Nsight Systems report exported to SQLite
    xla,         ///< TPU/XLA profile: <host>.trace.json(.gz) or *.xplane.pb
};

/// Who gave the file its name.
enum class TraceNameForm {
    none,                ///< not a trace
    ccl_bench,           ///< kineto_trace_<r>.json(.gz), nsys_<r>.nsys-rep/.sqlite, XLA names
    torchtitan,          ///< rank<r>_trace.json(.gz)
    megatron,            ///< rank-<r>.json(.gz)
    tensorboard_handler, ///< <worker>.<time_ns>.pt.trace.json(.gz): no rank in the name
    sglang_bench,        ///< SGLang bench_one_batch's <prefix>_batch<b>_input<i>_output<o>_<stage>.trace.json(.gz)
    other_nsys,          ///< <anything>.nsys-rep not named nsys_<r>
};

struct TraceName {
    TraceKind kind = TraceKind::not_a_trace;
    TraceNameForm form = TraceNameForm::none;
    std::optional<long long> rank; ///< when the name carries one
    bool compressed = false;       ///< the name ends in .gz
    /// The file is JSON text (gzip'd when `compressed`): a torch trace by any of its names, or an
    /// XLA <host>.trace.json(.gz); not an .xplane.pb or an nsys report.
    bool json = false;
    /// True when the name is already one the CCL-Bench tools read (rank written without leading
    /// zeros for the per-rank forms).
    bool canonical = false;
    /// The name the tools read for this file: the name itself when canonical, the per-rank name
    /// when the rank is known, empty when it is not (tensorboard handler, other nsys reports).
    std::string canonical_name;
};

/// Classifies a bare file name (no directory). Never throws.
TraceName classify_trace_name(std::string_view file_name);

/// kineto_trace_<r>.json(.gz) for kineto, nsys_<r>.nsys-rep / nsys_<r>.sqlite for nsys; empty for
/// the kinds without per-rank names.
std::string canonical_trace_name(TraceKind kind, long long rank, bool compressed);

/// "kineto_trace_<rank>.json(.gz), nsys_<rank>.nsys-rep, <host>.trace.json.gz or *.xplane.pb":
/// the names listed in messages that say what a trace should be called.
std::string expected_trace_names();

/// "TorchTitan's rank<r>_trace.json" and the like, for messages; empty for ccl_bench and none.
std::string describe_trace_name_form(TraceNameForm form);

/// True for the JSON trace names a bundle holds traces under, the ones verify parses:
/// kineto_trace_<rank>.json(.gz), <host>.trace.json(.gz) (not torch's <worker>.pt.trace.json, not
/// *.xplane.pb).
bool is_trace_file_name(std::string_view file_name);

/// The rank in kineto_trace_<rank>.json or kineto_trace_<rank>.json.gz, or -1 for any other name.
long long kineto_trace_rank(std::string_view file_name);

/// Why the file at `relative_path` (inside a bundle) looks like a trace the CCL-Bench tools will
/// not find, naming the name they expect, or empty: a canonical trace name inside a folder,
/// TorchTitan's rank<r>_trace.json, Megatron's rank-<r>.json(.gz), a rank with leading zeros,
/// torch's tensorboard-handler <worker>.pt.trace.json, any other top-level *trace*.json.
std::string misplaced_trace_problem(std::string_view relative_path);

/// What Kineto writes near the top of a trace when torch.distributed is initialized:
/// "distributedInfo": {"backend": "nccl", "rank": R, "world_size": N, ...}.
struct DistributedInfo {
    long long rank = -1;
    long long world_size = -1; ///< -1 when absent
    std::string backend;       ///< empty when absent
};

/// The one rule for a trace's distributedInfo.rank, given the JSON text of its value: a whole
/// number from 0 to k_max_distributed_rank names a rank; anything else (negative, 2.5, 1e308, a
/// string) names none, and `problem` says why in words a user can act on.
constexpr long long k_max_distributed_rank = 1'000'000'000;
struct DistributedRank {
    long long rank = -1;
    std::string problem; ///< empty when `rank` is one
};
DistributedRank distributed_rank_of(std::string_view json_value);

/// How far into a trace read_distributed_info looks: Kineto puts the metadata before traceEvents.
constexpr std::size_t k_distributed_info_window = std::size_t{4} << 20;

/// Finds "distributedInfo" in the first `window` (uncompressed) bytes of `trace`, gzip or plain
/// (recognised by the magic bytes). nullopt when it is not there, has no integer rank >= 0, is
/// malformed, or the file cannot be read: the caller then treats the rank as unknown.
std::optional<DistributedInfo> read_distributed_info(const fs::path& trace, std::size_t window = k_distributed_info_window);

/// As read_distributed_info, and says why a distributedInfo that is there names no rank (its
/// rank missing or not a rank by distributed_rank_of), so a caller can report a trace's false
/// word rather than call it silent. `problem` is empty when the rank was read or nothing is there.
struct DistributedInfoRead {
    std::optional<DistributedInfo> info;
    std::string problem;
};
DistributedInfoRead read_distributed_info_checked(const fs::path& trace, std::size_t window = k_distributed_info_window);

} // namespace harness
