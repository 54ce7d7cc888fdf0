#pragma once
// run.json: what happened to a run, as a state machine
//   rendered -> submitted -> running -> completed | failed | cancelled | timeout
// with timestamps, job ids, per-rank outcomes and the reason for any failure. Written
// atomically after every transition, so a crash leaves the last known state on disk.
#include "provenance/secret_scrub.hpp"
#include "run/failure_class.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

enum class RunState { rendered, submitted, running, completed, failed, cancelled, timeout };

std::string to_string(RunState state);
bool is_final(RunState state);
/// Whether `name` (as run.json spells a state) is a final state; an unknown name is not.
bool is_final_state_name(const std::string& name);

struct RankOutcome {
    int rank = 0;
    std::optional<int> exit_code;
    int signal = 0;
    std::string log;
    double seconds = 0;
};

struct RunRecord {
    std::string run_id;
    std::string card;
    std::string target;
    std::string executor; ///< local | slurm | tpu-vm
    RunState state = RunState::rendered;
    std::string reason;
    /// A failed, cancelled or timed-out run's class (failure_classes()) and what decided it;
    /// empty otherwise, and in a record an older harness wrote.
    std::string failure_class;
    std::string failure_evidence;
    std::vector<std::string> job_ids;
    std::vector<std::pair<std::string, std::string>> transitions; ///< (state, UTC time)
    std::vector<RankOutcome> ranks;
    std::vector<std::string> traces; ///< relative paths under traces/
    /// The --set PATH=VALUE overrides the run was made with (a sweep point's too), so `status` can
    /// tell apart runs of one card; secrets in them are scrubbed like everything saved.
    std::vector<std::string> overrides;
    Json scheduler = Json::object(); ///< executor-specific facts (node list, accounting files)
    /// The harness process following the run: with its start time (process_start_time) a pid
    /// reused later is not mistaken for it, so `status` can tell a run whose harness died.
    int harness_pid = 0;
    unsigned long long harness_start_time = 0;
    std::string harness_host;
    /// A Slurm job id: the job outlives the harness by design (sbatch), so a dead harness
    /// leaves it running under Slurm's control, not orphaned.
    std::string detached_job;
    /// Not saved: applied to what save writes (a reason quoting a log, sbatch's output...).
    const SecretScrubber* secrets = nullptr;

    /// Records this process as the run's harness.
    void claim();

    /// Moves to `state`, stamping the time, and saves. Leaving a final state is a logic error.
    /// Ending failed, cancelled or timeout classifies the failure (classify_failure over what
    /// `run_dir` holds); `stage` names the harness's step that ended it, when it was one.
    void transition(RunState next, const fs::path& run_dir, const std::string& why = "", FailureStage stage = FailureStage::job);
    void save(const fs::path& run_dir) const;
    Json to_json() const;

    /// Reads `<run_dir>/run.json`, the one reader of what save writes. A run directory is input
    /// (from shared scratch, a colleague): every field is checked as its declared type before
    /// anything acts on it. Throws an input error starting "run.json: FIELD: " (a link, not a
    /// regular file, past k_max_record_bytes, not JSON, a field of the wrong type, an unknown
    /// state or executor, a job id that is not a Slurm job id or TPU name, a time that does not
    /// parse, a name that is no safe relative path, control characters in a name, a string past
    /// its bound); absent fields keep their defaults, as an older harness wrote fewer.
    static RunRecord load(const fs::path& run_dir);
    /// The record in `json` (to_json's shape); throws as load does, without the file's errors.
    static RunRecord from_json(const Json& json);
};

/// Whether the harness recorded in run.json (`harness`: pid, start_time, host) is known to be
/// gone: on this host, no process with that pid, or one that started at another time. Another
/// host's harness, or a record without one, cannot be checked: false.
bool recorded_harness_gone(const Json& record);

/// ISO-8601 UTC, seconds precision: 2026-11-23T02:18:39Z.
std::string utc_now();

/// The largest run.json read back: a record is kilobytes (a reason quotes at most a few log
/// lines); past this a file is not one.
constexpr std::size_t k_max_record_bytes = std::size_t{16} << 20;

/// Why `name` is not a Cloud TPU name as the harness writes one into a TPU run's job_ids
/// (plan/plan_launch.cpp: lowercase letters, digits and hyphens, at most 63, never starting with
/// a hyphen, so never an option to gcloud), or "".
std::string tpu_name_problem(const std::string& name);

} // namespace harness
