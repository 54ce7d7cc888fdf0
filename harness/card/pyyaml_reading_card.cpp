// pyyaml_reading() of pyyaml_reading.hpp: a whole card, its bytes (what PyYAML's reader and
// scanner refuse) and its tree (each plain scalar against the field's declared kind).
#include "card/pyyaml_reading.hpp"

#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <set>
#include <tuple>

namespace harness {

namespace {

/// Past this many findings in a card's bytes, the rest add nothing.
constexpr std::size_t k_most_stream_findings = 20;

struct StreamFinding {
    std::size_t line = 0;   ///< from 0, counting '\n' as yaml-cpp's marks do
    std::size_t column = 0; ///< from 0, in bytes
    std::string message;
};

/// reader.py:137 (NON_PRINTABLE): what PyYAML's reader accepts at all.
bool pyyaml_printable(char32_t code) {
    return code == 0x09 || code == 0x0A || code == 0x0D || (code >= 0x20 && code <= 0x7E) || code == 0x85 ||
           (code >= 0xA0 && code <= 0xD7FF) || (code >= 0xE000 && code <= 0xFFFD) || (code >= 0x10000 && code <= 0x10FFFF);
}

/// Characters PyYAML refuses, and line breaks it sees that yaml-cpp does not (scanner.py's
/// scan_line_break: '\r', U+0085, U+2028, U+2029): past one, PyYAML reads another line.
void check_characters(std::string_view text, std::vector<StreamFinding>& found) {
    std::size_t line = 0;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < text.size() && found.size() < k_most_stream_findings;) {
        const std::size_t length = utf8_sequence_length(text, i);
        if (length == 0) {
            found.push_back({line, i - line_start,
                             fmt::format("{}: byte 0x{:02X} is not UTF-8", k_pyyaml_unloadable,
                                         static_cast<unsigned>(static_cast<unsigned char>(text[i])))});
            ++i;
            continue;
        }
        const char32_t code = utf8_code_point(text, i, length);
        const bool lone_cr = code == '\r' && (i + 1 == text.size() || text[i + 1] != '\n');
        if (code == '\n') {
            ++line;
            line_start = i + 1;
        } else if (lone_cr || code == 0x85 || code == 0x2028 || code == 0x2029) {
            found.push_back({line, i - line_start,
                             fmt::format("PyYAML reads a line break here ({}) that the harness does not, so the value "
                                         "ends here for PyYAML: write it as an escape inside double quotes (\"{}\")",
                                         lone_cr ? "a carriage return" : fmt::format("U+{:04X}", static_cast<unsigned>(code)),
                                         lone_cr ? "\\r" : fmt::format("\\u{:04X}", static_cast<unsigned>(code)))});
        } else if (!pyyaml_printable(code)) {
            found.push_back({line, i - line_start,
                             fmt::format("{}: character U+{:04X} is not allowed (reader.py: only tab, line breaks and printable "
                                         "characters); write it as an escape inside double quotes (\"\\u{:04X}\")",
                                         k_pyyaml_unloadable, static_cast<unsigned>(code), static_cast<unsigned>(code))});
        }
        i += length;
    }
}

/// After `|` or `>`: indentation and chomping indicators, then nothing or a comment.
bool block_scalar_header(std::string_view rest) {
    const std::size_t end = rest.find_first_not_of("0123456789+-");
    if (end == std::string_view::npos) {
        return true;
    }
    const std::size_t next = rest.find_first_not_of(' ', end);
    return next == std::string_view::npos || (next > end && rest[next] == '#');
}

/// Tabs between tokens (scanner.py:752-776 skips spaces only, then scanner.py:259 refuses a tab)
/// and a second document (composer.py:41), found line by line outside quoted scalars, block
/// scalars' bodies and comments, where tabs are text.
void check_tokens(std::string_view text, std::vector<StreamFinding>& found) {
    enum class Quote { none, single, twin };
    Quote quote = Quote::none;
    std::size_t block_indent = std::string_view::npos; ///< a block scalar's body is indented deeper
    bool content = false;
    const std::vector<std::string> lines = split(text, '\n');
    for (std::size_t number = 0; number < lines.size() && found.size() < k_most_stream_findings; ++number) {
        std::string_view line = lines[number];
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        const std::size_t indent = line.find_first_not_of(' ');
        if (quote == Quote::none && block_indent != std::string_view::npos) {
            if (line.find_first_not_of(" \t") == std::string_view::npos ||
                (indent != std::string_view::npos && indent > block_indent)) {
                continue;
            }
            block_indent = std::string_view::npos;
        }
        std::size_t column = 0;
        if (quote == Quote::none && (line == "---" || starts_with(line, "--- "))) {
            if (content) {
                found.push_back(
                    {number, 0, fmt::format("{}: a second document (---); safe_load reads exactly one", k_pyyaml_unloadable)});
            }
            column = 3;
        }
        char previous = '\n'; // the last character of a token on this line; '\n' at its start
        for (; column < line.size(); ++column) {
            const char c = line[column];
            if (quote == Quote::twin) {
                column += c == '\\' ? 1 : 0;
                quote = c == '"' ? Quote::none : quote;
                continue;
            }
            if (quote == Quote::single) {
                if (c == '\'' && column + 1 < line.size() && line[column + 1] == '\'') {
                    ++column;
                } else if (c == '\'') {
                    quote = Quote::none;
                }
                continue;
            }
            if (c == '#' && (column == 0 || line[column - 1] == ' ' || line[column - 1] == '\t')) {
                break;
            }
            if (c == '\t') {
                found.push_back({number, column,
                                 fmt::format("{}: a tab here (between tokens, or in an unquoted value); use spaces, or quote "
                                             "the value",
                                             k_pyyaml_unloadable)});
                break;
            }
            if (c == ' ') {
                continue;
            }
            content = true;
            const bool token_start = previous == '\n' || std::string_view(":-[{,?").find(previous) != std::string_view::npos;
            if (token_start && (c == '"' || c == '\'')) {
                quote = c == '"' ? Quote::twin : Quote::single;
            } else if (token_start && (c == '|' || c == '>') && block_scalar_header(line.substr(column + 1))) {
                block_indent = indent == std::string_view::npos ? 0 : indent;
                break;
            }
            previous = c;
        }
    }
}

/// How the harness reads a field, by its declared kind.
enum class Reading { text, integer, number, boolean, bandwidth, unchecked };

Reading reading_of(const FieldSpec* spec) {
    if (spec == nullptr) {
        return Reading::unchecked;
    }
    switch (spec->kind) {
    case ValueKind::string:
    case ValueKind::string_list:
    case ValueKind::free_map: return Reading::text;
    case ValueKind::positive_int:
    case ValueKind::nonneg_int: return Reading::integer;
    case ValueKind::number: return Reading::number;
    case ValueKind::boolean: return Reading::boolean;
    case ValueKind::bandwidth: return Reading::bandwidth;
    default: return Reading::unchecked;
    }
}

/// The tags SafeConstructor builds (constructor.py:431-477), as yaml-cpp spells them.
bool safe_tag(const std::string& tag) {
    static const std::set<std::string> tags = {"null", "bool",  "int", "float", "binary", "timestamp",
                                               "omap", "pairs", "set", "str",   "seq",    "map"};
    const std::string prefix = "tag:yaml.org,2002:";
    return tag.empty() || tag == "?" || tag == "!" || (starts_with(tag, prefix) && tags.count(tag.substr(prefix.size())) != 0);
}

FieldSpec of_kind(ValueKind kind) {
    FieldSpec spec;
    spec.kind = kind;
    return spec;
}

std::string quote_fix(const std::string& text) { return fmt::format("quote it: {}", json_string(text)); }

class CardReading {
public:
    explicit CardReading(const YamlDocument& doc) : m_doc(doc) {}

