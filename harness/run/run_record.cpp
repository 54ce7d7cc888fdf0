#include "run/run_record.hpp"

#include "card/cluster.hpp"
#include "provenance/provenance.hpp"
#include "run/run_directory.hpp"
#include "run/slurm_client.hpp"
#include "util/error.hpp"
#include "util/own_file.hpp"
#include "util/process.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/version.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <limits>
#include <unistd.h>

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

void RunRecord::transition(RunState next, const fs::path& run_dir, const std::string& why, FailureStage stage) {
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
    if (next == RunState::failed || next == RunState::cancelled || next == RunState::timeout) {
        const FailureClass decided = classify_failure(gather_failure_facts(*this, to_string(next), run_dir, stage));
        failure_class = decided.name;
        // It quotes logs a Slurm job wrote, which are scrubbed only once gathered: the summary
        // prints it from here, before any save.
        failure_evidence = secrets != nullptr ? secrets->scrub(decided.evidence) : decided.evidence;
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
    if (!failure_class.empty()) {
        json["failure_class"] = failure_class;
        json["failure_evidence"] = failure_evidence;
    }
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

// Bounds on what a record holds (far past what a harness writes): a name is a path or less, a
// free text (a reason quoting log lines, an override) a few kilobytes, a list a few entries.
constexpr std::size_t k_max_name_bytes = 4096;
constexpr std::size_t k_max_text_bytes = std::size_t{1} << 20;
constexpr std::size_t k_max_list_entries = 100000;
constexpr std::size_t k_max_job_ids = 1024;

[[noreturn]] void bad_field(const std::string& field, const std::string& what) {
    throw input_error(fmt::format("{}: {}: {}", run_files::k_record, field, what));
}

/// A value as an error quotes it: escaped, and cut where it is long.
std::string shown(const std::string& value) {
    constexpr std::size_t k_shown = 48;
    return json_string(value.size() > k_shown ? value.substr(0, k_shown) + "..." : value);
}

enum class Text {
    name, ///< printed and handed to tools: no control character at all
    /// A message, only ever printed (escaped, as everything from input is): it quotes log lines,
    /// which carry tqdm's carriage returns and colour codes, so any character is kept.
    free,
};

void check_text(const std::string& field, const std::string& value, Text kind) {
    const std::size_t bound = kind == Text::name ? k_max_name_bytes : k_max_text_bytes;
    if (value.size() > bound) {
        bad_field(field, fmt::format("{} bytes, more than {}", value.size(), bound));
    }
    for (const char c : value) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 || byte == 0x7f) && kind == Text::name) {
            bad_field(field, fmt::format("control character in {}", shown(value)));
        }
    }
}

std::string string_field(const Json& json, const std::string& key, const std::string& where, Text kind = Text::name) {
    const Json* value = json.find(key);
    if (value == nullptr || value->is_null()) {
        return {};
    }
    if (!value->is_string()) {
        bad_field(where, "expected a string");
    }
    check_text(where, value->as_string(), kind);
    return value->as_string();
}

std::string string_field(const Json& json, const std::string& key) { return string_field(json, key, key); }

std::vector<std::string> string_list(const Json& json, const std::string& key, Text kind = Text::name,
                                     std::size_t max_entries = k_max_list_entries) {
    std::vector<std::string> out;
    const Json* value = json.find(key);
    if (value == nullptr || value->is_null()) {
        return out;
    }
    if (!value->is_array()) {
        bad_field(key, "expected an array of strings");
    }
    if (value->as_array().size() > max_entries) {
        bad_field(key, fmt::format("{} entries, more than {}", value->as_array().size(), max_entries));
    }
    for (const Json& item : value->as_array()) {
        if (!item.is_string()) {
            bad_field(key, "expected an array of strings");
        }
        check_text(fmt::format("{}[{}]", key, out.size()), item.as_string(), kind);
        out.push_back(item.as_string());
    }
    return out;
}

