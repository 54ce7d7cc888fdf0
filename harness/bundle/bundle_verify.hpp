#pragma once
// `verify`: the maintainers' submission checker. A bundle, packed (<name>.tar.zst) or unpacked
// (<name>/), is checked against docs/bundle.md and every problem is reported, never just the first.
#include "bundle/trace_check.hpp"
#include "util/json.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace harness {

namespace fs = std::filesystem;

/// What verify says of an ingested bundle (BundleReport::ingested), in text and JSON alike.
inline constexpr const char* k_unpinned_ingested = "unpinned, ingested";

struct BundleProblem {
    /// Relative to <name>/, with a line and column where the problem has one ("tiny.yaml:12:3");
    /// empty for a problem with the archive itself (damaged, truncated, wrong top level).
    std::string path;
    std::string message;
};

struct BundleTrace {
    std::string path; ///< relative to <name>/
    TraceCheck check;
};

struct BundleReport {
    std::string bundle; ///< the path as given
    std::string name;   ///< <name>, empty when the bundle has none
    /// The bundle directory checked: the one given (or the bundle inside it), or
    /// unpack_into/<top directory>; empty when the archive went to a scratch directory, which
    /// is gone by the time verify_bundle returns.
    fs::path directory;
    std::size_t files = 0;               ///< regular files under <name>/, manifest.json included
    std::vector<BundleProblem> problems; ///< sorted by path; empty means valid
    /// What a valid bundle holds that cannot be right: a metric outside its physical bounds,
    /// traces of another device than the card names (metrics.json, as recomputed).
    std::vector<BundleProblem> warnings;
    std::vector<BundleTrace> traces; ///< every trace file checked, sorted by path
    /// provenance.json says origin "ingested": a job the harness did not run, with no pins
    /// (reported as "unpinned, ingested"); false for every harness run.
    bool ingested = false;
    /// A partial bundle (`ingest --ranks`): the ranks its card's metric_source.ranks_present
    /// claims, as written; a claim the traces or provenance.json contradict is also a problem.
    /// Empty when the card claims none (every rank traced).
    std::vector<long long> ranks_present;
    long long total_count = 0; ///< the card's, with ranks_present

    bool valid() const { return problems.empty(); }
    bool partial() const { return !ranks_present.empty(); }
    /// "partial: ranks 0 of 4" (rank_set.hpp's form), empty when not partial.
    std::string partial_summary() const;
    std::size_t steps() const;
};

struct VerifyOptions {
    /// Where an archive is unpacked, in a fresh directory removed afterwards; empty means
    /// $TMPDIR, else /tmp.
    fs::path scratch_root;
    /// When set, an archive is unpacked here instead (a path that must not exist yet) and left
    /// for the caller to use and remove: reproduce runs what it verified. The extractor removes
    /// it again when it refuses the archive.
    fs::path unpack_into;
};

/// Checks `bundle`, a .tar.zst or an unpacked bundle directory (or the directory it was unpacked
/// into, when that holds only <name>/). Problems found:
///  - manifest.json against the files (check_manifest: sizes, sha256s, missing, unlisted);
///  - <name>.yaml missing or not a valid card (validate's errors, with their line), its
///    trace_url not <name>.tar.zst, metric_source.traces not naming the kinds of trace held;
///  - every trace (kineto_trace_<rank>.json, <host>.trace.json(.gz)): check_trace's problem, or
///    the legacy array form; a trace under another name (rank0_trace.json...) or in a folder;
///  - kineto_trace_<rank>.json ranks not exactly 0..total_count-1, or, in a partial bundle, not
///    exactly the card's metric_source.ranks_present (ascending ranks below total_count, fewer than
///    it), which must equal provenance.json's ingested.ranks_present;
///  - provenance.json pins (format 1, harness.version, harness.commit null or 40 hex, inputs[]
///    sha256 64 hex, sources[] commit 40 hex, container.digest null or sha256:<64 hex>, run.id
///    equal to <name>, harness.patch present when dirty);
///  - run.json not "completed" or about another run; scripts/ missing or empty.
/// A run directory (rendered/, no manifest.json) gets one problem saying to pack it; a damaged
/// or truncated archive gets one problem saying so. An archive is unpacked with
/// extract_tar_zst_safely into a scratch directory that is removed whatever happens (or into
/// `unpack_into`).
/// Unusable input throws HarnessError with exit 2: a missing path, neither file nor directory,
/// a file that is not a zstd-compressed tar (a .tar.gz, a plain tar or a zip is named as such),
/// or an archive the safe extractor refuses (its message). Ctrl-C (once interrupt handlers are
/// installed) throws HarnessError with exit 130, the scratch directory removed.
BundleReport verify_bundle(const fs::path& bundle, const VerifyOptions& options = {});

/// {"bundle", "valid", "name", "files", "problems": [{"path", "message"}],
///  "traces": [{"path", "form", "compressed", "events", "steps", "step_marker"}], "steps"}, plus
///  "provenance": "unpinned, ingested" for an ingested bundle and "partial": {"ranks_present",
///  "total_count", "summary": "partial: ranks 0 of 4"} for a partial one.
Json bundle_report_to_json(const BundleReport& report);

} // namespace harness