    void walk(const YAML::Node& node, const FieldSpec* spec, const std::string& path);
    /// The field whose node starts last at or before (line, column): where a byte belongs.
    std::string field_at(std::size_t line, std::size_t column) const;
    Diagnostics& out() { return m_out; }

private:
    void walk_map(const YAML::Node& node, const FieldSpec* spec, const std::string& path);
    void check_plain(const YAML::Node& node, Reading reading, const std::string& path, bool key);
    void check_text(const YAML::Node& node, const PyYamlScalar& py, const std::string& location, const std::string& path);
    void check_number(const YAML::Node& node, const PyYamlScalar& py, Reading reading, const std::string& location,
                      const std::string& path);

    const YamlDocument& m_doc;
    Diagnostics m_out;
    std::vector<std::tuple<std::size_t, std::size_t, std::string>> m_marks;
};

void CardReading::walk(const YAML::Node& node, const FieldSpec* spec, const std::string& path) {
    if (!node.IsDefined()) {
        return;
    }
    const YAML::Mark mark = node.Mark();
    if (mark.line >= 0 && mark.column >= 0) {
        m_marks.emplace_back(static_cast<std::size_t>(mark.line), static_cast<std::size_t>(mark.column), path);
    }
    if (!safe_tag(node.Tag())) {
        m_out.error(
            m_doc.location(node, path), path,
            fmt::format("{}: could not determine a constructor for the tag '{}'; remove the tag", k_pyyaml_unloadable, node.Tag()));
        return;
    }
    if (node.IsMap()) {
        walk_map(node, spec, path);
    } else if (node.IsSequence()) {
        static const FieldSpec text_item = of_kind(ValueKind::string);
        static const FieldSpec bandwidth_item = of_kind(ValueKind::bandwidth);
        const FieldSpec* item = spec == nullptr                        ? nullptr
                                : spec->kind == ValueKind::string_list ? &text_item
                                : spec->kind == ValueKind::bandwidth   ? &bandwidth_item
                                                                       : nullptr;
        for (std::size_t i = 0; i < node.size(); ++i) {
            walk(node[i], item, fmt::format("{}[{}]", path, i));
        }
    } else if (node.IsScalar() && node.Tag() == "?") {
        check_plain(node, reading_of(spec), path, false);
    }
}

void CardReading::walk_map(const YAML::Node& node, const FieldSpec* spec, const std::string& path) {
    static const FieldSpec free_value = of_kind(ValueKind::string);
    const bool known = spec != nullptr && (spec->kind == ValueKind::map || spec->kind == ValueKind::free_map);
    for (const auto& entry : node) {
        const YAML::Node& key = entry.first;
        const YAML::Node& value = entry.second;
        const std::string name = scalar_text(key);
        const std::string field = path.empty() ? name : path + "." + name;
        const bool plain_key = key.IsScalar() && key.Tag() == "?";
        if (const YAML::Mark mark = key.Mark(); mark.line >= 0 && mark.column >= 0) {
            m_marks.emplace_back(static_cast<std::size_t>(mark.line), static_cast<std::size_t>(mark.column), field);
        }
        if (plain_key && name == "<<") { // resolver.py:195-198, constructor.py:180-206
            m_out.error(m_doc.location(key, field), field,
                        value.IsMap() || value.IsSequence()
                            ? fmt::format("PyYAML merges the mapping given here into {}, the harness reads a key named "
                                          "\"<<\": write the keys out",
                                          path.empty() ? "the card" : path)
                            : fmt::format("{}: expected a mapping or list of mappings for merging (<<)", k_pyyaml_unloadable));
            walk(value, nullptr, field);
            continue;
        }
        if (plain_key && name != "=") { // constructor.py:207-208 makes a key `=` a string
            check_plain(key, known ? Reading::text : Reading::unchecked, field, true);
        }
        const FieldSpec* child = nullptr;
        if (known && spec->kind == ValueKind::free_map) {
            child = &free_value;
        } else if (known) {
            const auto found = std::find_if(spec->children.begin(), spec->children.end(),
                                            [&](const FieldSpec& candidate) { return candidate.key == name; });
            child = found == spec->children.end() ? nullptr : &*found;
        }
        walk(value, child, field);
    }
}

void CardReading::check_plain(const YAML::Node& node, Reading reading, const std::string& path, bool key) {
    const std::string location = m_doc.location(node, path);
    const std::string& text = node.Scalar();
    if ((starts_with(location, "--set ") || m_doc.filled(path)) && yaml_scalar_text(text) != text) {
        return; // not in the file, and the effective card (emit_yaml) writes it quoted
    }
    const PyYamlScalar py = pyyaml_plain_scalar(text);
    if (!py.refusal.empty()) {
        m_out.error(location, path,
                    fmt::format("{}: it reads {} as {} and refuses it ({}); {}", k_pyyaml_unloadable, json_string(text),
                                pyyaml_type_name(py.type), py.refusal, quote_fix(text)));
        return;
    }
    if (!key && (py.type == PyYamlType::value || py.type == PyYamlType::merge)) {
        m_out.error(location, path,
                    fmt::format("{}: a plain {} is {}, which safe_load cannot construct (could not determine a "
                                "constructor for the tag 'tag:yaml.org,2002:{}'); {}",
                                k_pyyaml_unloadable, text, pyyaml_type_name(py.type), py.type == PyYamlType::value ? "value" : "merge",
                                quote_fix(text)));
        return;
    }
    if (reading == Reading::text || (reading == Reading::bandwidth && py.type == PyYamlType::str)) {
        check_text(node, py, location, path);
    } else if (reading != Reading::unchecked) {
        check_number(node, py, reading, location, path);
    }
}

void CardReading::check_text(const YAML::Node& node, const PyYamlScalar& py, const std::string& location, const std::string& path) {
    const std::string& text = node.Scalar();
    if (py.type == PyYamlType::str || py.type == PyYamlType::null || py.type == PyYamlType::merge || py.type == PyYamlType::value) {
        return;
    }
    if (py.shown == text && py.type == PyYamlType::timestamp) {
        m_out.warning(location, path,
                      fmt::format("PyYAML reads {} as a date, not as text (the harness reads text); {}", text, quote_fix(text)));
    } else if (py.shown != text || py.type == PyYamlType::boolean) {
        m_out.error(location, path,
                    fmt::format("PyYAML reads {}{}, not the text {} the harness reads; {}", py.shown.empty() ? "" : py.shown + " ",
                                py.shown.empty() ? pyyaml_type_name(py.type) : fmt::format("({})", pyyaml_type_name(py.type)),
                                json_string(text), quote_fix(text)));
    }
}

void CardReading::check_number(const YAML::Node& node, const PyYamlScalar& py, Reading reading, const std::string& location,
                               const std::string& path) {
    std::string harness;
    bool same = false;
    if (long long integer = 0; reading == Reading::integer) {
        if (!read_int(node, integer)) {
            return; // not an integer to the harness either: the schema reports it
        }
        harness = std::to_string(integer);
        same = py.type == PyYamlType::integer && py.shown == harness;
    } else if (double number = 0; reading == Reading::number || reading == Reading::bandwidth) {
        if (!read_number(node, number)) {
            return;
        }
        harness = fmt::format("{}", number);
        same = (py.type == PyYamlType::integer || py.type == PyYamlType::floating) && !py.shown.empty() &&
               std::strtod(py.shown.c_str(), nullptr) == number;
    } else if (bool flag = false; reading == Reading::boolean) {
        if (!read_bool(node, flag)) {
            return;
        }
        harness = flag ? "true" : "false";
        same = py.type == PyYamlType::boolean && (py.shown == "True") == flag;
    }
    if (same) {
        return;
    }
    const std::string py_reads = py.type == PyYamlType::str ? fmt::format("the text {}", json_string(node.Scalar()))
                                 : py.shown.empty()         ? std::string(pyyaml_type_name(py.type))
                                                            : fmt::format("{} ({})", py.shown, pyyaml_type_name(py.type));
    m_out.error(location, path, fmt::format("PyYAML reads {}, the harness {}: write {}", py_reads, harness, harness));
}

std::string CardReading::field_at(std::size_t line, std::size_t column) const {
    std::string field;
    std::pair<std::size_t, std::size_t> best{0, 0};
    for (const auto& [mark_line, mark_column, path] : m_marks) {
        const std::pair<std::size_t, std::size_t> at{mark_line, mark_column};
        if (at <= std::make_pair(line, column) && at >= best && !path.empty()) {
            best = at;
            field = path;
        }
    }
    return field;
}

} // namespace

Diagnostics pyyaml_reading(std::string_view text, const YamlDocument& doc, const std::vector<FieldSpec>& spec) {
    FieldSpec root = of_kind(ValueKind::map);
    root.children = spec;
    CardReading reading(doc);
    reading.walk(doc.root(), &root, "");
    std::vector<StreamFinding> found;
    check_characters(text, found);
    check_tokens(text, found);
    Diagnostics out;
    for (const StreamFinding& finding : found) {
        out.error(fmt::format("{}:{}:{}", doc.display_name(), finding.line + 1, finding.column + 1),
                  reading.field_at(finding.line, finding.column), finding.message);
    }
    out.append(reading.out());
    return out;
}

} // namespace harness
