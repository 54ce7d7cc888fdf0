#pragma once
// provenance.json's format (docs/bundle.md): its names, and the check `verify` runs on it.
// Recording it is the run's last step (run/record_provenance.hpp).
#include "util/fs.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

inline constexpr int k_provenance_format = 1;
inline constexpr const char* k_provenance_name = "provenance.json";
inline constexpr const char* k_harness_patch_name = "harness.patch";
/// provenance.json's `origin` for a job the harness did not run (`ccl-harness ingest`). A harness
/// run writes no `origin`, so that its record reads exactly as before ingest existed.
inline constexpr const char* k_origin_ingested = "ingested";
/// run.executor (and run.json's executor) of an ingested record.
inline constexpr const char* k_executor_ingested = "ingested";
/// In `ingested`, only for an archive holding some ranks' traces (`ingest --ranks`): the ranks
/// traced, ascending, and the job's rank count (the card's total_count). Absent: every rank.
inline constexpr const char* k_ingested_ranks_present = "ranks_present";
inline constexpr const char* k_ingested_total_count = "total_count";

/// "sha256:<64 hex>" when `image` is pinned by digest (`name@sha256:...`), else nothing.
std::optional<std::string> container_digest(const std::string& image);

/// Whether `provenance` says origin "ingested": made from a hand-run job or an archived data point,
/// with none of the pins a harness run records (verify reports it as "unpinned, ingested").
bool is_ingested_provenance(const Json& provenance);

/// The ranks an ingested record says it holds traces for (ingested.ranks_present) and the job's
/// rank count; nothing when it holds every rank or is not ingested. Read as written (integers
/// only): provenance_problems says what is wrong with it.
struct PresentRanks {
    std::vector<long long> ranks;
    long long total = 0;
};
std::optional<PresentRanks> ingested_ranks_present(const Json& provenance);

/// Every way `provenance` breaks format 1: missing or mistyped keys, commits that are not 40
/// lowercase hex digits, sha256s that are not 64, times that are not UTC, captured names that
/// the capture rules forbid. Each line is "<field>: <problem>"; empty means well-formed.
/// An ingested record (origin "ingested") is held to what ingest can know: harness.commit null
/// and clean (the harness did not run the job), run.executor "ingested", ingested.at a UTC time,
/// no `reproduces`, ingested.ranks_present (when there) strictly ascending ranks below
/// ingested.total_count and fewer than it; run.cluster, run.started, sources[].commit, hosts, environment and scheduler
/// may be null (unknown). A record without origin that claims executor "ingested" is a problem,
/// so that the two are never confused.
std::vector<std::string> provenance_problems(const Json& provenance);

/// provenance_problems on `dir`/provenance.json (a bundle or a run directory), plus a missing
/// or unparsable file and a harness.patch that it names but `dir` lacks. Lines are prefixed
/// with the file name they concern.
std::vector<std::string> check_provenance_file(const fs::path& dir);

} // namespace harness
