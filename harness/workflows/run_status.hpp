#pragma once
// `ccl-harness status`: what a results directory holds, read from the records the harness
// wrote (run.json, metrics.json, sweep.json). Read-only; a record it cannot read becomes a row
// saying so, never an error that hides the rest.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness {

/// The state `status` shows for a run whose record says it is still going while the harness
/// that recorded it is gone (recorded_harness_gone): never "running".
inline constexpr const char* k_harness_died = "harness died";

struct RunSummary {
    std::string id;
    std::string dir;
    std::string sweep; ///< the sweep directory's name when the run belongs to one
    std::string state; ///< from run.json; "unreadable" when it cannot be read; k_harness_died
    std::string card;
    std::string target;
    std::string start; ///< UTC, first transition
    std::string end;   ///< UTC, the final transition; empty while running
    std::optional<double> duration_s;
    std::string bundle;                         ///< <dir>.tar.zst when it exists
    std::optional<double> avg_step_time;        ///< s, from metrics.json
    std::optional<double> compute_comm_overlap; ///< %, from metrics.json
    std::string problem;                        ///< why the record could not be read
    std::string failure_class;                  ///< run.json's failure_class (failed, cancelled, timeout)
    std::string failure_evidence;               ///< what decided it
    std::vector<std::string> overrides;         ///< the --set (a sweep point's) PATH=VALUE overrides it was made with
};

struct SweepSummary {
    std::string id;
    std::string dir;
    std::string card;
    std::size_t points = 0;
    std::map<std::string, std::size_t> states; ///< point state -> count
    std::string problem;
    std::map<std::string, std::vector<std::string>> overrides; ///< a point's run directory name -> its overrides
};

struct ResultsStatus {
    std::vector<RunSummary> runs; ///< oldest first
    std::vector<SweepSummary> sweeps;
};

/// Scans `results` and, one level down, every sweep directory in it; `results` may itself be a
/// sweep directory (sweep.json). Runs of a sweep carry their point's overrides. Throws an input
/// error when `results` is not a directory.
ResultsStatus scan_results(const fs::path& results);

/// One run directory's summary (`sweep`: the sweep directory's name when it belongs to one).
/// Never throws: what cannot be read becomes `problem`.
RunSummary summarize_run(const fs::path& dir, const std::string& sweep);

/// An ISO-8601 UTC time as run.json writes it (2026-11-23T02:18:39Z); nullopt when it is not one.
std::optional<std::time_t> parse_utc(const std::string& text);

/// Seconds between two ISO-8601 UTC times (2026-11-23T02:18:39Z); nullopt when either is not one.
std::optional<double> seconds_between(const std::string& start, const std::string& end);

/// The table `status` prints.
std::string format_status(const ResultsStatus& status);
Json status_to_json(const ResultsStatus& status);

} // namespace harness
