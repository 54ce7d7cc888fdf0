#pragma once
// `ccl-harness ingest`: a job the harness did not run (submitted by hand, or an archived CCL-Bench
// data point) -> a run directory results/<card>-<time>-<hash>/ -> a verified bundle whose
// provenance says origin "ingested" and pins nothing the harness could not know.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct IngestOptions {
    fs::path card;    ///< the workload card the job ran
    fs::path traces;  ///< TRACE_DIR: what the tracers wrote, in the layouts they write
    fs::path scripts; ///< empty: none given (scripts/ then holds a note saying so)
    fs::path logs;    ///< empty: none given
    /// --ranks LIST (rank_set.hpp): the ranks TRACE_DIR holds traces for when not every rank's;
    /// nothing: every rank of the card's total_count.
    std::optional<std::string> ranks;
    fs::path results = "results";
    fs::path home; ///< the harness home (validate's contracts)
};

/// One trace of TRACE_DIR and the name it takes in the bundle.
struct IngestedTrace {
    std::string source;    ///< relative to TRACE_DIR
    std::string name;      ///< in traces/ (and at the bundle's top level)
    long long rank = -1;   ///< -1 for an XLA trace, which has no rank
    std::string rank_from; ///< "name", "distributedInfo" or "single rank"; empty without a rank
};

struct IngestOutcome {
    std::string run_id;
    fs::path run_dir;
    fs::path bundle;
    std::string bundle_sha256;
    std::size_t files = 0; ///< in the bundle
    std::size_t steps = 0; ///< ProfilerStep markers verify counted
    std::vector<IngestedTrace> traces;
    std::vector<std::string> warnings; ///< files of TRACE_DIR left out (not traces)
    /// A partial archive (--ranks naming fewer than total_count ranks): the ranks traced; empty
    /// when every rank is.
    std::vector<long long> ranks_present;
    long long total_count = 0; ///< the card's, at least 1
};

/// Checks everything before writing anything, then writes the run directory and packs and verifies
/// its bundle beside it. Input errors (exit 2), each naming the file and leaving nothing under
/// `results`: a card with validate errors (file:line:column: field), a TRACE_DIR that is missing,
/// empty or holds no trace, a link or special file in TRACE_DIR, --scripts or --logs, a file of
/// TRACE_DIR that looks like a trace (*.json, *.gz, *.pb, *.sqlite, *.nsys-rep, *.qdrep, *.zst, a
/// name with "trace") under a name trace_names.hpp cannot place (any other file, such as a card or a
/// README beside the traces, is left out with a warning), a trace whose rank is neither in its name nor in its distributedInfo (unless
/// the card has one rank and it is the only one), two traces of one kind for one rank, a rank outside the card's total_count, a rank
/// without its Kineto trace when others have one (the message names the --ranks that accepts what is there), a --scripts holding
/// subdirectories (a bundle's scripts/ is flat). With --ranks: a LIST parse_rank_list refuses, a listed rank without its trace,
/// a trace of a rank not listed, only XLA traces (per host, not per rank). A partial archive is recorded in provenance.json
/// (ingested.ranks_present, total_count) and in the card (metric_source.ranks_present). A bundle verify
/// finds invalid is a HarnessError listing its problems, and the run directory and bundle are removed.
IngestOutcome ingest_run(const IngestOptions& options, std::ostream& out);

/// {"run_id", "run_dir", "bundle", "sha256", "files", "steps", "traces": [{"source", "name",
/// "rank", "rank_from"}], "warnings", "provenance": "unpinned, ingested", "partial": null | {"ranks_present",
/// "total_count", "summary": "ranks 0 of 4"}}
Json ingest_outcome_to_json(const IngestOutcome& outcome);

} // namespace harness
