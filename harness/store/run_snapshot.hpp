#pragma once
// What the store keeps of one run directory, read with the run's own readers (RunRecord::load,
// the YAML and JSON readers of util/): the store never parses a record format itself.
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness::store {

struct MetricValue {
    std::string name;
    std::optional<double> value;
    std::string unit;
    bool implausible = false;
};

struct RunSnapshot {
    std::string run_id, run_dir, card, framework, cluster, executor, state;
    std::string failure_class, failure_reason, created, started, ended, bundle_path;
    std::vector<std::pair<std::string, std::string>> card_fields; ///< dotted path, scalar value
    std::vector<std::pair<std::string, std::string>> overrides;   ///< --set PATH, VALUE
    /// What provenance.json pinned: each source repository and its commit, the harness
    /// ("ccl-harness", its commit), the image ("image:<name>", its digest) and the image id
    /// the runtime reported ran ("image_id", the id).
    std::vector<std::pair<std::string, std::string>> pins;
    std::vector<MetricValue> metrics;
    std::string render_key; ///< render/render_key.hpp over rendered/; "" when there is none
};

/// Sizes and modification times of the files a snapshot is read from: a run whose fingerprint
/// is unchanged is not read again.
std::string run_fingerprint(const fs::path& run_dir);

/// Reads `run_dir`; throws (HarnessError) what its readers throw for a record that is not one.
RunSnapshot read_run_snapshot(const fs::path& run_dir);

/// Whether `dir` is a run directory (holds run.json).
bool is_run_directory(const fs::path& dir);

} // namespace harness::store
