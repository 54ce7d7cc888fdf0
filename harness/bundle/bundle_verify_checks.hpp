#pragma once
// What verify's checks share across their files (bundle_verify.cpp walks the input and the bundle
// directory; bundle_verify_record.cpp, _traces.cpp and _card.cpp check one part each). Internal
// to bundle/: the public entry point is bundle_verify.hpp.
#include "bundle/bundle_verify.hpp"

#include <cstdint>
#include <optional>
#include <simdjson.h>
#include <string>
#include <string_view>
#include <vector>

namespace harness::verify_checks {

using Problems = std::vector<BundleProblem>;

/// Throws HarnessError (exit 130) once Ctrl-C has been pressed: verify checks between files.
void check_interrupt();

/// A directory, not a link to one.
bool is_real_directory(const fs::path& path);

// ---- reading the bundle's JSON records (bundle_verify_record.cpp) ----

/// A parsed JSON file, or the problem that kept it from parsing (recorded under its name).
struct JsonRecord {
    simdjson::dom::parser parser;
    simdjson::dom::object root;
    bool ok = false;
};

/// Parses dir/name into `record`; a missing file is a problem ("missing (<what>)"), a link or
/// special file is left to check_manifest.
void load_record(const fs::path& dir, const std::string& name, const std::string& what, JsonRecord& record, Problems& problems);

/// The string at `key`, or nullopt when absent or not a string.
std::optional<std::string_view> string_at(simdjson::dom::object object, std::string_view key);

/// provenance.json: provenance.hpp's pins and format, and whether the record is about this bundle.
void check_provenance(const fs::path& dir, const std::string& name, Problems& problems);

/// metrics.json against the metrics recomputed from the bundle's traces.
void check_metrics(const fs::path& dir, Problems& problems, Problems& warnings);

/// provenance.json's container against container/image.json, container/packages.txt,
/// container/ran-*.json and scripts/Containerfile, and container/image.oci.tar safe to unpack
/// (util/oci_archive.hpp) and holding the image that ran (bundle_verify_container.cpp).
void check_container(const fs::path& dir, Problems& problems);

/// A partial bundle's ranks (report.ranks_present, from the card) against provenance.json's
/// ingested.ranks_present: the same ranks, or neither claims any.
void check_partial_record(const fs::path& dir, BundleReport& report);

/// run.json: a completed run, and this bundle's.
void check_run_record(const fs::path& dir, const std::string& name, Problems& problems);

/// scripts/ present and not empty.
void check_scripts(const fs::path& dir, const std::vector<std::string>& files, Problems& problems);

// ---- traces (bundle_verify_traces.cpp) ----

/// Every trace at the top of the bundle read by check_trace into report.traces, its problems
/// (and a second trace of one rank, the legacy array form, a trace misplaced) into report.problems.
void check_traces(const fs::path& dir, const std::vector<std::string>& files, BundleReport& report);

/// What the run's plan (scripts/plan.json) says its traces hold, read once for the checks below.
/// Bundles from before plan.json carried these, and hand-made bundles without one, have neither.
struct PlannedTraces {
    /// profile.traced_steps: ProfilerStep markers per Kineto trace; 0 when the plan counts none.
    std::int64_t steps = 0;
    /// framework_config.torch_profiler_ranks "0": the framework profiles rank 0 only (SGLang's
    /// bench_one_batch, harness/frameworks/sglang.cpp).
    bool rank0_only = false;
};

PlannedTraces read_planned_traces(const fs::path& dir);

/// The window the run was planned with against the ProfilerStep markers each Kineto trace holds.
void check_window(const PlannedTraces& planned, BundleReport& report);

// ---- the card (bundle_verify_card.cpp) ----

/// <name>.yaml: present, valid (validate's errors), its trace_url, metric_source.traces and
/// total_count (or, partial, metric_source.ranks_present, read into report.ranks_present) against
/// the traces held (check_traces has filled report.traces), and the card as PyYAML reads it
/// (card/pyyaml_reading.hpp: what loses meaning there is a problem).
void check_card(const fs::path& dir, const std::vector<std::string>& files, const PlannedTraces& planned, BundleReport& report);

} // namespace harness::verify_checks
