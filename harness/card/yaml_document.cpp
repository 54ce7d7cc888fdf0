#include "card/yaml_document.hpp"

#include "card/pyyaml_reading.hpp"

#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"
#include "util/yaml_bounded.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <sstream>

namespace harness {

YamlDocument YamlDocument::parse(const std::string& text, const std::string& display_name) {
    YamlDocument doc;
    doc.m_root = parse_yaml_bounded(text, display_name);
    doc.m_display_name = display_name;
    doc.m_path = display_name;
    return doc;
}

YamlDocument YamlDocument::load(const fs::path& path) {
    YamlDocument doc;
    doc.m_root = load_yaml_bounded(path);
    doc.m_display_name = path.string();
    doc.m_path = path;
    return doc;
}

std::vector<std::pair<std::string, YAML::Node>> YamlDocument::lift_nested_sections(const std::vector<std::string>& sections) {
    std::vector<std::pair<std::string, YAML::Node>> lifted;
    if (!m_root.IsMap()) {
        return lifted;
    }
    for (const std::string& section : sections) {
        if (m_root[section].IsDefined()) {
            continue;
        }
        std::vector<std::string> parents;
        for (const auto& entry : m_root) {
            const YAML::Node& value = entry.second;
            if (entry.first.IsScalar() && value.IsMap() && value[section].IsDefined() && value[section].IsMap()) {
                parents.push_back(entry.first.Scalar());
            }
        }
        if (parents.size() != 1) {
            continue; // none, or two claimants: the checker reports what is there
        }
        YAML::Node parent = m_root[parents.front()];
        YAML::Node key; // the nested key itself: where a message points
        for (const auto& entry : parent) {
            if (entry.first.IsScalar() && entry.first.Scalar() == section) {
                key = entry.first;
            }
        }
        const YAML::Node moved = parent[section];
        m_root[section] = moved;
        parent.remove(section);
        lifted.emplace_back(parents.front() + "." + section, key);
    }
    return lifted;
}

void YamlDocument::set(const std::string& assignment) {
    const std::size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        throw input_error(fmt::format("--set {}: expected PATH=VALUE, e.g. "
                                      "Model-executor.model_plan_parallelization.tp=4",
                                      enquote(assignment)));
    }
    const std::string field = assignment.substr(0, eq);
    const std::vector<std::string> parts = split(field, '.');
    for (const auto& part : parts) {
        if (part.empty()) {
            throw input_error(fmt::format("--set {}: empty path component", enquote(assignment)));
        }
    }
    // The same bounds as a file: "--set 'PATH=VALUE':1:COL: ..." points into the value.
    const YAML::Node value = parse_yaml_bounded(assignment.substr(eq + 1), "--set " + enquote(assignment));
    if (!m_root.IsMap()) {
        throw input_error(fmt::format("--set {}: the card is not a mapping", enquote(assignment)));
    }
    YAML::Node current = m_root;
    std::string walked;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        walked += (walked.empty() ? "" : ".") + parts[i];
        YAML::Node next = current[parts[i]];
        if (!next.IsDefined() || next.IsNull()) {
            next = YAML::Node(YAML::NodeType::Map);
            current[parts[i]] = next;
            next = current[parts[i]];
        } else if (!next.IsMap()) {
            throw input_error(fmt::format("--set {}: {} is not a mapping", enquote(assignment), walked));
        }
        current.reset(next);
    }
    current[parts.back()] = value;
    m_overrides[field] = assignment;
}

bool YamlDocument::fill(const std::string& field, const YAML::Node& value, const std::string& where) {
    const std::vector<std::string> parts = split(field, '.');
    if (!m_root.IsMap() || parts.empty()) {
        return false;
    }
    YAML::Node current = m_root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        YAML::Node next = current[parts[i]];
        if (!next.IsDefined() || next.IsNull()) {
            current[parts[i]] = YAML::Node(YAML::NodeType::Map);
            next = current[parts[i]];
        } else if (!next.IsMap()) {
            return false;
        }
        current.reset(next);
    }
    const YAML::Node existing = current[parts.back()];
    if (existing.IsDefined() && !existing.IsNull()) {
        return false;
    }
    current[parts.back()] = YAML::Clone(value);
    m_filled[field] = where;
    return true;
}

