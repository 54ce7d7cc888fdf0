#include "run/run_record.hpp"

#include "run/run_directory.hpp"
#include "util/error.hpp"
#include "util/process.hpp"
#include "util/quote.hpp"
#include "util/version.hpp"

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
    return state == RunState::completed || state == RunState::failed || state == RunState::cancelled || state == RunState::timeout;
}

bool is_final_state_name(const std::string& name) {
    for (const RunState known : {RunState::rendered, RunState::submitted, RunState::running, RunState::completed, RunState::failed,
                                 RunState::cancelled, RunState::timeout}) {
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
    if (!overrides.empty()) {
        json["overrides"] = json_string_array(overrides);
    }
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
    write_file_atomic(run_dir / run_files::k_record, (secrets != nullptr ? secrets->scrub_json(json) : json).dump());
}

namespace {

[[noreturn]] void bad_field(const std::string& field, const std::string& what) {
    throw input_error(fmt::format("{}: {}: {}", run_files::k_record, field, what));
}

std::string string_field(const Json& json, const std::string& key) {
    const Json* value = json.find(key);
    if (value == nullptr || value->is_null()) {
        return {};
    }
    if (!value->is_string()) {
        bad_field(key, "expected a string");
    }
    return value->as_string();
}

std::vector<std::string> string_list(const Json& json, const std::string& key) {
    std::vector<std::string> out;
    const Json* value = json.find(key);
    if (value == nullptr || value->is_null()) {
        return out;
    }
    if (!value->is_array()) {
        bad_field(key, "expected an array of strings");
    }
    for (const Json& item : value->as_array()) {
        if (!item.is_string()) {
            bad_field(key, "expected an array of strings");
        }
        out.push_back(item.as_string());
    }
    return out;
}

long long int_field(const Json& json, const std::string& key, const std::string& where) {
    const Json* value = json.find(key);
    if (value == nullptr || value->is_null()) {
        return 0;
    }
    if (!value->is_int()) {
        bad_field(where, "expected an integer");
    }
    return value->as_int();
}

std::optional<RunState> parse_state(const std::string& name) {
    for (const RunState known : {RunState::rendered, RunState::submitted, RunState::running, RunState::completed, RunState::failed,
                                 RunState::cancelled, RunState::timeout}) {
        if (to_string(known) == name) {
            return known;
        }
    }
    return std::nullopt;
}

} // namespace

RunRecord RunRecord::from_json(const Json& json) {
    if (!json.is_object()) {
        throw input_error(fmt::format("{}: not a JSON object", run_files::k_record));
    }
    RunRecord record;
    record.run_id = string_field(json, "run_id");
    record.card = string_field(json, "card");
    record.target = string_field(json, "target");
    record.executor = string_field(json, "executor");
    const std::string state = string_field(json, "state");
    if (!state.empty()) {
        const std::optional<RunState> known = parse_state(state);
        if (!known) {
            bad_field("state", fmt::format("unknown state {}", json_string(state)));
        }
        record.state = *known;
    }
    record.reason = string_field(json, "reason");
    record.job_ids = string_list(json, "job_ids");
    record.overrides = string_list(json, "overrides");
    if (const Json* transitions = json.find("transitions"); transitions != nullptr && !transitions->is_null()) {
        if (!transitions->is_array()) {
            bad_field("transitions", "expected an array");
        }
        for (const Json& item : transitions->as_array()) {
            if (!item.is_object()) {
                bad_field("transitions", "expected objects with state and time");
            }
            record.transitions.emplace_back(string_field(item, "state"), string_field(item, "time"));
        }
    }
    if (const Json* ranks = json.find("ranks"); ranks != nullptr && !ranks->is_null()) {
        if (!ranks->is_array()) {
            bad_field("ranks", "expected an array");
        }
        for (const Json& item : ranks->as_array()) {
            if (!item.is_object()) {
                bad_field("ranks", "expected objects");
            }
            RankOutcome rank;
            rank.rank = static_cast<int>(int_field(item, "rank", "ranks.rank"));
            if (const Json* code = item.find("exit_code"); code != nullptr && !code->is_null()) {
                rank.exit_code = static_cast<int>(int_field(item, "exit_code", "ranks.exit_code"));
            }
            rank.signal = static_cast<int>(int_field(item, "signal", "ranks.signal"));
            rank.log = string_field(item, "log");
            if (const Json* seconds = item.find("seconds"); seconds != nullptr && seconds->is_number()) {
                rank.seconds = seconds->as_double();
            }
            record.ranks.push_back(std::move(rank));
        }
    }
    record.traces = string_list(json, "traces");
    if (const Json* scheduler = json.find("scheduler"); scheduler != nullptr && scheduler->is_object()) {
        record.scheduler = *scheduler;
    }
    if (const Json* harness = json.find("harness"); harness != nullptr && harness->is_object()) {
        record.harness_pid = static_cast<int>(int_field(*harness, "pid", "harness.pid"));
        record.harness_start_time = static_cast<unsigned long long>(int_field(*harness, "start_time", "harness.start_time"));
        record.harness_host = string_field(*harness, "host");
    }
    record.detached_job = string_field(json, "detached_job");
    return record;
}

RunRecord RunRecord::load(const fs::path& run_dir) {
    const fs::path file = run_dir / run_files::k_record;
    std::string text;
    try {
        text = read_file(file);
    } catch (const std::exception& error) {
        throw input_error(fmt::format("{}: {}", run_files::k_record, error.what()));
    }
    Json json;
    try {
        json = Json::parse(text);
    } catch (const std::exception& error) {
        throw input_error(fmt::format("{}: {}", run_files::k_record, error.what()));
    }
    return from_json(json);
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
    return start != nullptr && start->is_int() && start->as_int() > 0 && static_cast<unsigned long long>(start->as_int()) != *now;
}

} // namespace harness
