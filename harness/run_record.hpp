#pragma once
// run.json: what happened to a run, as a state machine
//   rendered -> submitted -> running -> completed | failed | cancelled | timeout
// with timestamps, job ids, per-rank outcomes and the reason for any failure. Written
// atomically after every transition, so a crash leaves the last known state on disk.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

enum class RunState { rendered, submitted, running, completed, failed, cancelled, timeout };

std::string to_string(RunState state);
bool is_final(RunState state);

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
    std::string executor;  ///< local | slurm | tpu-vm
    RunState state = RunState::rendered;
    std::string reason;
    std::vector<std::string> job_ids;
    std::vector<std::pair<std::string, std::string>> transitions;  ///< (state, UTC time)
    std::vector<RankOutcome> ranks;
    std::vector<std::string> traces;  ///< relative paths under traces/
    Json scheduler = Json::object();   ///< executor-specific facts (node list, accounting files)

    /// Moves to `state`, stamping the time, and saves. Leaving a final state is a logic error.
    void transition(RunState next, const fs::path& run_dir, const std::string& why = "");
    void save(const fs::path& run_dir) const;
    Json to_json() const;
};

/// ISO-8601 UTC, seconds precision: 2026-11-23T02:18:39Z.
std::string utc_now();

} // namespace harness