void YamlDocument::fill_from(const YamlDocument& from, const std::string& section, const std::vector<std::string>& skip) {
    const auto walk = [&](const auto& self, const YAML::Node& node, const std::string& path) -> void {
        if (node.IsMap()) {
            for (auto it = node.begin(); it != node.end(); ++it) {
                const std::string key = it->first.Scalar();
                if (path.empty() && std::find(skip.begin(), skip.end(), key) != skip.end()) {
                    continue;
                }
                self(self, it->second, path.empty() ? key : path + "." + key);
            }
        } else if (node.IsDefined() && !node.IsNull() && !path.empty()) {
            fill(path, node, from.location(node, path));
        }
    };
    walk(walk, section.empty() ? from.root() : find_node(from.root(), section), section);
}

bool YamlDocument::filled(const std::string& field_path) const {
    return std::any_of(m_filled.begin(), m_filled.end(),
                       [&](const auto& entry) { return field_path == entry.first || starts_with(field_path, entry.first + "."); });
}

std::string YamlDocument::location(const YAML::Node& node, const std::string& field_path) const {
    for (const auto& [field, assignment] : m_overrides) {
        if (field_path == field || starts_with(field_path, field + ".")) {
            return "--set " + assignment;
        }
    }
    for (const auto& [field, where] : m_filled) {
        if (field_path == field || starts_with(field_path, field + ".")) {
            return where;
        }
    }
    if (node.IsDefined()) {
        const YAML::Mark mark = node.Mark();
        if (mark.line >= 0 && mark.pos >= 0) {
            return fmt::format("{}:{}:{}", m_display_name, mark.line + 1, mark.column + 1);
        }
    }
    return m_display_name;
}

std::string YamlDocument::emit() const { return emit_yaml(m_root); }

namespace {

bool matches_any(const std::string& text, std::initializer_list<std::string_view> words) {
    return std::any_of(words.begin(), words.end(), [&](std::string_view word) { return text == word; });
}

/// Whether a plain `text` means something else to PyYAML (YAML 1.1, the CCL-Bench tools' parser)
/// than the text itself: one rule, card/pyyaml_reading's (booleans beyond true/false, `=`, `<<`,
/// null, timestamps, and numbers whose value is not their text: 1.10, 017, 1:30, 1_000, +12), plus
/// the y/n that yaml-cpp reads as booleans. A number PyYAML reads as its own text (12, 1.5) is not.
bool yaml11_special(const std::string& text) {
    if (matches_any(text, {"y", "Y", "n", "N"})) {
        return true;
    }
    const PyYamlScalar read = pyyaml_plain_scalar(text);
    switch (read.type) {
    case PyYamlType::str: return false;
    case PyYamlType::integer:
    case PyYamlType::floating: return !read.refusal.empty() || read.shown != text;
    case PyYamlType::boolean: return !matches_any(text, {"true", "True", "TRUE", "false", "False", "FALSE"}); // 1.2's too
    case PyYamlType::null:
    case PyYamlType::timestamp:
    case PyYamlType::merge:
    case PyYamlType::value: return true;
    }
    return true;
}

/// True when `text` reads back as exactly this string from a plain scalar in both YAML 1.1
/// (PyYAML) and 1.2 (yaml-cpp), or as the same number, boolean or null in both.
bool plain_is_safe(const std::string& text) {
    if (text.empty() || text.size() > 1000 || yaml11_special(text)) {
        return false;
    }
    // Printable ASCII only: no tabs, line breaks, CR, DEL, NEL, U+2028 or invalid UTF-8.
    for (const char c : text) {
        if (c < 0x20 || c > 0x7e) {
            return false;
        }
    }
    // "-x" and "--flag" are plain in both; "- x" would start a sequence.
    const bool dash_word = text.front() == '-' && text.size() > 1 && text[1] != ' ';
    if ((!dash_word && std::string_view("-?:,[]{}#&*!|>'\"%@`= ").find(text.front()) != std::string_view::npos) ||
        text.back() == ' ' || text.back() == ':') {
        return false;
    }
    return text.find(": ") == std::string::npos && text.find(" #") == std::string::npos &&
           text.find_first_of(",[]{}") == std::string::npos; // flow indicators, for keys and values alike
}

void append_utf8_escape(std::string& out, std::uint32_t code) {
    // Not \N for U+0085: yaml-cpp 0.7 reads that escape back as a lone byte.
    if (code == 0x2028) {
        out += "\\L";
    } else if (code == 0x2029) {
        out += "\\P";
    } else if (code <= 0xff) {
        out += fmt::format("\\x{:02X}", code);
    } else {
        out += fmt::format("\\u{:04X}", code);
    }
}

/// One UTF-8 sequence at `text[i]`: its code point and length, or length 0 when it is invalid.
std::pair<std::uint32_t, std::size_t> decode_utf8(std::string_view text, std::size_t i) {
    const std::size_t length = utf8_sequence_length(text, i);
    return {length == 0 ? 0 : static_cast<std::uint32_t>(utf8_code_point(text, i, length)), length};
}

std::string double_quoted(const std::string& text) {
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size();) {
        const auto [code, length] = decode_utf8(text, i);
        if (length == 0) {
            // Not UTF-8: no YAML string holds the byte itself; its Latin-1 reading is the nearest.
            append_utf8_escape(out, static_cast<unsigned char>(text[i]));
            ++i;
            continue;
        }
        if (code == '"' || code == '\\') {
            out += '\\';
            out += static_cast<char>(code);
        } else if (code == '\n') {
            out += "\\n";
        } else if (code == '\t') {
            out += "\\t";
        } else if (code == '\r') {
            out += "\\r";
        } else if (code < 0x20 || (code >= 0x7f && code <= 0xa0) || code == 0x2028 || code == 0x2029 || code == 0xfeff ||
                   code == 0xfffe || code == 0xffff) {
            append_utf8_escape(out, code);
        } else {
            out.append(text, i, length);
        }
        i += length;
    }
    return out + "\"";
}

