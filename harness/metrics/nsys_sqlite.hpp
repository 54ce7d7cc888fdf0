#pragma once
// Nsight Systems reports exported to SQLite (`nsys export --type=sqlite`) read into the RankTrace
// the JSON reader makes, so that every metric works on them unchanged: GPU kernels
// (CUPTI_ACTIVITY_KIND_KERNEL, names through StringIds), NVTX ranges named like step markers
// (NVTX_EVENTS), the GPUs (TARGET_INFO_GPU) and the export's schema version. Every table is
// optional (a time-window export may have no kernels and no TARGET_INFO_GPU); columns are looked
// up by name, so the 2.x and 3.x schemas read alike. The file is opened by GuardedSqlite.
#include "metrics/trace_events.hpp"
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness::metrics {

/// The deviceIds the export's kernels ran on, ascending; empty when it has no kernels. An export
/// of a process that drove several GPUs (a serving engine's workers, a single-process
/// multi-GPU job) is read as one rank per device.
std::vector<long long> nsys_kernel_devices(const fs::path& file);

/// Reads one export; with `device`, only that device's kernels (and its TARGET_INFO_GPU row).
/// Bad input (not SQLite, truncated, a view or trigger standing in for an nsys table, a kernel
/// ending before it starts or without a name, a string id StringIds does not hold) throws
/// TraceReadError (exit 2) naming the file.
RankTrace read_nsys_sqlite(const fs::path& file, std::optional<long long> device = std::nullopt);

/// What verify asks of a listed export: that it opens and holds a kernel table.
struct NsysCheck {
    bool kernel_table = false;
    std::string problem; ///< why it cannot be read, or what it lacks; empty when it is usable
};
NsysCheck check_nsys_sqlite(const fs::path& file);

} // namespace harness::metrics
