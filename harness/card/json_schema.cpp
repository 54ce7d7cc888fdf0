#include "card/json_schema.hpp"

#include "card/card.hpp"
#include "card/cluster.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace harness {

namespace {

/// A JSON value that keeps object members in insertion order (util/json sorts them), so the
/// schema lists fields as the table does.
class Ordered {
public:
    static Ordered text(const std::string& value) { return literal(json_string(value)); }
    static Ordered integer(long long value) { return literal(std::to_string(value)); }
    static Ordered flag(bool value) { return literal(value ? "true" : "false"); }
    static Ordered object() { return Ordered(Kind::object); }
    static Ordered array() { return Ordered(Kind::array); }
    static Ordered strings(const std::vector<std::string>& values) {
        Ordered out = array();
        for (const auto& value : values) {
            out.push(text(value));
        }
        return out;
    }

    Ordered& set(const std::string& key, Ordered value) {
        m_members.emplace_back(key, std::move(value));
        return *this;
    }
    Ordered& push(Ordered value) {
        m_items.push_back(std::move(value));
        return *this;
    }
    bool empty() const { return m_kind == Kind::object ? m_members.empty() : m_items.empty(); }

    void write(std::string& out, int depth) const {
        const std::string indent(static_cast<std::size_t>(depth + 1) * 2, ' ');
        const std::string close(static_cast<std::size_t>(depth) * 2, ' ');
        if (m_kind == Kind::literal) {
            out += m_literal;
        } else if (m_kind == Kind::array) {
            // Lists of plain values stay on one line: they read as the enumerations they are.
            bool flat = true;
            for (const auto& item : m_items) {
                flat = flat && item.m_kind == Kind::literal;
            }
            out += "[";
            for (std::size_t i = 0; i < m_items.size(); ++i) {
                out += i == 0 ? "" : ",";
                out += flat ? (i == 0 ? "" : " ") : "\n" + indent;
                m_items[i].write(out, depth + 1);
            }
            out += flat || m_items.empty() ? "]" : "\n" + close + "]";
        } else {
            out += "{";
            for (std::size_t i = 0; i < m_members.size(); ++i) {
                out += (i == 0 ? "\n" : ",\n") + indent + json_string(m_members[i].first) + ": ";
                m_members[i].second.write(out, depth + 1);
            }
            out += m_members.empty() ? "}" : "\n" + close + "}";
        }
    }

private:
    enum class Kind { literal, object, array };
    explicit Ordered(Kind kind) : m_kind(kind) {}
    static Ordered literal(std::string text) {
        Ordered out(Kind::literal);
        out.m_literal = std::move(text);
        return out;
    }

    Kind m_kind;
    std::string m_literal;
    std::vector<std::pair<std::string, Ordered>> m_members;
    std::vector<Ordered> m_items;
};

Ordered ref(const std::string& name) { return Ordered::object().set("$ref", Ordered::text("#/definitions/" + name)); }

Ordered any_of(std::vector<Ordered> alternatives) {
    Ordered list = Ordered::array();
    for (auto& alternative : alternatives) {
        list.push(std::move(alternative));
    }
    return Ordered::object().set("anyOf", std::move(list));
}

Ordered typed(const std::string& type) { return Ordered::object().set("type", Ordered::text(type)); }

Ordered string_matching(const std::string& pattern) { return typed("string").set("pattern", Ordered::text(pattern)); }

/// `text` as a regular expression matching it in any letter case (draft-07 has no flags).
std::string any_case(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalpha(u) != 0) {
            out += std::string("[") + static_cast<char>(std::tolower(u)) + static_cast<char>(std::toupper(u)) + "]";
        } else if (std::isalnum(u) != 0 || c == '_' || c == '-' || c == ' ') {
            out += c;
        } else {
            out += std::string("\\") + c;
        }
    }
    return out;
}

// The checker reads scalars as text (strtoll, strtod, to_lower), so a quoted "8" is as good as 8.
// Leading white space is what strtoll and strtod skip; trim() is what the choices ignore.
constexpr const char* k_space = "[\\t\\n\\v\\f\\r ]";
constexpr const char* k_decimal = "([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?";