bool emitted_plain(const YAML::Node& node) {
    // "!" marks a scalar quoted in its source: it stays a string, whatever it looks like.
    const std::string& tag = node.Tag();
    return (tag.empty() || tag == "?") && plain_is_safe(node.Scalar());
}

/// Block-style lines of a collection, each indented by `indent`.
void emit_collection(const YAML::Node& node, std::size_t indent, std::vector<std::string>& lines);

/// The text after "key:" or "-": " value" on the same line, or nothing (lines follow).
std::optional<std::string> inline_value(const YAML::Node& node) {
    if (node.IsNull() || !node.IsDefined()) {
        return std::string(" ~");
    }
    if (node.IsScalar()) {
        return " " + (emitted_plain(node) ? node.Scalar() : double_quoted(node.Scalar()));
    }
    if (node.size() == 0) {
        return std::string(node.IsMap() ? " {}" : " []");
    }
    return std::nullopt;
}

void emit_nested(const YAML::Node& value, const std::string& head, std::size_t indent, bool as_item, std::vector<std::string>& lines) {
    if (const std::optional<std::string> text = inline_value(value)) {
        lines.push_back(head + *text);
        return;
    }
    if (!as_item) {
        lines.push_back(head);
        emit_collection(value, indent + 2, lines);
        return;
    }
    // "- " then the first line of the nested block on the same line: "- key: 1", "- - a".
    const std::size_t first = lines.size();
    emit_collection(value, indent + 2, lines);
    lines[first] = head + " " + lines[first].substr(indent + 2);
}

void emit_collection(const YAML::Node& node, std::size_t indent, std::vector<std::string>& lines) {
    const std::string pad(indent, ' ');
    if (node.IsMap()) {
        for (const auto& item : node) {
            emit_nested(item.second, pad + yaml_scalar_text(scalar_text(item.first)) + ":", indent, false, lines);
        }
    } else {
        for (const auto& item : node) {
            emit_nested(item, pad + "-", indent, true, lines);
        }
    }
}

} // namespace

std::string yaml_scalar_text(const std::string& text) { return plain_is_safe(text) ? text : double_quoted(text); }

std::string emit_yaml(const YAML::Node& root) {
    if (!root.IsMap() && !root.IsSequence()) {
        return (inline_value(root)->substr(1)) + "\n";
    }
    if (root.size() == 0) {
        return root.IsMap() ? "{}\n" : "[]\n";
    }
    std::vector<std::string> lines;
    emit_collection(root, 0, lines);
    std::string text;
    for (const std::string& line : lines) {
        text += line + "\n";
    }
    return text;
}

YAML::Node find_node(const YAML::Node& root, const std::string& dotted) {
    const YAML::Node* at = &root;
    YAML::Node holder;
    for (const auto& part : split(dotted, '.')) {
        if (!at->IsMap()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        const YAML::Node child = (*at)[part];
        if (!child.IsDefined()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        holder.reset(child);
        at = &holder;
    }
    return *at;
}

std::string scalar_text(const YAML::Node& node) { return node.IsDefined() && node.IsScalar() ? node.Scalar() : std::string(); }

} // namespace harness
