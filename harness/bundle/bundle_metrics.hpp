#pragma once
// metrics.json: the CCL-Bench metrics a bundle's traces give (default mode), stored by pack and
// recomputed by verify, so that a number on a leaderboard can be traced to the bytes it came from.
#include "metrics/metrics.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <string>
#include <vector>

namespace harness {

inline constexpr const char* k_metrics_name = "metrics.json";

/// {"format": 1, "mode": "default", "metrics": {"<name>": {"value": x | null, "unit", "why"}}}
/// for the rank traces of `dir` (a run directory or an unpacked bundle). Only what does not
/// depend on where the traces sit is kept, so a run directory and its bundle give the same
/// bytes. Malformed traces throw HarnessError (exit 2) naming the file and byte offset.
Json bundle_metrics(const fs::path& dir);

/// `ccl-harness metrics PATH`: a packed bundle is unpacked safely into a scratch directory that
/// goes away afterwards (the report's paths are then relative to it); anything else goes to
/// compute_metrics as it is.
metrics::MetricsReport metrics_of_input(const fs::path& path, const metrics::MetricsOptions& options);

/// Every way `stored` (metrics.json as read) disagrees with `recomputed`: a metric applicable in
/// one and not the other, or values further apart than 1e-9 relative. A metric the stored file
/// lacks is not a disagreement (a bundle packed before the metric existed; the manifest's sha256
/// already guards the file's bytes): metrics_not_stored names those.
std::vector<std::string> compare_bundle_metrics(const Json& stored, const Json& recomputed);

/// The metrics `recomputed` has and `stored` lacks, in `recomputed`'s order.
std::vector<std::string> metrics_not_stored(const Json& stored, const Json& recomputed);

} // namespace harness
