#include "run_record.hpp"

#include "util/error.hpp"
#include "util/process.hpp"
#include "version.hpp"

#include <ctime>
#include <limits>
#include <unistd.h>
#include <fmt/format.h>

namespace harness {

namespace {

std::string host_name() {
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

} // namespace

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

bool is_final_state_name(const std::string& name) {
    for (const RunState known : {RunState::rendered, RunState::submitted, RunState::running, RunState::completed,
                                 RunState::failed, RunState::cancelled, RunState::timeout}) {
        if (to_string(known) == name) {
            return is_final(known);
        }
    }
    return false;
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
    json["harness"] = harness_pid > 0 ? Json(Json::Object{{"pid", harness_pid},
                                                          {"start_time", static_cast<long long>(harness_start_time)},
                                                          {"host", harness_host}})
                                      : Json();
    json["detached_job"] = detached_job.empty() ? Json() : Json(detached_job);
    return json;
}

void RunRecord::save(const fs::path& run_dir) const {
    const Json json = to_json();
    write_file_atomic(run_dir / "run.json", (secrets != nullptr ? secrets->scrub_json(json) : json).dump());
}

void RunRecord::claim() {
    harness_pid = static_cast<int>(::getpid());
    harness_start_time = process_start_time(harness_pid).value_or(0);
    harness_host = host_name();
}

bool recorded_harness_gone(const Json& record) {
    const Json* harness = record.find("harness");
    if (harness == nullptr || !harness->is_object()) {
        return false;
    }
    const Json* pid = harness->find("pid");
    const Json* start = harness->find("start_time");
    if (pid == nullptr || !pid->is_int() || pid->as_int() <= 0 || pid->as_int() > std::numeric_limits<int>::max() ||
        harness->string_or("host") != host_name()) {
        return false;
    }
    const std::optional<unsigned long long> now = process_start_time(static_cast<int>(pid->as_int()));
    if (!now) {
        return true;
    }
    return start != nullptr && start->is_int() && start->as_int() > 0 &&
           static_cast<unsigned long long>(start->as_int()) != *now;
}

} // namespace harness
