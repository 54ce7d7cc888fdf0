#pragma once
// The CCL-Bench Python tools' name patterns, one per tool, exactly as they are (case-insensitive
// re.search), so that --reference reproduces their numbers, misclassifications included.
#include <string_view>

namespace harness::metrics {

enum class ReferencePattern : unsigned char {
    overlap,     ///< compute_comm_overlap: nccl|all[_-]?reduce|...|sendrecv|collective
    fraction,    ///< communication_fraction: ...|send|recv|p2p|communicate
    total_time,  ///< total_communication_time: ^nccl|ncclDevKernel|ncclKernel|allreduce|...
    xla_overlap, ///< compute_comm_overlap on XLA traces: the overlap pattern without broadcast
};

/// The regular expression as the tool writes it, for reports.
const char* pattern_text(ReferencePattern pattern);

bool reference_is_comm(ReferencePattern pattern, std::string_view name);

/// compute_comm_overlap's XLA compute test: dot, convolution, gemm, matmul, fusion, compute,
/// custom-call anywhere in the lowercased name.
bool reference_is_xla_compute(std::string_view name);

/// SGLang step markers: avg_step_time matches `(^|:) run_batch$`, compute_comm_overlap
/// `\brun_batch\b`.
bool reference_sglang_step_for_step_time(std::string_view name);
bool reference_sglang_step_for_overlap(std::string_view name);

} // namespace harness::metrics