long long int_field(const Json& json, const std::string& key, const std::string& where, long long low = 0,
                    long long high = std::numeric_limits<int>::max()) {
    const Json* value = json.find(key);
    if (value == nullptr || value->is_null()) {
        return 0;
    }
    if (!value->is_int()) {
        bad_field(where, "expected an integer");
    }
    if (value->as_int() < low || value->as_int() > high) {
        bad_field(where, fmt::format("{} is outside {}..{}", value->as_int(), low, high));
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

RunState state_field(const std::string& field, const std::string& name) {
    const std::optional<RunState> known = parse_state(name);
    if (!known) {
        bad_field(field, fmt::format("unknown state {}", shown(name)));
    }
    return *known;
}

/// utc_now's shape, each part in its range: 2026-11-23T02:18:39Z.
bool is_utc_time(const std::string& text) {
    static constexpr const char* k_shape = "dddd-dd-ddTdd:dd:ddZ";
    if (text.size() != std::char_traits<char>::length(k_shape)) {
        return false;
    }
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
        if (k_shape[i] == 'd' ? !digit : text[i] != k_shape[i]) {
            return false;
        }
    }
    const auto part = [&](std::size_t at) { return std::stoi(text.substr(at, 2)); };
    return part(5) >= 1 && part(5) <= 12 && part(8) >= 1 && part(8) <= 31 && part(11) <= 23 && part(14) <= 59 && part(17) <= 60;
}

/// A path the record names inside the run directory (a trace under traces/, a rank's log).
void check_relative(const std::string& field, const std::string& value) {
    if (const std::string problem = relative_name_problem(value); !problem.empty()) {
        bad_field(field, fmt::format("{}: {}", shown(value), problem));
    }
}

/// Job ids reach Slurm's tools (scancel on Ctrl-C) and a TPU name gcloud: each must be one.
void check_job_id(const std::string& field, const std::string& id, bool tpu) {
    const std::string problem = tpu ? tpu_name_problem(id) : slurm_job_id_problem(id);
    if (!problem.empty()) {
        bad_field(field, fmt::format("{}: {}", shown(id), problem));
    }
}

} // namespace

