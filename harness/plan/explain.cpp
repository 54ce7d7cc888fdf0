#include "plan/explain.hpp"

#include "card/card.hpp"
#include "card/cluster.hpp"
#include "plan/resolve.hpp"
#include "util/strings.hpp"

#include "util/table.hpp"

#include <fmt/format.h>
#include <set>

namespace harness {

namespace {

/// plan.json's top-level keys in the order a reader wants them; anything else follows, sorted.
const std::vector<std::string> k_reading_order = {
    "card",      "framework", "target",      "scheduler", "phase",      "model",  "model_family", "precision",
    "xpu_model", "geometry",  "parallelism", "steps",     "profile",    "traces", "data",         "scheduler_options",
    "container", "source",    "env",         "hf_home",   "extra_args", "tpu",
};

void flatten(const Json& value, const std::string& path, const Plan& plan, std::vector<ExplainedValue>& out) {
    if (value.is_object()) {
        for (const auto& [key, child] : value.as_object()) {
            flatten(child, path.empty() ? key : path + "." + key, plan, out);
        }
        return;
    }
    const auto found = plan.origins.find(path);
    // Values set after planning (source.commit by --pin) have no origin from make_plan.
    const Origin origin = found != plan.origins.end()
                              ? found->second
                              : Origin{Origin::Kind::derived, "", "set after planning (not by the card or profile)"};
    out.push_back({path, value, origin});
}

std::string format_value(const Json& value) {
    if (value.is_string()) {
        return value.as_string().empty() ? "\"\"" : value.as_string();
    }
    if (value.is_array()) {
        std::vector<std::string> items;
        for (const auto& item : value.as_array()) {
            items.push_back(item.is_string() ? item.as_string() : item.dump(false));
        }
        return "[" + join(items, ", ") + "]";
    }
    return value.dump(false);
}

} // namespace

std::vector<ExplainedValue> explain_plan(const Plan& plan) {
    const Json json = plan_to_json(plan);
    std::vector<ExplainedValue> out;
    std::set<std::string> done;
    for (const auto& key : k_reading_order) {
        if (const Json* value = json.find(key); value != nullptr) {
            flatten(*value, key, plan, out);
            done.insert(key);
        }
    }
    for (const auto& [key, value] : json.as_object()) {
        if (done.count(key) == 0) {
            flatten(value, key, plan, out);
        }
    }
    return out;
}

Explanation explain_card(const fs::path& card_path, const std::vector<std::string>& overrides, const std::string& cluster_option,
                         const fs::path& home) {
    Explanation out;
    out.card = card_path.string();
    const Resolved resolved = resolve({card_path, overrides, cluster_option, false, home});
    out.diagnostics = resolved.diagnostics;
    if (!resolved.plan) {
        return out;
    }
    const ClusterChoice& choice = resolved.choice;
    const ClusterProfile& cluster = *resolved.profile;
    const Plan& plan = *resolved.plan;
    out.target = plan.target;
    out.cluster_name = cluster.name;
    out.cluster_file = cluster.source;
    out.cluster_found = cluster.found;
    out.cluster_shadows = cluster.shadows;
    out.cluster_chosen = choice.how;
    out.values = explain_plan(plan);
    return out;
}

std::string describe(const Origin& origin) {
    switch (origin.kind) {
    case Origin::Kind::card: return fmt::format("card {} ({})", origin.where, origin.detail);
    case Origin::Kind::set: return origin.where;
    case Origin::Kind::user: return fmt::format("user default {} ({})", origin.where, origin.detail);
    case Origin::Kind::profile: return fmt::format("profile {} ({})", origin.where, origin.detail);
    case Origin::Kind::default_rule: return "default: " + origin.detail;
    case Origin::Kind::derived: return "derived: " + origin.detail + (origin.where.empty() ? "" : " (" + origin.where + ")");
    }
    return origin.detail;
}

Json explanation_to_json(const Explanation& explanation) {
    Json out = Json::object();
    out["card"] = explanation.card;
    out["target"] = explanation.target;
    Json cluster = Json::object();
    cluster["name"] = explanation.cluster_name;
    cluster["file"] = explanation.cluster_file.string();
    cluster["found"] = to_string(explanation.cluster_found);
    cluster["chosen_by"] = explanation.cluster_chosen;
    if (!explanation.cluster_shadows.empty()) {
        cluster["shadows"] = explanation.cluster_shadows.string();
    }
    out["cluster"] = cluster;
    Json values = Json::array();
    for (const auto& item : explanation.values) {
        Json origin = Json::object();
        origin["kind"] = to_string(item.origin.kind);
        origin["where"] = item.origin.where;
        origin["detail"] = item.origin.detail;
        Json entry = Json::object();
        entry["field"] = item.field;
        entry["value"] = item.value;
        entry["origin"] = origin;
        values.push_back(entry);
    }
    out["values"] = values;
    Json diagnostics = Json::array();
    for (const auto& item : explanation.diagnostics.items()) {
        diagnostics.push_back(item.text());
    }
    out["diagnostics"] = diagnostics;
    return out;
}

std::string format_explanation(const Explanation& explanation) {
    std::string out = fmt::format("card:    {}\n", explanation.card);
    out += fmt::format("cluster: {} ({} profile {}), chosen by {}\n", explanation.cluster_name, to_string(explanation.cluster_found),
                       explanation.cluster_file.string(), explanation.cluster_chosen);
    if (!explanation.cluster_shadows.empty()) {
        out += fmt::format("         this user profile hides the shipped one at {}\n", explanation.cluster_shadows.string());
    }
    if (explanation.target != explanation.cluster_name) {
        out += fmt::format("target:  {} (the templates this profile renders with)\n", explanation.target);
    }
    std::vector<std::vector<std::string>> rows = {{"field", "value", "origin"}};
    for (const auto& item : explanation.values) {
        rows.push_back({item.field, format_value(item.value), describe(item.origin)});
    }
    return out + "\n" + format_table(rows);
}

} // namespace harness
