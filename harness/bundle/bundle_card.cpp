#include "bundle/bundle_card.hpp"
#include "card/yaml_document.hpp"
#include "provenance/env_capture.hpp"
#include "provenance/secret_scrub.hpp"
#include "trace/rank_set.hpp"
#include "trace/trace_names.hpp"

#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <yaml-cpp/yaml.h>

namespace harness {

namespace {

constexpr std::size_t k_none = std::string::npos;

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) {
        text += line + "\n";
    }
    return text;
}

std::size_t indent_of(const std::string& line) {
    const std::size_t first = line.find_first_not_of(' ');
    return first == k_none ? line.size() : first;
}

/// Blank or comment-only: such a line belongs to no value.
bool is_filler(const std::string& line) {
    const std::size_t first = line.find_first_not_of(" \t\r");
    return first == k_none || line[first] == '#';
}

/// Where a mapping value lives in the text: the rest of its key's line and the more indented
/// lines below it.
struct ValueSpan {
    std::size_t key_line = 0;
    std::size_t key_column = 0;
    std::string prefix;                ///< the key line up to and including the ':'
    std::string inline_value;          ///< after the ':' and before any comment, trimmed
    std::string comment;               ///< the key line's comment with the spaces before it, or ""
    std::size_t end_line = 0;          ///< one past the value's last line
    std::size_t child_indent = k_none; ///< indentation of the value's first line below the key
};

/// The index of the comment's '#' in `text` (outside quotes, after a blank), or k_none.
std::size_t comment_start(const std::string& text) {
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote == '"' && c == '\\') {
            ++i;
        } else if (quote != 0) {
            quote = c == quote ? '\0' : quote;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
            return i;
        }
    }
    return k_none;
}

std::optional<ValueSpan> locate_value(const std::vector<std::string>& lines, const YAML::Mark& key) {
    if (key.line < 0 || key.column < 0 || static_cast<std::size_t>(key.line) >= lines.size()) {
        return std::nullopt;
    }
    ValueSpan span;
    span.key_line = static_cast<std::size_t>(key.line);
    span.key_column = static_cast<std::size_t>(key.column);
    const std::string& line = lines[span.key_line];
    std::size_t i = span.key_column;
    if (i >= line.size() || indent_of(line) != i) {
        return std::nullopt; // not the first thing on its line: a flow mapping or "- key:"
    }
    if (line[i] == '"' || line[i] == '\'') {
        const char quote = line[i];
        for (++i; i < line.size() && line[i] != quote; ++i) {
            i += (quote == '"' && line[i] == '\\') ? std::size_t{1} : std::size_t{0};
        }
        ++i;
    }
    while (i < line.size() && !(line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t'))) {
        ++i;
    }
    if (i >= line.size()) {
        return std::nullopt;
    }
    span.prefix = line.substr(0, i + 1);
    std::string rest = line.substr(i + 1);
    if (const std::size_t hash = comment_start(rest); hash != k_none) {
        const std::size_t kept = rest.find_last_not_of(" \t", hash == 0 ? 0 : hash - 1);
        const std::size_t from = (hash == 0 || kept == k_none) ? 0 : kept + 1;
        span.comment = rest.substr(from);
        rest = rest.substr(0, from);
    }
    span.inline_value = trim(rest);
    std::size_t last = span.key_line;
    for (std::size_t n = span.key_line + 1; n < lines.size(); ++n) {
        if (is_filler(lines[n])) {
            continue;
        }
        const std::size_t indent = indent_of(lines[n]);
        const std::string content = lines[n].substr(indent);
        const bool same_level_item = indent == span.key_column && span.inline_value.empty() &&
                                     (content == "-" || starts_with(content, "- "));
        if (indent <= span.key_column && !same_level_item) {
            break;
        }
        if (span.child_indent == k_none) {
            span.child_indent = indent;
        }
        last = n;
    }
    span.end_line = last + 1;
    return span;
}

/// The mapping key named `name` in `map` (block style only), or nothing.
std::optional<YAML::Mark> key_mark(const YAML::Node& map, const std::string& name) {
    for (const auto& item : map) {
        if (item.first.IsScalar() && item.first.Scalar() == name) {
            return item.first.Mark();
        }
    }
    return std::nullopt;
}

std::vector<std::string> item_lines(std::size_t indent, const std::vector<std::string>& kinds) {
    std::vector<std::string> lines;
    for (const std::string& kind : kinds) {
        lines.push_back(std::string(indent, ' ') + "- " + kind);
    }
    return lines;
}

bool same_tree(const YAML::Node& a, const YAML::Node& b) {
    if (a.Type() != b.Type()) {
        return false;
    }
    switch (a.Type()) {
    case YAML::NodeType::Scalar: return a.Scalar() == b.Scalar();
    case YAML::NodeType::Sequence:
        if (a.size() != b.size()) {
            return false;
        }
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (!same_tree(a[i], b[i])) {
                return false;
            }
        }
        return true;
    case YAML::NodeType::Map: {
        if (a.size() != b.size()) {
            return false;
        }
        auto ia = a.begin();
        for (auto ib = b.begin(); ib != b.end(); ++ia, ++ib) {
            if (!same_tree(ia->first, ib->first) || !same_tree(ia->second, ib->second)) {
                return false;
            }
        }
        return true;
    }
    default: return true;
    }
}