std::string tpu_name_problem(const std::string& name) {
    constexpr std::size_t k_max_tpu_name_bytes = 63;
    if (name.empty() || name.size() > k_max_tpu_name_bytes) {
        return fmt::format("a TPU name is 1 to {} characters", k_max_tpu_name_bytes);
    }
    const bool allowed = std::all_of(name.begin(), name.end(),
                                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
    if (!allowed || name.front() == '-') {
        return "not a TPU name (lowercase letters, digits and hyphens, not starting with a hyphen)";
    }
    return "";
}

RunRecord RunRecord::from_json(const Json& json) {
    if (!json.is_object()) {
        throw input_error(fmt::format("{}: not a JSON object", run_files::k_record));
    }
    if (const Json* format = json.find("format");
        format != nullptr && !format->is_null() && (!format->is_int() || format->as_int() != 1)) {
        bad_field("format", "this harness reads format 1");
    }
    string_field(json, "harness_version");
    RunRecord record;
    record.run_id = string_field(json, "run_id");
    if (const std::string problem = file_name_problem(record.run_id); !record.run_id.empty() && !problem.empty()) {
        bad_field("run_id", fmt::format("{}: {}", shown(record.run_id), problem));
    }
    record.card = string_field(json, "card");
    if (const std::string problem = file_name_problem(record.card); !record.card.empty() && !problem.empty()) {
        bad_field("card", fmt::format("{}: {}", shown(record.card), problem));
    }
    record.target = string_field(json, "target");
    if (is_profile_path(record.target)) {
        // attach re-plans the run with the profile run.json names: one of the user's, by name.
        bad_field("target", fmt::format("{}: a cluster profile's name, not a file (a run directory does not choose the profile)",
                                        shown(record.target)));
    }
    record.executor = string_field(json, "executor");
    if (!record.executor.empty() && !parse_scheduler(record.executor) && record.executor != k_executor_ingested) {
        bad_field("executor", fmt::format("unknown executor {}", shown(record.executor)));
    }
    const bool tpu = !record.executor.empty() && is_tpu(*parse_scheduler(record.executor));
    const std::string state = string_field(json, "state");
    if (!state.empty()) {
        record.state = state_field("state", state);
    }
    record.reason = string_field(json, "reason", "reason", Text::free);
    record.failure_class = string_field(json, "failure_class");
    if (!record.failure_class.empty() && !is_failure_class(record.failure_class)) {
        bad_field("failure_class", fmt::format("unknown failure class {} (docs/failures.md)", shown(record.failure_class)));
    }
    record.failure_evidence = string_field(json, "failure_evidence", "failure_evidence", Text::free);
    record.job_ids = string_list(json, "job_ids", Text::name, k_max_job_ids);
    for (std::size_t i = 0; i < record.job_ids.size(); ++i) {
        check_job_id(fmt::format("job_ids[{}]", i), record.job_ids[i], tpu);
    }
    record.overrides = string_list(json, "overrides", Text::free);
    if (const Json* transitions = json.find("transitions"); transitions != nullptr && !transitions->is_null()) {
        if (!transitions->is_array()) {
            bad_field("transitions", "expected an array");
        }
        if (transitions->as_array().size() > k_max_list_entries) {
            bad_field("transitions", fmt::format("more than {} entries", k_max_list_entries));
        }
        for (const Json& item : transitions->as_array()) {
            const std::string where = fmt::format("transitions[{}]", record.transitions.size());
            if (!item.is_object()) {
                bad_field("transitions", "expected objects with state and time");
            }
            const std::string name = string_field(item, "state", where + ".state");
            state_field(where + ".state", name);
            const std::string time = string_field(item, "time", where + ".time");
            if (!is_utc_time(time)) {
                bad_field(where + ".time", fmt::format("{} is not a UTC time (2026-11-23T02:18:39Z)", shown(time)));
            }
            record.transitions.emplace_back(name, time);
        }
    }
    if (const Json* ranks = json.find("ranks"); ranks != nullptr && !ranks->is_null()) {
        if (!ranks->is_array()) {
            bad_field("ranks", "expected an array");
        }
        if (ranks->as_array().size() > k_max_list_entries) {
            bad_field("ranks", fmt::format("more than {} entries", k_max_list_entries));
        }
        for (const Json& item : ranks->as_array()) {
            const std::string where = fmt::format("ranks[{}]", record.ranks.size());
            if (!item.is_object()) {
                bad_field("ranks", "expected objects");
            }
            RankOutcome rank;
            rank.rank = static_cast<int>(int_field(item, "rank", where + ".rank"));
            if (const Json* code = item.find("exit_code"); code != nullptr && !code->is_null()) {
                rank.exit_code = static_cast<int>(int_field(item, "exit_code", where + ".exit_code", std::numeric_limits<int>::min(),
                                                            std::numeric_limits<int>::max()));
            }
            rank.signal = static_cast<int>(int_field(item, "signal", where + ".signal", 0, 128));
            rank.log = string_field(item, "log", where + ".log");
            if (!rank.log.empty()) {
                check_relative(where + ".log", rank.log);
            }
            if (const Json* seconds = item.find("seconds"); seconds != nullptr && !seconds->is_null()) {
                if (!seconds->is_number() || !std::isfinite(seconds->as_double()) || seconds->as_double() < 0) {
                    bad_field(where + ".seconds", "expected a number of seconds");
                }
                rank.seconds = seconds->as_double();
            }
            record.ranks.push_back(std::move(rank));
        }
    }
    record.traces = string_list(json, "traces");
    for (std::size_t i = 0; i < record.traces.size(); ++i) {
        check_relative(fmt::format("traces[{}]", i), record.traces[i]);
    }
    if (const Json* scheduler = json.find("scheduler"); scheduler != nullptr && !scheduler->is_null()) {
        if (!scheduler->is_object()) {
            bad_field("scheduler", "expected an object");
        }
        // The ids in it that a later step hands to Slurm again.
        for (const char* key : {"array_task", "cancel_pending"}) {
            const std::string id = string_field(*scheduler, key, fmt::format("scheduler.{}", key));
            if (!id.empty()) {
                check_job_id(fmt::format("scheduler.{}", key), id, false);
            }
        }
        record.scheduler = *scheduler;
    }
    if (const Json* harness = json.find("harness"); harness != nullptr && !harness->is_null()) {
        if (!harness->is_object()) {
            bad_field("harness", "expected an object with pid, start_time and host");
        }
        record.harness_pid = static_cast<int>(int_field(*harness, "pid", "harness.pid"));
        record.harness_start_time = static_cast<unsigned long long>(
            int_field(*harness, "start_time", "harness.start_time", 0, std::numeric_limits<long long>::max()));
        record.harness_host = string_field(*harness, "host", "harness.host");
    }
    record.detached_job = string_field(json, "detached_job");
    if (!record.detached_job.empty()) {
        check_job_id("detached_job", record.detached_job, false);
    }
    return record;
}

RunRecord RunRecord::load(const fs::path& run_dir) {
    const std::string text = read_own_file(run_dir / run_files::k_record, k_max_record_bytes);
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
