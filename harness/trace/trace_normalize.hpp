#pragma once
// Puts every PyTorch trace into Kineto's object form, the one the CCL-Bench tools read.
#include "util/fs.hpp"

#include <string>

namespace harness {

struct TraceIdentity {
    long long rank = 0;
    long long world_size = 1;
    std::string backend; ///< nccl | gloo
};

struct NormalizeResult {
    std::string format; ///< "kineto" (left as it was) or "legacy-autograd" (converted)
    std::size_t events = 0;
    std::size_t steps = 0; ///< ProfilerStep#N markers
};

/// Reads `source` and writes `target` (atomically). Kineto traces are copied byte for byte.
/// The legacy autograd form of torch without Kineto (a bare JSON array, no `cat`, the rank only in
/// the file name, ProfilerStep#N numbered one below Kineto's) becomes
/// {"traceEvents": [...], "distributedInfo": {...}} with `cat` filled (user_annotation for step
/// markers, cpu_op for operators) and step labels renumbered; no event is dropped.
/// A file that is not a trace is a HarnessError naming the file and the byte offset.
NormalizeResult normalize_trace(const fs::path& source, const fs::path& target, const TraceIdentity& identity);

} // namespace harness