Ordered definitions() {
    const std::string space = k_space;
    const std::string decimal = k_decimal;
    Ordered out = Ordered::object();
    out.set("empty", any_of({typed("null"), string_matching("^\\s*$"), typed("array").set("maxItems", Ordered::integer(0)),
                             typed("object").set("maxProperties", Ordered::integer(0))})
                         .set("description", Ordered::text("nothing: a missing value, blank text, [] or {}")));
    out.set("scalar", Ordered::object().set("type", Ordered::strings({"string", "number", "boolean"})));
    out.set("text", any_of({string_matching("\\S"), Ordered::object().set("type", Ordered::strings({"number", "boolean"}))}));
    out.set("positive_int",
            any_of({typed("integer").set("minimum", Ordered::integer(1)), string_matching("^" + space + "*\\+?0*[1-9][0-9]*$")}));
    out.set("nonneg_int",
            any_of({typed("integer").set("minimum", Ordered::integer(0)), string_matching("^" + space + "*(\\+?[0-9]+|-0+)$")}));
    out.set("number", any_of({typed("number"), string_matching("^" + space + "*([+-]?" + decimal + "|[+-]?(" + any_case("infinity") +
                                                               "|" + any_case("inf") + "|" + any_case("nan") + "))$")}));
    out.set("boolean",
            any_of({typed("boolean"), string_matching("^(" + any_case("true") + "|" + any_case("false") + "|" + any_case("yes") + "|" +
                                                      any_case("no") + "|" + any_case("on") + "|" + any_case("off") + ")$")}));
    // An entry that is not a number is read as text: N/A is documented, TBD or nothing warns.
    out.set("bandwidth_entry", any_of({typed("number").set("minimum", Ordered::integer(0)),
                                       string_matching("^(" + space + "*\\+?" + decimal + "|\\s*(" + any_case("n/a") + "|" +
                                                       any_case("tbd") + ")?\\s*)$"),
                                       Ordered::object().set("type", Ordered::strings({"null", "array", "object"}))}));
    return out;
}

struct Context {
    const JsonSchemaInfo& info;
    bool closed = false; ///< inside info.closed_section: an unknown key is an error
};

Ordered field_schema(const FieldSpec& field, const Context& context);