/// Through YamlDocument, so that the card's size, node, alias and key bounds hold here too.
YAML::Node parse(const std::string& text, const std::string& display_name) { return YamlDocument::parse(text, display_name).root(); }

/// Sets every secret-named entry of the card's env blocks to k_redacted; true when one changed.
/// render writes card.yaml redacted already; this holds for run directories rendered before it
/// did, since a bundle must never carry a secret whatever wrote its run directory.
bool redact_env(YAML::Node& card) {
    bool changed = false;
    for (const char* path : {"launch.env", "Model-executor.communication_library.env"}) {
        YAML::Node env = find_node(card, path);
        if (!env.IsMap()) {
            continue;
        }
        for (auto item : env) {
            if (item.first.IsScalar() && is_secret_name(item.first.Scalar()) &&
                !(item.second.IsScalar() && item.second.Scalar() == k_redacted)) {
                item.second = std::string(k_redacted);
                changed = true;
            }
        }
    }
    return changed;
}

/// The key's value replaced by the scalar `value` on the key's own line (a value written over
/// several lines becomes one).
void replace_scalar(std::vector<std::string>& lines, const ValueSpan& span, const std::string& value) {
    lines[span.key_line] = span.prefix + " " + value + span.comment;
    lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(span.key_line + 1),
                lines.begin() + static_cast<std::ptrdiff_t>(span.end_line));
}

/// Where a mapping written as a block (or left empty) sits, for adding keys to it; nothing when
/// it is written inline or is not a mapping, shapes the line edits do not handle.
std::optional<ValueSpan> block_value(const std::vector<std::string>& lines, const YAML::Mark& key, const YAML::Node& node) {
    std::optional<ValueSpan> span = locate_value(lines, key);
    if (!span || !span->inline_value.empty() || !(node.IsMap() || node.IsNull())) {
        return std::nullopt;
    }
    return span;
}

/// The line edit for trace_url; nothing when the text has a shape it does not handle.
std::optional<std::vector<std::string>> edit_trace_url(std::vector<std::string> lines, const YAML::Node& root,
                                                       const std::string& value) {
    const std::optional<YAML::Mark> key = key_mark(root, "trace_url");
    if (!key) {
        lines.push_back(std::string(static_cast<std::size_t>(root.begin()->first.Mark().column), ' ') + "trace_url: " + value);
        return lines;
    }
    const std::optional<ValueSpan> span = locate_value(lines, *key);
    if (!span) {
        return std::nullopt;
    }
    replace_scalar(lines, *span, value);
    return lines;
}

/// The line edit for metric_source.traces; nothing when the text has a shape it does not handle.
std::optional<std::vector<std::string>> edit_traces(std::vector<std::string> lines, const YAML::Node& root,
                                                    const std::vector<std::string>& kinds) {
    const std::optional<YAML::Mark> source_key = key_mark(root, "metric_source");
    if (!source_key) {
        const std::string indent(static_cast<std::size_t>(root.begin()->first.Mark().column), ' ');
        lines.push_back(indent + "metric_source:");
        lines.push_back(indent + "  traces:");
        for (const std::string& line : item_lines(indent.size() + 4, kinds)) {
            lines.push_back(line);
        }
        return lines;
    }
    const std::optional<ValueSpan> source = block_value(lines, *source_key, root["metric_source"]);
    const YAML::Node metric_source = root["metric_source"];
    if (!source) {
        return std::nullopt;
    }
    const std::optional<YAML::Mark> traces_key = metric_source.IsMap() ? key_mark(metric_source, "traces") : std::nullopt;
    if (!traces_key) {
        const std::size_t indent = source->child_indent == k_none ? source->key_column + 2 : source->child_indent;
        std::vector<std::string> added{std::string(indent, ' ') + "traces:"};
        for (const std::string& line : item_lines(indent + 2, kinds)) {
            added.push_back(line);
        }
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(source->end_line), added.begin(), added.end());
        return lines;
    }
    const std::optional<ValueSpan> span = locate_value(lines, *traces_key);
    if (!span) {
        return std::nullopt;
    }
    const auto first = lines.begin() + static_cast<std::ptrdiff_t>(span->key_line + 1);
    lines.erase(first, lines.begin() + static_cast<std::ptrdiff_t>(span->end_line));
    if (starts_with(span->inline_value, "[")) {
        lines[span->key_line] = span->prefix + " [" + join(kinds, ", ") + "]" + span->comment;
        return lines;
    }
    lines[span->key_line] = span->prefix + span->comment;
    const std::size_t indent = span->child_indent == k_none ? span->key_column + 2 : span->child_indent;
    const std::vector<std::string> items = item_lines(indent, kinds);
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(span->key_line + 1), items.begin(), items.end());
    return lines;
}

