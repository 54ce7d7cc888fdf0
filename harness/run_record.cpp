#include "run_record.hpp"

#include "util/error.hpp"
#include "version.hpp"

#include <ctime>
#include <fmt/format.h>

namespace harness {

std::string to_string(RunState state) {
    switch (state) {
    case RunState::rendered: return "rendered";
    case RunState::submitted: return "submitted";
    case RunState::running: return "running";
    case RunState::completed: return "completed";
    case RunState::failed: return "failed";
    case RunState::cancelled: return "cancelled";
    case RunState::timeout: return "timeout";
    }
    return "unknown";
}

bool is_final(RunState state) {
    return state == RunState::completed || state == RunState::failed || state == RunState::cancelled ||
           state == RunState::timeout;
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buffer;
}

void RunRecord::transition(RunState next, const fs::path& run_dir, const std::string& why) {
    if (is_final(state)) {
        throw HarnessError(fmt::format("run {} is already {}; cannot become {}", run_id, to_string(state), to_string(next)));
    }
    if (next == state && why.empty() && !transitions.empty()) {
        return;
    }
    state = next;
    if (!why.empty()) {
        reason = why;
    }
    transitions.emplace_back(to_string(next), utc_now());
    save(run_dir);
}

Json RunRecord::to_json() const {
    Json json = Json::object();
    json["format"] = 1;
    json["harness_version"] = k_version;
    json["run_id"] = run_id;
    json["card"] = card;
    json["target"] = target;
    json["executor"] = executor;
    json["state"] = to_string(state);
    json["reason"] = reason;
    json["job_ids"] = json_string_array(job_ids);
    json["transitions"] = Json::array();
    for (const auto& [name, time] : transitions) {
        json["transitions"].push_back(Json(Json::Object{{"state", name}, {"time", time}}));
    }
    json["ranks"] = Json::array();
    for (const auto& rank : ranks) {
        Json entry = Json::object();
        entry["rank"] = rank.rank;
        entry["exit_code"] = rank.exit_code ? Json(*rank.exit_code) : Json();
        entry["signal"] = rank.signal;
        entry["log"] = rank.log;
        entry["seconds"] = rank.seconds;
        json["ranks"].push_back(entry);
    }
    json["traces"] = json_string_array(traces);
    json["scheduler"] = scheduler;
    return json;
}

void RunRecord::save(const fs::path& run_dir) const { write_file_atomic(run_dir / "run.json", to_json().dump()); }

} // namespace harness
