#include "card/user_defaults.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

namespace harness {

namespace {

const char* const k_keys[] = {"launch", "results"};

} // namespace

const std::vector<std::pair<std::string, std::string>>& sbatch_input_variables() {
    static const std::vector<std::pair<std::string, std::string>> variables = {
        {"SBATCH_ACCOUNT", "launch.account"},      {"SBATCH_QOS", "launch.qos"},
        {"SBATCH_PARTITION", "launch.partition"},  {"SBATCH_CONSTRAINT", "launch.constraint"},
        {"SBATCH_TIMELIMIT", "launch.time_limit"},
    };
    return variables;
}

fs::path user_defaults_path() {
    if (const char* chosen = std::getenv("CCL_HARNESS_DEFAULTS"); chosen != nullptr) {
        const std::string value = chosen;
        return value.empty() || value == "none" ? fs::path() : fs::path(value);
    }
    const fs::path base = xdg_base_dir("XDG_CONFIG_HOME", ".config");
    return base.empty() ? base : base / "ccl-harness" / "defaults.yaml";
}

UserDefaults load_user_defaults() {
    UserDefaults out;
    const fs::path file = user_defaults_path();
    std::error_code ec;
    if (file.empty() || !fs::exists(file, ec)) {
        return out;
    }
    out.file = file;
    out.doc = YamlDocument::load(file);
    const YAML::Node& root = out.doc->root();
    if (root.IsNull()) {
        return out; // an empty file: no defaults yet
    }
    if (!root.IsMap()) {
        throw input_error(fmt::format("{}: defaults: expected a mapping with launch: and results:", out.doc->location(root, "")));
    }
    const std::vector<std::string> known(std::begin(k_keys), std::end(k_keys));
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string key = it->first.Scalar();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            const std::string near = closest_match(key, known);
            throw input_error(fmt::format("{}: {}: unknown key in a defaults file{} (it holds launch: and results:)",
                                          out.doc->location(it->first, key), key,
                                          near.empty() ? "" : fmt::format("; did you mean {}?", enquote(near))));
        }
    }
    const YAML::Node launch = find_node(root, "launch");
    if (launch.IsDefined() && !launch.IsNull() && !launch.IsMap()) {
        throw input_error(fmt::format("{}: launch: expected a mapping of a card's launch: keys", out.doc->location(launch, "launch")));
    }
    const YAML::Node results = find_node(root, "results");
    if (results.IsDefined() && !results.IsNull()) {
        const std::string text = results.IsScalar() ? trim(results.Scalar()) : std::string();
        if (text.empty()) {
            throw input_error(fmt::format("{}: results: expected a directory", out.doc->location(results, "results")));
        }
        // Relative to the file, not to wherever the harness is started: the file is the user's, not the checkout's.
        out.results = fs::path(text).is_absolute() ? fs::path(text) : file.parent_path() / text;
    }
    return out;
}

void apply_user_defaults(YamlDocument& doc, const UserDefaults& defaults) {
    for (const auto& [variable, field] : sbatch_input_variables()) {
        const char* value = std::getenv(variable.c_str());
        if (value != nullptr && *value != '\0') {
            doc.fill(field, YAML::Node(std::string(value)), "$" + variable);
        }
    }
    if (!defaults.doc || !defaults.doc->root().IsMap()) {
        return;
    }
    if (find_node(defaults.doc->root(), "launch").IsMap()) {
        doc.fill_from(*defaults.doc, "launch");
    }
}

} // namespace harness