/// The line edit for metric_source.ranks_present; nothing when the text has a shape it does not
/// handle.
std::optional<std::vector<std::string>> edit_ranks_present(std::vector<std::string> lines, const YAML::Node& root,
                                                           const std::string& value) {
    const std::optional<YAML::Mark> source_key = key_mark(root, "metric_source");
    if (!source_key) {
        const std::string indent(static_cast<std::size_t>(root.begin()->first.Mark().column), ' ');
        lines.push_back(indent + "metric_source:");
        lines.push_back(indent + "  " + k_ranks_present_key + ": " + value);
        return lines;
    }
    const std::optional<ValueSpan> source = block_value(lines, *source_key, root["metric_source"]);
    const YAML::Node metric_source = root["metric_source"];
    if (!source) {
        return std::nullopt;
    }
    const std::optional<YAML::Mark> ranks_key = metric_source.IsMap() ? key_mark(metric_source, k_ranks_present_key) : std::nullopt;
    if (!ranks_key) {
        const std::size_t indent = source->child_indent == k_none ? source->key_column + 2 : source->child_indent;
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(source->end_line),
                     std::string(indent, ' ') + k_ranks_present_key + ": " + value);
        return lines;
    }
    const std::optional<ValueSpan> span = locate_value(lines, *ranks_key);
    if (!span) {
        return std::nullopt;
    }
    replace_scalar(lines, *span, value);
    return lines;
}

} // namespace

std::string trace_kind(const std::string& file_name) {
    const TraceName name = classify_trace_name(file_name);
    switch (name.kind) {
    case TraceKind::xla: return "json_tpu";
    case TraceKind::nsys_rep:
    case TraceKind::nsys_sqlite: return "nsys";
    case TraceKind::kineto:
        // Only the name the CCL-Bench tools open counts: collection renames the others.
        return name.canonical ? "json" : "";
    case TraceKind::not_a_trace: break;
    }
    return "";
}

std::string set_bundle_fields(const std::string& card_text, const std::vector<std::string>& trace_kinds, const std::string& trace_url,
                              const std::string& display_name) {
    const YAML::Node root = parse(card_text, display_name);
    if (!root.IsMap() || root.size() == 0) {
        throw input_error(fmt::format("{}: a card is a YAML mapping", display_name));
    }
    // What the result must parse to: the card with the two fields set, everything else equal.
    YAML::Node expected = YAML::Clone(root);
    // A secret never leaves in a bundle: its name stays (the run needed it), its value does not.
    // The line edit below keeps values as written, so a redacted card is written out whole.
    const bool redacted = redact_env(expected);
    expected["trace_url"] = trace_url;
    YAML::Node sequence(YAML::NodeType::Sequence);
    for (const std::string& kind : trace_kinds) {
        sequence.push_back(kind);
    }
    if (!(expected["metric_source"].IsMap() || expected["metric_source"].IsNull())) {
        expected["metric_source"] = YAML::Node(YAML::NodeType::Map);
    }
    expected["metric_source"]["traces"] = sequence;

    std::optional<std::vector<std::string>> lines;
    if (!redacted) {
        lines = edit_trace_url(split_lines(card_text), root, yaml_scalar_text(trace_url));
    }
    if (lines) {
        std::optional<YAML::Node> edited;
        try {
            edited = YAML::Load(join_lines(*lines)); // the marks moved: find the keys again
        } catch (const YAML::Exception&) {
        }
        lines = edited && edited->IsMap() ? edit_traces(*lines, *edited, trace_kinds) : std::nullopt;
    }
    if (lines) {
        std::string text = join_lines(*lines);
        try {
            if (same_tree(YAML::Load(text), expected)) {
                return text;
            }
        } catch (const YAML::Exception&) {
        }
    }
    return emit_yaml(expected);
}

std::string set_ranks_present(const std::string& card_text, const std::vector<long long>& ranks, const std::string& display_name) {
    const YAML::Node root = parse(card_text, display_name);
    if (!root.IsMap() || root.size() == 0) {
        throw input_error(fmt::format("{}: a card is a YAML mapping", display_name));
    }
    YAML::Node expected = YAML::Clone(root);
    YAML::Node sequence(YAML::NodeType::Sequence);
    sequence.SetStyle(YAML::EmitterStyle::Flow);
    std::vector<std::string> items;
    for (const long long rank : ranks) {
        sequence.push_back(rank);
        items.push_back(std::to_string(rank));
    }
    if (!(expected["metric_source"].IsMap() || expected["metric_source"].IsNull())) {
        expected["metric_source"] = YAML::Node(YAML::NodeType::Map);
    }
    expected["metric_source"][k_ranks_present_key] = sequence;
    if (const auto lines = edit_ranks_present(split_lines(card_text), root, "[" + join(items, ", ") + "]")) {
        std::string text = join_lines(*lines);
        try {
            if (same_tree(YAML::Load(text), expected)) {
                return text;
            }
        } catch (const YAML::Exception&) {
        }
    }
    return emit_yaml(expected);
}

} // namespace harness
