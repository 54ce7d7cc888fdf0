#include "store/run_snapshot.hpp"

#include "render/render_key.hpp"

#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/own_file.hpp"
#include "util/yaml_bounded.hpp"

#include <yaml-cpp/yaml.h>

namespace harness::store {

namespace {

// metrics.json and plan.json are the harness's own records: a few hundred kilobytes at most.
constexpr std::uintmax_t k_max_json_bytes = std::uintmax_t{16} << 20;

void flatten(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
    if (node.IsMap()) {
        for (const auto& item : node) {
            const std::string key = item.first.as<std::string>();
            flatten(item.second, prefix.empty() ? key : prefix + "." + key, out);
        }
    } else if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i) {
            flatten(node[i], prefix + "." + std::to_string(i), out);
        }
    } else if (node.IsScalar()) {
        out.emplace_back(prefix, node.Scalar());
    }
}

std::optional<Json> read_json(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) {
        return std::nullopt;
    }
    try {
        return Json::parse(read_own_file(file, k_max_json_bytes));
    } catch (const std::exception& e) {
        throw input_error(file.string() + ": " + e.what());
    }
}

std::string stamp(const fs::path& file) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec) {
        return "-";
    }
    const auto time = fs::last_write_time(file, ec).time_since_epoch().count();
    return std::to_string(size) + ":" + std::to_string(time);
}

fs::path bundle_of(const fs::path& run_dir) {
    fs::path bundle = run_dir;
    bundle += ".tar.zst";
    return bundle;
}

/// provenance.json's pins (provenance/provenance.hpp writes them): a field of another type than
/// the format's is left out rather than guessed at.
std::vector<std::pair<std::string, std::string>> provenance_pins(const Json& provenance) {
    std::vector<std::pair<std::string, std::string>> pins;
    if (const Json* sources = provenance.find("sources"); sources && sources->is_array()) {
        for (const Json& source : sources->as_array()) {
            if (source.is_object() && !source.string_or("repo").empty()) {
                pins.emplace_back(source.string_or("repo"), source.string_or("commit"));
            }
        }
    }
    if (const Json* harness = provenance.find("harness"); harness && harness->is_object()) {
        pins.emplace_back("ccl-harness", harness->string_or("commit"));
    }
    if (const Json* container = provenance.find("container"); container && container->is_object()) {
        if (!container->string_or("image").empty()) {
            pins.emplace_back("image:" + container->string_or("image"), container->string_or("digest"));
        }
        if (!container->string_or("image_id").empty()) {
            pins.emplace_back("image_id", container->string_or("image_id"));
        }
    }
    return pins;
}

} // namespace

bool is_run_directory(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(fs::symlink_status(dir / run_files::k_record, ec));
}

std::string run_fingerprint(const fs::path& run_dir) {
    return stamp(run_dir / run_files::k_record) + "/" + stamp(run_dir / run_files::k_metrics) + "/" +
           stamp(run_dir / run_files::k_card) + "/" + stamp(run_dir / run_files::k_provenance) + "/" + stamp(bundle_of(run_dir));
}

RunSnapshot read_run_snapshot(const fs::path& run_dir) {
    const RunRecord record = RunRecord::load(run_dir);
    RunSnapshot snap;
    snap.run_id = record.run_id.empty() ? run_dir.filename().string() : record.run_id;
    snap.run_dir = fs::absolute(run_dir).lexically_normal().string();
    snap.card = record.card;
    snap.cluster = record.target;
    snap.executor = record.executor;
    snap.state = to_string(record.state);
    snap.failure_class = record.failure_class;
    snap.failure_reason = record.reason;
    for (const auto& [state, time] : record.transitions) {
        if (snap.created.empty()) {
            snap.created = time;
        }
        if (state == "running" && snap.started.empty()) {
            snap.started = time;
        }
        if (is_final_state_name(state)) {
            snap.ended = time;
        }
    }
    for (const std::string& item : record.overrides) {
        const auto eq = item.find('=');
        snap.overrides.emplace_back(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
    }
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(run_dir / run_files::k_card, ec))) {
        flatten(load_yaml_bounded(run_dir / run_files::k_card), "", snap.card_fields);
    }
    if (const auto plan = read_json(run_dir / run_files::k_plan)) {
        snap.framework = plan->string_or("framework");
    }
    if (const auto metrics = read_json(run_dir / run_files::k_metrics)) {
        if (const Json* table = metrics->find("metrics"); table && table->is_object()) {
            for (const auto& [name, entry] : table->as_object()) {
                MetricValue metric{name, std::nullopt, entry.string_or("unit"), false};
                if (const Json* value = entry.find("value"); value && value->is_number()) {
                    metric.value = value->as_double();
                }
                const Json* implausible = entry.find("implausible");
                metric.implausible = implausible && !implausible->is_null() && !(implausible->is_bool() && !implausible->as_bool());
                snap.metrics.push_back(std::move(metric));
            }
        }
    }
    snap.render_key = render_key_of_directory(run_dir / run_files::k_rendered);
    if (const auto provenance = read_json(run_dir / run_files::k_provenance)) {
        snap.pins = provenance_pins(*provenance);
    }
    if (fs::is_regular_file(fs::symlink_status(bundle_of(run_dir), ec))) {
        snap.bundle_path = fs::absolute(bundle_of(run_dir)).lexically_normal().string();
    }
    return snap;
}

} // namespace harness::store
