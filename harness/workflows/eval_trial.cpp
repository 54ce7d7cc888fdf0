#include "workflows/eval_trial.hpp"

#include "metrics/metrics.hpp"
#include "run/run_directory.hpp"
#include "trace/trace_names.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/yaml_bounded.hpp"
#include "workflows/run_workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace harness {

namespace {

std::string json_scalar_text(const std::string& key, const Json& value) {
    if (value.is_bool()) {
        return value.as_bool() ? "true" : "false";
    }
    if (value.is_int()) {
        return std::to_string(value.as_int());
    }
    if (value.is_number()) {
        return fmt::format("{}", value.as_double());
    }
    if (value.is_string()) {
        return value.as_string();
    }
    throw input_error(fmt::format("--config {}: a value must be a number, a string or true/false", key));
}

std::string known_keys(const KeyMap& keys) {
    std::vector<std::string> names;
    for (const auto& [key, path] : keys) {
        names.push_back(key);
    }
    return names.empty() ? "none: give --keys FILE" : join(names, ", ");
}

} // namespace

KeyMapFile load_key_map(const fs::path& file) {
    YAML::Node root;
    try {
        root = load_yaml_bounded(file);
    } catch (const YAML::Exception& e) {
        throw input_error(fmt::format("{}: {}", file.string(), e.what()));
    }
    if (!root.IsMap() || !root["keys"] || !root["keys"].IsMap()) {
        throw input_error(fmt::format("{}: expected `keys:` mapping each config key to a card path (tp: "
                                      "Model-executor.model_plan_parallelization.tp)",
                                      file.string()));
    }
    KeyMapFile out;
    for (const auto& entry : root["keys"]) {
        const std::string key = entry.first.as<std::string>();
        if (!entry.second.IsScalar() || entry.second.as<std::string>().find('.') == std::string::npos) {
            throw input_error(
                fmt::format("{}:{}: keys.{}: expected a dotted card path", file.string(), entry.second.Mark().line + 1, key));
        }
        out.keys[key] = entry.second.as<std::string>();
    }
    if (root["card"]) {
        if (!root["card"].IsScalar()) {
            throw input_error(fmt::format("{}: card: expected a path", file.string()));
        }
        const fs::path card = root["card"].as<std::string>();
        out.card = card.is_absolute() ? card : (file.parent_path() / card).lexically_normal();
    }
    return out;
}

Objective parse_objective(const std::string& text) {
    Objective objective;
    std::string rest;
    if (starts_with(text, "min:")) {
        rest = text.substr(4);
    } else if (starts_with(text, "max:")) {
        objective.minimize = false;
        rest = text.substr(4);
    } else {
        throw input_error(fmt::format("--objective {}: expected min:METRIC[*WEIGHT],... or max:...", text));
    }
    for (const std::string& term : split(rest, ',')) {
        const auto star = term.find('*');
        const std::string name = trim(term.substr(0, star));
        double weight = 1.0;
        if (star != std::string::npos) {
            char* end = nullptr;
            const std::string number = trim(term.substr(star + 1));
            weight = std::strtod(number.c_str(), &end);
            if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(weight)) {
                throw input_error(fmt::format("--objective {}: weight {} is not a number", text, enquote(number)));
            }
        }
        const auto& names = metrics::metric_names();
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            throw input_error(fmt::format("--objective {}: {} is no metric (`ccl-harness list metrics` names them)", text,
                                          name.empty() ? std::string("(empty)") : enquote(name)));
        }
        objective.terms.emplace_back(name, weight);
    }
    return objective;
}

std::vector<std::string> config_overrides(const Json& config, const KeyMap& keys) {
    if (!config.is_object()) {
        throw input_error("--config: expected a JSON object {\"key\": value, ...}");
    }
    std::vector<std::string> overrides;
    for (const auto& [key, value] : config.as_object()) {
        std::string path;
        if (const auto it = keys.find(key); it != keys.end()) {
            path = it->second;
        } else if (key.find('.') != std::string::npos) {
            path = key;
        } else {
            throw input_error(
                fmt::format("--config {}: not a card path and not a key of the mapping (keys: {})", key, known_keys(keys)));
        }
        overrides.push_back(path + "=" + json_scalar_text(key, value));
    }
    return overrides;
}

