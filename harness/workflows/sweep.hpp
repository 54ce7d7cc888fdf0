#pragma once
// `ccl-harness sweep`: one card run over a matrix of field values. Each point is the card with
// `--set PATH=VALUE` overrides, checked like `validate --strict` before anything runs; points
// that fail the check are recorded as skipped and never run. On a local target the points run
// one after another in this process; on Slurm every point is rendered first, then submitted as
// one job array per geometry (sweep_array.hpp). sweep.json records every point after every
// change, so a crash or Ctrl-C leaves a sweep that `sweep --resume` can finish.
#include "util/fs.hpp"
#include "util/json.hpp"
#include "workflows/slurm_dry_run.hpp"

#include <iosfwd>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace harness {

/// One `--vary PATH=V1,V2,...`.
struct SweepAxis {
    std::string path;
    std::vector<std::string> values;
};

/// Parses `PATH=V1,V2,...`. Throws an input error for a missing `=`, an empty path or an empty
/// value (`a,,b`, a trailing comma).
SweepAxis parse_vary(const std::string& text);

/// The points of the matrix, each as the `PATH=VALUE` overrides it applies, first axis varying
/// slowest. `zip` pairs the i-th values of every axis instead of crossing them; the axes must
/// then have the same length. Throws an input error for no axes, a repeated path or, with
/// `zip`, unequal lengths.
std::vector<std::vector<std::string>> expand_matrix(const std::vector<SweepAxis>& axes, bool zip);

/// How many points expand_matrix would make, without making them (saturating at 2^64-1).
std::uint64_t count_points(const std::vector<SweepAxis>& axes, bool zip);

/// The most points a sweep expands unless --max-points raises it: far beyond any sweep that
/// runs one job after another, far below what takes minutes and gigabytes to check.
constexpr std::uint64_t k_sweep_max_points = 1000;

enum class PointState { pending, skipped, running, completed, failed, cancelled };

std::string to_string(PointState state);

struct SweepPoint {
    std::vector<std::string> overrides;
    PointState state = PointState::pending;
    std::string reason; ///< why skipped or failed
    std::string run_dir;
    std::string bundle;
    std::optional<int> exit_code;
    std::string job_id;      ///< on Slurm: the array task, "<array>_<index>" (the index is the point's)
    std::string slurm_state; ///< on Slurm: the task's last JobState
    /// sweep --reuse: an earlier completed run rendered alike is the point's result (run_dir and
    /// bundle are that run's, wherever it lives); nothing ran for it.
    bool reused = false;
};

/// sweep.json.
struct SweepRecord {
    std::string id;
    std::string card;        ///< absolute path of the card
    std::string card_sha256; ///< the card as it was when the sweep began; resume refuses an edited one
    std::string cluster;     ///< --cluster, empty: each point's inferred target
    bool zip = false;
    std::vector<SweepAxis> axes;
    std::vector<SweepPoint> points;
    std::string created; ///< UTC

    Json to_json() const;
    /// Throws an input error naming `file` and the field when the JSON is not a sweep record.
    static SweepRecord from_json(const Json& json, const std::string& file);
    void save(const fs::path& sweep_dir) const;
    static SweepRecord load(const fs::path& sweep_dir);
};

inline constexpr const char* k_sweep_file = "sweep.json";

struct SweepOptions {
    fs::path card;
    std::vector<std::string> vary; ///< PATH=V1,V2,...
    bool zip = false;
    std::string cluster;
    fs::path results = "results";
    bool dry_run = false;
    fs::path resume; ///< a sweep directory to finish instead of a new sweep
    double grace_seconds = 5;
    std::vector<std::string> secret_names; ///< --secret NAME, handed to every point's run
    fs::path git_cache;
    std::uint64_t max_points = k_sweep_max_points; ///< more points is an input error
    std::uint64_t max_parallel = 0;                ///< Slurm: at most this many array tasks at once (--array=...%K); 0 no limit
    fs::path home;                                 ///< the harness home: templates, profiles (the command line reads it once)
    bool reuse = false;                            ///< each point as `run --reuse` (workflows/run_reuse.hpp)
};

/// What a sweep did: the same points sweep.json records.
struct SweepOutcome {
    std::string id;     ///< empty for a dry run of a new sweep (nothing written)
    fs::path sweep_dir; ///< absolute; empty for a dry run of a new sweep
    std::string card;   ///< absolute path of the card
    std::vector<SweepPoint> points;
    bool dry_run = false;
    bool interrupted = false;
    int exit_code = 0; ///< 0 every runnable point completed, 1 some failed, 130 interrupted
    /// A dry run of a new sweep on Slurm: each point's bill, parallel to `points` (empty for a
    /// skipped point), and their sums; the allocation total is unknown when any point's is.
    std::vector<std::optional<SlurmBill>> bills;
    double total_node_hours = 0;
    std::optional<double> total_allocation_hours;
};

/// Runs (or resumes) a sweep, streaming each point's progress and rank output to `out`.
/// Invalid input (including: no point passes the check) throws an input error.
SweepOutcome run_sweep(const SweepOptions& options, std::ostream& out);

/// One point as sweep.json and `sweep --json` write it.
Json sweep_point_to_json(const SweepPoint& point);

/// The outcome as `sweep --json` prints it (keys documented in `sweep --help`).
Json sweep_outcome_to_json(const SweepOutcome& outcome);

/// The human summary: counts by state, the sweep directory, each failure with its reason, and
/// the way to resume an interrupted sweep.
std::string format_sweep_outcome(const SweepOutcome& outcome);

} // namespace harness
