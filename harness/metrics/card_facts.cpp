// The card fields mfu reads, taken as written: CCL-Bench cards in the wild are loose, so a field
// of the wrong type counts as absent and mfu says which one it lacks.
#include "metrics/metric_functions.hpp"

#include "metrics/metrics_input.hpp"
#include "trace/rank_set.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/yaml_bounded.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace harness::metrics {

namespace {

YAML::Node child(const YAML::Node& node, std::initializer_list<const char*> path) {
    YAML::Node current;
    current.reset(node); // operator= would assign into the tree; reset rebinds the handle
    for (const char* key : path) {
        if (!current.IsMap()) {
            return YAML::Node();
        }
        // A copy of a const lookup binds; a missing key gives an undefined node, never an insert.
        const YAML::Node next = static_cast<const YAML::Node&>(current)[key];
        if (!next.IsDefined()) {
            return YAML::Node();
        }
        current.reset(next);
    }
    return current;
}

std::optional<double> number(const YAML::Node& node) {
    if (!node.IsScalar()) {
        return std::nullopt;
    }
    try {
        return node.as<double>();
    } catch (const YAML::Exception&) {
        return std::nullopt;
    }
}

std::string text(const YAML::Node& node) { return node.IsScalar() ? node.Scalar() : std::string(); }

/// Python's truth of a loaded YAML value, for the `or` of mfu.py:157 (a scalar is taken as
/// true unless empty: `model_arch: 0` is not a layout anyone writes).
bool truthy(const YAML::Node& node) {
    if (!node.IsDefined() || node.IsNull()) {
        return false;
    }
    if (node.IsScalar()) {
        return !node.Scalar().empty();
    }
    return node.size() > 0;
}

/// `name in yaml_data["metric_source"]["traces"]`: a list holds it as an element, a string as a
/// substring, a mapping as a key.
bool traces_hold(const YAML::Node& traces, const std::string& name) {
    if (traces.IsScalar()) {
        return traces.Scalar().find(name) != std::string::npos;
    }
    if (traces.IsSequence()) {
        for (const auto& item : traces) {
            if (item.IsScalar() && item.Scalar() == name) {
                return true;
            }
        }
    }
    if (traces.IsMap()) {
        for (const auto& item : traces) {
            if (item.first.IsScalar() && item.first.Scalar() == name) {
                return true;
            }
        }
    }
    return false;
}

} // namespace

CardFacts load_card_facts(const fs::path& file) {
    CardFacts facts;
    facts.file = file;
    YAML::Node root;
    try {
        root = load_yaml_bounded(file);
    } catch (const HarnessError& error) {
        facts.error = error.what();
        return facts;
    }
    const YAML::Node model = child(root, {"workload", "model"});
    facts.phase = to_lower(text(child(model, {"phase"})));
    // mfu.py:157: `model_cfg.get("model_arch") or model_cfg`; a dozen real SGLang cards put the
    // architecture directly under workload.model.
    YAML::Node arch = child(model, {"model_arch"});
    if (arch.IsMap() && arch.size() > 0) {
        facts.arch_at = "model_arch";
    } else if (!truthy(arch) && model.IsMap()) {
        facts.arch_at = "model";
        arch.reset(model);
    } else {
        arch.reset(YAML::Node()); // a list or a word: mfu.py fails on arch.get; nothing is read
    }
    facts.num_params = number(child(arch, {"num_params"}));
    facts.num_params_active = number(child(arch, {"num_params_active"}));
    facts.num_active_params = number(child(arch, {"num_active_params"}));
    facts.num_params_embedding = number(child(arch, {"num_params_embedding"}));
    facts.num_layers = number(child(arch, {"num_layers"}));
    facts.head_dim = number(child(arch, {"head_dim"}));
    facts.num_heads = number(child(arch, {"num_heads"}));
    facts.batch_size = number(child(root, {"workload", "data", "batch_size"}));
    facts.seq_len = number(child(root, {"workload", "data", "seq_len"}));
    facts.output_len = number(child(root, {"workload", "data", "output_len"}));
    const YAML::Node xpu = child(root, {"workload", "hardware", "xpu_spec"});
    facts.total_count = number(child(xpu, {"total_count"}));
    facts.xpu_model = text(child(xpu, {"model"}));
    const YAML::Node traces = child(root, {"metric_source", "traces"});
    facts.traces_json = traces_hold(traces, "json");
    facts.traces_json_tpu = traces_hold(traces, "json_tpu");
    const YAML::Node present = child(root, {"metric_source", k_ranks_present_key});
    for (std::size_t i = 0; present.IsSequence() && i < present.size(); ++i) {
        const std::optional<double> rank = number(present[i]);
        if (!rank || *rank < 0 || *rank != static_cast<double>(static_cast<long long>(*rank))) {
            facts.ranks_present.clear(); // not a list of ranks: verify says so
            break;
        }
        facts.ranks_present.push_back(static_cast<long long>(*rank));
    }
    // mfu.py globs the directory it is given, the one holding the card.
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (const auto latency = find_vllm_latency(dir)) {
        facts.latency_file = latency->file;
        facts.latency_s = latency->seconds;
    }
    facts.serving = find_serving_result(dir);
    return facts;
}

} // namespace harness::metrics