Json config_from_environment(const KeyMap& keys) {
    Json config = Json::object();
    for (const auto& [key, path] : keys) {
        std::string name = key;
        for (char& c : name) {
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        if (const char* value = std::getenv(name.c_str()); value != nullptr) {
            config[key] = std::string(value);
        }
    }
    return config;
}

EvalOutcome eval_trial(const EvalOptions& options, std::ostream& out) {
    EvalOutcome outcome;
    outcome.overrides = config_overrides(options.config, options.keys);
    RunOptions run;
    run.card = options.card;
    run.cluster = options.cluster;
    run.overrides = outcome.overrides;
    run.results = options.results;
    run.reuse = options.reuse;
    run.home = options.home;
    const RunOutcome ran = run_workload(run, out);
    if (ran.invalid_input) {
        // The card's first error, without the prefix the command adds again.
        std::string first = "the card with this config is not valid";
        for (const std::string& line : split(ran.diagnostics, '\n')) {
            if (const auto at = line.find("error: "); at != std::string::npos) {
                first = line.substr(line.find("ccl-harness: error: ") == 0 ? std::string("ccl-harness: error: ").size() : 0);
                break;
            }
        }
        throw input_error(first);
    }
    outcome.cached = ran.reused;
    outcome.run_dir = ran.run_dir;
    outcome.bundle = ran.bundle ? ran.bundle->path : fs::path();
    outcome.failure_class = ran.failure_class;
    if (!ran.state || *ran.state != RunState::completed) {
        outcome.status = ran.state && *ran.state == RunState::timeout ? "timeout" : "error";
        outcome.error_msg = ran.reason.empty() ? "the run did not complete" : ran.reason;
        outcome.exit_code = k_exit_failure;
        return outcome;
    }
    // Every metric of metrics.json (written by the run, kept with the reused one).
    try {
        const Json metrics = Json::parse(read_file(ran.run_dir / run_files::k_metrics));
        if (const Json* table = metrics.find("metrics"); table != nullptr && table->is_object()) {
            for (const auto& [name, entry] : table->as_object()) {
                if (const Json* value = entry.find("value"); value != nullptr && value->is_number()) {
                    outcome.metrics[name] = value->as_double();
                }
            }
        }
    } catch (const std::exception& e) {
        outcome.status = "error";
        outcome.error_msg = fmt::format("no metrics.json in {}: {}", ran.run_dir.string(), e.what());
        outcome.exit_code = k_exit_failure;
        return outcome;
    }
    double score = 0;
    for (const auto& [name, weight] : options.objective.terms) {
        const auto it = outcome.metrics.find(name);
        if (it == outcome.metrics.end()) {
            outcome.status = "error";
            outcome.error_msg = fmt::format("metric {} has no value for this run (`ccl-harness metrics {}` says why)", name,
                                            (ran.bundle ? ran.bundle->path : ran.run_dir).string());
            outcome.exit_code = k_exit_failure;
            return outcome;
        }
        score += weight * it->second;
    }
    outcome.score = score;
    outcome.status = "success";
    if (!options.trace_dir.empty()) {
        // The canonical traces, under the names the CCL-Bench tools read, where the loop looks.
        std::error_code ec;
        fs::create_directories(options.trace_dir, ec);
        for (const auto& entry : fs::directory_iterator(ran.run_dir / run_files::k_traces, ec)) {
            if (entry.is_regular_file(ec) && classify_trace_name(entry.path().filename().string()).canonical) {
                fs::copy_file(entry.path(), options.trace_dir / entry.path().filename(), fs::copy_options::overwrite_existing, ec);
                if (ec) {
                    throw HarnessError(fmt::format("--trace-dir {}: cannot copy {}: {}", options.trace_dir.string(),
                                                   entry.path().filename().string(), ec.message()));
                }
            }
        }
    }
    return outcome;
}

Json eval_outcome_to_json(const EvalOutcome& outcome) {
    Json json = Json::object();
    json["status"] = outcome.status;
    json["failure_class"] = outcome.failure_class.empty() ? Json() : Json(outcome.failure_class);
    json["error_msg"] = outcome.error_msg.empty() ? Json() : Json(outcome.error_msg);
    Json metrics = Json::object();
    for (const auto& [name, value] : outcome.metrics) {
        metrics[name] = value;
    }
    json["metrics"] = std::move(metrics);
    json["score"] = outcome.score ? Json(*outcome.score) : Json();
    json["cached"] = outcome.cached;
    json["run_dir"] = outcome.run_dir.empty() ? Json() : Json(outcome.run_dir.string());
    json["bundle"] = outcome.bundle.empty() ? Json() : Json(outcome.bundle.string());
    Json overrides = Json::array();
    for (const std::string& o : outcome.overrides) {
        overrides.push_back(Json(o));
    }
    json["overrides"] = std::move(overrides);
    return json;
}

} // namespace harness
