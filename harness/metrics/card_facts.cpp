// The card fields mfu reads, taken as written: CCL-Bench cards in the wild are loose, so a field
// of the wrong type counts as absent and mfu says which one it lacks.
#include "metrics/metric_functions.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/yaml_bounded.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace harness::metrics {

namespace {

YAML::Node child(const YAML::Node& node, std::initializer_list<const char*> path) {
    YAML::Node current;
    current.reset(node);  // operator= would assign into the tree; reset rebinds the handle
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
    const YAML::Node arch = child(model, {"model_arch"});
    facts.has_model_arch = arch.IsMap();
    facts.num_params = number(child(arch, {"num_params"}));
    facts.num_params_active = number(child(arch, {"num_params_active"}));
    if (!facts.num_params_active) {
        facts.num_params_active = number(child(arch, {"num_active_params"}));
    }
    facts.num_params_embedding = number(child(arch, {"num_params_embedding"}));
    facts.num_layers = number(child(arch, {"num_layers"}));
    facts.head_dim = number(child(arch, {"head_dim"}));
    facts.num_heads = number(child(arch, {"num_heads"}));
    facts.batch_size = number(child(root, {"workload", "data", "batch_size"}));
    facts.seq_len = number(child(root, {"workload", "data", "seq_len"}));
    const YAML::Node xpu = child(root, {"workload", "hardware", "xpu_spec"});
    facts.total_count = number(child(xpu, {"total_count"}));
    facts.xpu_model = text(child(xpu, {"model"}));
    return facts;
}

} // namespace harness::metrics