/// The values a choice field accepts without an error (strict choices only).
Ordered strict_choice(const FieldSpec& field) {
    std::vector<std::string> alternatives;
    Ordered numbers = Ordered::array();
    for (const auto& choice : field.choices) {
        alternatives.push_back(any_case(choice));
        if (!choice.empty() &&
            std::all_of(choice.begin(), choice.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
            numbers.push(Ordered::integer(std::stoll(choice))); // `version: 1` is a number to a YAML reader
        }
    }
    std::vector<Ordered> accepted;
    accepted.push_back(Ordered::object().set("enum", Ordered::strings(field.choices)));
    accepted.push_back(string_matching("^\\s*(" + join(alternatives, "|") + ")\\s*$"));
    if (!numbers.empty()) {
        accepted.push_back(Ordered::object().set("enum", std::move(numbers)));
    }
    return any_of(std::move(accepted));
}

/// Adds a mapping's properties, required keys and the unknown-key warning to `out`.
void add_members(Ordered& out, const std::vector<FieldSpec>& children, const Context& context, bool nested) {
    Ordered properties = Ordered::object();
    std::vector<std::string> required;
    for (const auto& child : children) {
        properties.set(child.key, field_schema(child, context));
        if (child.need == Need::required) {
            required.push_back(child.key);
        }
    }
    if (nested) {
        for (const auto& section : context.info.misplaced_sections) {
            bool known = false;
            for (const auto& child : children) {
                known = known || child.key == section;
            }
            const bool lifted = std::find(context.info.lifted_sections.begin(), context.info.lifted_sections.end(), section) !=
                                context.info.lifted_sections.end();
            if (!known && lifted) {
                properties.set(section, Ordered::object()
                                            .set("description", Ordered::text("section " + section +
                                                                              " belongs at the top level (check its indentation)"))
                                            .set("deprecationMessage", Ordered::text("section " + section +
                                                                                     " is read as the top-level section it belongs "
                                                                                     "to; fix its indentation")));
            } else if (!known) {
                properties.set(section, Ordered::object()
                                            .set("description", Ordered::text("section " + section +
                                                                              " belongs at the top level (check its indentation)"))
                                            .set("not", Ordered::object()));
            }
        }
    }
    out.set("properties", std::move(properties));
    if (!required.empty()) {
        out.set("required", Ordered::strings(required));
    }
    if (context.closed) {
        out.set("additionalProperties",
                Ordered::object()
                    .set("description", Ordered::text("unknown key in the harness's launch: section (check its spelling)"))
                    .set("not", Ordered::object()));
    } else {
        out.set(
            "additionalProperties",
            Ordered::object().set("deprecationMessage", Ordered::text("unknown key: ccl-harness ignores it (check its spelling)")));
    }
}

/// What the field accepts without an error, emptiness aside.
Ordered value_schema(const FieldSpec& field, const Context& context) {
    switch (field.kind) {
    case ValueKind::map: {
        Ordered out = typed("object");
        const Context inner{context.info,
                            context.closed || (!context.info.closed_section.empty() && field.key == context.info.closed_section)};
        add_members(out, field.children, inner, true);
        return out;
    }
    case ValueKind::free_map: {
        Ordered out = typed("object");
        if (field.identifier_keys) {
            out.set("propertyNames",
                    string_matching("^[A-Za-z_][A-Za-z0-9_]*$").set("description", Ordered::text("an environment variable name")));
        }
        out.set("additionalProperties", Ordered::object().set("type", Ordered::strings({"string", "number", "boolean", "null"})));
        return out;
    }
    case ValueKind::positive_int: return ref("positive_int");
    case ValueKind::nonneg_int: return ref("nonneg_int");
    case ValueKind::number: return ref("number");
    case ValueKind::boolean: return ref("boolean");
    case ValueKind::string_list: {
        const bool strict = field.choices_are_strict && !field.choices.empty();
        const bool required = field.need == Need::required;
        Ordered single = Ordered::object()
                             .set("allOf", Ordered::array().push(strict ? strict_choice(field) : ref(required ? "text" : "scalar")))
                             .set("deprecationMessage", Ordered::text("expected a list; a single value is read as a list of one"));
        Ordered list = typed("array").set("items", any_of({typed("null"), strict ? strict_choice(field) : ref("scalar")}));
        if (required) {
            list.set("minItems", Ordered::integer(1));
        }
        return any_of({std::move(list), std::move(single)});
    }
    case ValueKind::bandwidth:
        return typed("array")
            .set("items", ref("bandwidth_entry"))
            .set("minItems", Ordered::integer(field.need == Need::required ? 1 : 0));
    case ValueKind::any: return Ordered::object();
    case ValueKind::string:
    default:
        if (field.choices_are_strict && !field.choices.empty()) {
            return strict_choice(field);
        }
        return field.need == Need::required ? ref("text") : ref("scalar");
    }
}

Ordered field_schema(const FieldSpec& field, const Context& context) {
    Ordered out = Ordered::object();
    if (!field.description.empty()) {
        out.set("description", Ordered::text(field.description));
    }
    Ordered value = value_schema(field, context);
    if (field.kind == ValueKind::any) {
        return out;
    }
    if (field.need == Need::required) {
        // Empty is an error: objects and lists must have members; scalars' patterns need text.
        if (field.kind == ValueKind::map || field.kind == ValueKind::free_map) {
            value.set("minProperties", Ordered::integer(1));
        }
        out.set("allOf", Ordered::array().push(std::move(value)));
    } else {
        out.set("anyOf", Ordered::array().push(ref("empty")).push(std::move(value)));
    }
    if (!field.choices.empty() && !field.choices_are_strict) {
        out.set("examples", Ordered::strings(field.choices)); // suggestions; others only warn
    }
    if (!field.moved_to.empty()) {
        out.set("deprecationMessage", Ordered::text("belongs under " + field.moved_to + "; read from here"));
    }
    return out;
}

} // namespace

std::string json_schema(const std::vector<FieldSpec>& spec, const JsonSchemaInfo& info) {
    const Context context{info};
    Ordered root = Ordered::object();
    root.set("$schema", Ordered::text("http://json-schema.org/draft-07/schema#"));
    root.set("title", Ordered::text(info.title));
    root.set("description", Ordered::text(info.description));
    root.set("type", Ordered::text("object"));
    add_members(root, spec, context, false);
    root.set("definitions", definitions());
    std::string out;
    root.write(out, 0);
    return out + "\n";
}

std::string card_json_schema() {
    JsonSchemaInfo info;
    info.title = "CCL-Bench workload card";
    info.description = "A CCL-Bench workload card, version 1, with ccl-harness's optional launch: section. Generated by "
                       "`ccl-harness schema card` from the field table in harness/card/card.cpp; do not edit. Errors here are "
                       "errors for `ccl-harness validate`; its warnings (unknown keys, empty expected fields) are not.";
    info.misplaced_sections = card_sections();
    info.lifted_sections = card_lifted_sections();
    info.closed_section = "launch";
    return json_schema(card_schema(), info);
}

std::string cluster_json_schema() {
    JsonSchemaInfo info;
    info.title = "ccl-harness cluster profile";
    info.description = "A cluster profile (clusters/<name>.yaml): site facts only. Generated by `ccl-harness schema cluster` "
                       "from the field table in harness/cluster.cpp; do not edit.";
    return json_schema(cluster_schema(), info);
}

} // namespace harness
