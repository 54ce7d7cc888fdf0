#include "card/schema.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fmt/format.h>
#include <set>

namespace harness {

bool read_int(const YAML::Node& node, long long& out) {
    if (!node.IsDefined() || !node.IsScalar()) {
        return false;
    }
    const std::string& text = node.Scalar();
    if (text.empty()) {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || end == nullptr || *end != '\0') {
        return false;
    }
    out = value;
    return true;
}

bool read_number(const YAML::Node& node, double& out) {
    if (!node.IsDefined() || !node.IsScalar() || node.Scalar().empty()) {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(node.Scalar().c_str(), &end);
    if (errno != 0 || end == nullptr || *end != '\0') {
        return false;
    }
    out = value;
    return true;
}

bool read_bool(const YAML::Node& node, bool& out) {
    if (!node.IsDefined() || !node.IsScalar()) {
        return false;
    }
    const std::string text = to_lower(node.Scalar());
    if (text == "true" || text == "yes" || text == "on") {
        out = true;
        return true;
    }
    if (text == "false" || text == "no" || text == "off") {
        out = false;
        return true;
    }
    return false;
}

namespace {

/// A list where one value belongs (batch_size: [1, 2, 4]) is how the corpus writes a sweep: say
/// the command that runs one.
std::string sweep_hint(const YAML::Node& node, const std::string& path) {
    if (!node.IsSequence() || node.size() == 0) {
        return {};
    }
    std::vector<std::string> values;
    for (const auto& item : node) {
        if (!item.IsScalar()) {
            return {};
        }
        values.push_back(item.Scalar());
    }
    return fmt::format("; a list is a sweep, one run per value: ccl-harness sweep CARD --vary {}={} (with one value here)", path,
                       join(values, ","));
}

std::string describe(const YAML::Node& node) {
    if (!node.IsDefined() || node.IsNull()) {
        return "nothing";
    }
    if (node.IsSequence()) {
        return fmt::format("a list of {}", node.size());
    }
    if (node.IsMap()) {
        return "a mapping";
    }
    // A whole file read as one scalar (a passwd file, a binary) must not become the message.
    constexpr std::size_t k_shown = 60;
    const std::string& text = node.Scalar();
    if (text.size() <= k_shown) {
        return enquote(text);
    }
    std::size_t cut = k_shown;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
        --cut; // not inside a UTF-8 sequence
    }
    return fmt::format("{}... ({} characters)", enquote(text.substr(0, cut)), text.size());
}

bool is_empty(const YAML::Node& node) {
    return !node.IsDefined() || node.IsNull() || (node.IsScalar() && trim(node.Scalar()).empty()) ||
           ((node.IsSequence() || node.IsMap()) && node.size() == 0);
}

class Checker {
public:
    Checker(const YamlDocument& doc, std::vector<std::string> misplaced) : m_doc(doc), m_misplaced(std::move(misplaced)) {}

    void check_map(const YAML::Node& node, const std::vector<FieldSpec>& spec, const std::string& path);
    Diagnostics take() { return std::move(m_out); }

private:
    void check_field(const YAML::Node& node, const YAML::Node& key_node, const FieldSpec& spec, const std::string& path);
    void check_scalar_kind(const YAML::Node& node, const FieldSpec& spec, const std::string& path);
    void check_choices(const YAML::Node& node, const FieldSpec& spec, const std::string& path);
    void check_bandwidth(const YAML::Node& node, const std::string& path);
    std::string where(const YAML::Node& node, const std::string& path) const { return m_doc.location(node, path); }

    const YamlDocument& m_doc;
    std::vector<std::string> m_misplaced;
    Diagnostics m_out;
};

void Checker::check_map(const YAML::Node& node, const std::vector<FieldSpec>& spec, const std::string& path) {
    std::vector<std::string> known;
    for (const auto& field : spec) {
        known.push_back(field.key);
    }
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node key = it->first;
        const std::string name = key.IsScalar() ? key.Scalar() : std::string("?");
        const std::string child_path = path.empty() ? name : path + "." + name;
        if (!seen.insert(name).second) {
            m_out.error(where(key, child_path), child_path, "duplicate key (YAML readers disagree on which value wins)");
            continue;
        }
        const FieldSpec* field_spec = nullptr;
        for (const auto& field : spec) {
            if (field.key == name) {
                field_spec = &field;
            }
        }
        if (field_spec != nullptr) {
            check_field(it->second, key, *field_spec, child_path);
            continue;
        }
        bool misplaced = false;
        for (const auto& section : m_misplaced) {
            if (section == name && !path.empty()) {
                m_out.error(where(key, child_path), child_path,
                            fmt::format("section {} is nested under {}; it belongs at the top level "
                                        "(check its indentation)",
                                        enquote(name), path));
                misplaced = true;
            }
        }
        if (misplaced) {
            continue;
        }
        const std::string suggestion = closest_match(name, known);
        const std::string location = where(key, child_path);
        if ((path == "launch" || starts_with(path, "launch.")) && !starts_with(location, "--set ")) {
            // The harness's own section: a typo (time_limt) would send the job out with a default
            // the user did not choose. CCL-Bench's sections stay lenient, as its loader is; a
            // --set the user added with --allow-new is theirs to keep.
            m_out.error(location, child_path,
                        suggestion.empty()
                            ? fmt::format("unknown key in the harness's launch: section; {} has: {}", path, join(known, ", "))
                            : fmt::format("unknown key in the harness's launch: section; did you mean {}?", enquote(suggestion)));
            continue;
        }
        m_out.warning(location, child_path,
                      suggestion.empty() ? "unknown key, ignored"
                                         : fmt::format("unknown key, ignored; did you mean {}?", enquote(suggestion)));
    }
    for (const auto& field : spec) {
        if (seen.count(field.key) != 0) {
            continue;
        }
        const std::string child_path = path.empty() ? field.key : path + "." + field.key;
        const std::string note = field.note.empty() ? "" : " (" + field.note + ")";
        if (field.need == Need::required) {
            m_out.error(where(node, path), child_path, "required field is missing" + note);
        } else if (field.need == Need::expected) {
            m_out.warning(where(node, path), child_path, "field is missing" + note);
        }
    }
}

void Checker::check_field(const YAML::Node& node, const YAML::Node& key_node, const FieldSpec& spec, const std::string& path) {
    // An empty value has no position of its own in yaml-cpp; point at its key instead.
    const YAML::Node& anchor = node.IsNull() ? key_node : node;
    if (!spec.moved_to.empty()) {
        m_out.warning(where(anchor, path), path, fmt::format("belongs under {}; read from here", spec.moved_to));
    }
    if (is_empty(node) && spec.kind != ValueKind::any) {
        const std::string note = spec.note.empty() ? "" : " (" + spec.note + ")";
        if (spec.need == Need::required) {
            m_out.error(where(anchor, path), path, "required field is empty" + note);
        } else if (spec.need == Need::expected) {
            m_out.warning(where(anchor, path), path, "field is empty" + note);
        }
        return;
    }
    switch (spec.kind) {
    case ValueKind::map:
        if (!node.IsMap()) {
            m_out.error(where(anchor, path), path, fmt::format("expected a mapping, got {}", describe(node)));
            return;
        }
        check_map(node, spec.children, path);
        return;
    case ValueKind::free_map:
        if (!node.IsMap()) {
            m_out.error(where(anchor, path), path, fmt::format("expected a mapping, got {}", describe(node)));
            return;
        }
        for (auto it = node.begin(); it != node.end(); ++it) {
            const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
            const std::string child_path = path + "." + key;
            if (spec.identifier_keys && !is_identifier(key)) {
                m_out.error(where(it->first, child_path), child_path,
                            fmt::format("expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got {}", enquote(key)));
            }
            if (!it->second.IsNull() && !it->second.IsScalar()) {
                m_out.error(where(it->second, child_path), child_path,
                            fmt::format("expected a single value, got {}", describe(it->second)));
            }
        }
        return;
    case ValueKind::string_list:
        if (node.IsScalar()) {
            m_out.warning(where(anchor, path), path, "expected a list, got a single value; read as a list of one");
            check_choices(node, spec, path);
            return;
        }
        if (!node.IsSequence()) {
            m_out.error(where(anchor, path), path, fmt::format("expected a list, got {}", describe(node)));
            return;
        }
        for (std::size_t i = 0; i < node.size(); ++i) {
            const std::string item_path = fmt::format("{}[{}]", path, i);
            if (node[i].IsNull()) {
                m_out.warning(where(anchor, item_path), item_path, "empty list entry, ignored");
            } else if (!node[i].IsScalar()) {
                m_out.error(where(node[i], item_path), item_path, fmt::format("expected a single value, got {}", describe(node[i])));
            } else {
                check_choices(node[i], spec, item_path);
            }
        }
        return;
    case ValueKind::bandwidth: check_bandwidth(node, path); return;
    case ValueKind::any: return;
    default: check_scalar_kind(node, spec, path);
    }
}

void Checker::check_scalar_kind(const YAML::Node& node, const FieldSpec& spec, const std::string& path) {
    if (!node.IsScalar()) {
        const char* what = spec.kind == ValueKind::positive_int ? "a positive integer"
                           : spec.kind == ValueKind::nonneg_int ? "a non-negative integer"
                           : spec.kind == ValueKind::number     ? "a number"
                           : spec.kind == ValueKind::boolean    ? "true or false"
                                                                : "a single value";
        m_out.error(where(node, path), path, fmt::format("expected {}, got {}{}", what, describe(node), sweep_hint(node, path)));
        return;
    }
    long long integer = 0;
    double number = 0;
    bool flag = false;
    switch (spec.kind) {
    case ValueKind::positive_int:
        if (!read_int(node, integer) || integer <= 0) {
            m_out.error(where(node, path), path, fmt::format("expected a positive integer, got {}", describe(node)));
        }
        break;
    case ValueKind::nonneg_int:
        if (!read_int(node, integer) || integer < 0) {
            m_out.error(where(node, path), path, fmt::format("expected a non-negative integer, got {}", describe(node)));
        }
        break;
    case ValueKind::number:
        if (!read_number(node, number)) {
            m_out.error(where(node, path), path, fmt::format("expected a number, got {}", describe(node)));
        }
        break;
    case ValueKind::boolean:
        if (!read_bool(node, flag)) {
            m_out.error(where(node, path), path, fmt::format("expected true or false, got {}", describe(node)));
        }
        break;
    default: check_choices(node, spec, path);
    }
}

void Checker::check_choices(const YAML::Node& node, const FieldSpec& spec, const std::string& path) {
    if (spec.choices.empty()) {
        return;
    }
    const std::string value = to_lower(trim(node.Scalar()));
    for (const auto& choice : spec.choices) {
        if (value == to_lower(choice)) {
            return;
        }
    }
    const std::string suggestion = closest_match(value, spec.choices);
    std::string message = fmt::format("expected one of {}, got {}", join(spec.choices, ", "), describe(node));
    if (!suggestion.empty()) {
        message += fmt::format("; did you mean {}?", enquote(suggestion));
    }
    if (spec.choices_are_strict) {
        m_out.error(where(node, path), path, message);
    } else {
        m_out.warning(where(node, path), path, message);
    }
}

void Checker::check_bandwidth(const YAML::Node& node, const std::string& path) {
    if (!node.IsSequence()) {
        m_out.error(where(node, path), path, fmt::format("expected [scale_out, scale_up] in Gbps, got {}", describe(node)));
        return;
    }
    if (node.size() != 2) {
        m_out.warning(
            where(node, path), path,
            fmt::format("expected [scale_out, scale_up] in Gbps, got {} entr{}", node.size(), node.size() == 1 ? "y" : "ies"));
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
        const std::string item_path = fmt::format("{}[{}]", path, i);
        double value = 0;
        if (read_number(node[i], value)) {
            if (value < 0) {
                m_out.error(where(node[i], item_path), item_path, "bandwidth cannot be negative");
            }
            continue;
        }
        const std::string text = node[i].IsScalar() ? to_lower(trim(node[i].Scalar())) : "";
        if (text == "n/a") {
            continue; // documented: no scale-out (single host) or no scale-up fabric
        }
        if (text == "tbd" || text.empty()) {
            m_out.warning(where(node[i], item_path), item_path, "placeholder instead of a bandwidth in Gbps");
            continue;
        }
        m_out.error(where(node[i], item_path), item_path,
                    fmt::format("expected a bandwidth in Gbps or \"N/A\", got {}", describe(node[i])));
    }
}

} // namespace

namespace {

/// `parts` with every unknown key replaced by its closest known one, as far as there is one: a
/// suggestion that names a field, never another unknown one.
std::string corrected_path(const std::vector<FieldSpec>& spec, const std::vector<std::string>& parts) {
    const std::vector<FieldSpec>* level = &spec;
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        std::vector<std::string> keys;
        for (const auto& field : *level) {
            keys.push_back(field.key);
        }
        const std::string key = std::find(keys.begin(), keys.end(), parts[i]) != keys.end() ? parts[i] : closest_match(parts[i], keys);
        if (key.empty()) {
            return out;
        }
        out += (out.empty() ? "" : ".") + key;
        const FieldSpec& field = (*level)[static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin())];
        if (field.kind == ValueKind::map) {
            level = &field.children;
        } else if (field.kind == ValueKind::free_map) {
            return i + 1 < parts.size() ? out + "." + parts[i + 1] : out;
        } else if (field.kind == ValueKind::any) {
            for (std::size_t j = i + 1; j < parts.size(); ++j) {
                out += "." + parts[j];
            }
            return out;
        } else {
            return out;
        }
    }
    return out;
}

} // namespace

std::string unknown_field_reason(const std::vector<FieldSpec>& spec, const std::string& path) {
    const std::vector<std::string> parts = split(path, '.');
    for (const auto& part : parts) {
        if (part.empty()) {
            return ""; // malformed, not unknown: YamlDocument::set says what is wrong with it
        }
    }
    const std::vector<FieldSpec>* level = &spec;
    std::string walked;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string here = walked.empty() ? parts[i] : walked + "." + parts[i];
        const FieldSpec* found = nullptr;
        std::vector<std::string> keys;
        for (const auto& field : *level) {
            keys.push_back(field.key);
            found = field.key == parts[i] ? &field : found;
        }
        if (found == nullptr) {
            const std::string suggestion = closest_match(parts[i], keys);
            if (suggestion.empty()) {
                return fmt::format("unknown field {}; {} has: {}", enquote(path),
                                   walked.empty() ? std::string("the top level") : enquote(walked), join(keys, ", "));
            }
            return fmt::format("unknown field {}; did you mean {}?", enquote(path), enquote(corrected_path(spec, parts)));
        }
        const bool last = i + 1 == parts.size();
        switch (found->kind) {
        case ValueKind::map:
            level = &found->children;
            walked = here;
            continue;
        case ValueKind::any: return "";
        case ValueKind::free_map:
            // Any key (an environment variable's name; the checker judges the name), one level.
            if (last || i + 2 == parts.size()) {
                return "";
            }
            return fmt::format("unknown field {}: {} holds a single value", enquote(path), enquote(here + "." + parts[i + 1]));
        default:
            if (last) {
                return "";
            }
            return fmt::format("unknown field {}: {} holds a value, not fields", enquote(path), enquote(here));
        }
    }
    return "";
}

Diagnostics check_document(const YamlDocument& doc, const std::vector<FieldSpec>& spec,
                           const std::vector<std::string>& misplaced_sections) {
    Checker checker(doc, misplaced_sections);
    const YAML::Node& root = doc.root();
    if (!root.IsDefined() || root.IsNull()) {
        Diagnostics out;
        out.error(doc.display_name(), "", "the document is empty");
        return out;
    }
    if (!root.IsMap()) {
        Diagnostics out;
        out.error(doc.location(root, ""), "", fmt::format("expected a mapping at the top level, got {}", describe(root)));
        return out;
    }
    checker.check_map(root, spec, "");
    return checker.take();
}

} // namespace harness
