#pragma once
// A declarative description of a YAML document's fields, and the checker that walks a document
// against it. Cards and cluster profiles are both described this way, so both get the same
// positions, "did you mean" suggestions and type messages.
#include "card/diagnostic.hpp"
#include "card/yaml_document.hpp"

#include <string>
#include <vector>

namespace harness {

enum class ValueKind {
    map,          ///< a mapping with known children
    free_map,     ///< a mapping with any keys (env blocks); keys must be identifiers if `identifier_keys`
    string,       ///< any scalar, read as text
    positive_int, ///< 1, 2, ...
    nonneg_int,   ///< 0, 1, ...
    number,       ///< integer or decimal
    boolean,
    string_list, ///< a sequence of scalars; a lone scalar is accepted with a warning
    bandwidth,   ///< [scale_out, scale_up] in Gbps; "N/A" allowed per entry
    any,         ///< anything, unchecked
};

enum class Need {
    optional, ///< may be absent; empty is fine
    expected, ///< may be absent, but absence or emptiness earns a warning
    required, ///< absence or emptiness is an error
};

struct FieldSpec {
    std::string key;
    ValueKind kind = ValueKind::string;
    Need need = Need::optional;
    std::vector<std::string> choices; ///< allowed values (case-insensitive), when non-empty
    bool choices_are_strict = false;  ///< outside `choices`: error if true, warning if false
    std::vector<FieldSpec> children;  ///< for ValueKind::map
    bool identifier_keys = false;     ///< for ValueKind::free_map
    std::string moved_to;             ///< accepted here but belongs at this path (warning)
    std::string note;                 ///< appended to "missing" and "empty" warnings
    std::string description;          ///< one line for people: JSON Schema descriptions, editors' hover text
};

/// Checks `doc` against `spec` (the root must be a map). `misplaced_sections` are top-level
/// names that are errors when found deeper (a section indented under the wrong parent).
Diagnostics check_document(const YamlDocument& doc, const std::vector<FieldSpec>& spec,
                           const std::vector<std::string>& misplaced_sections = {});

/// Why the dotted `path` (as `--set` and `--vary` write it) names no field of `spec`, or "" when
/// it names one: a known field or section, any key of a `free_map`, anything below an `any`.
/// E.g. `unknown field "launch.stepz"; did you mean "launch.steps"?`.
std::string unknown_field_reason(const std::vector<FieldSpec>& spec, const std::string& path);

/// Integer value of a scalar node, or false when it is not an integer.
bool read_int(const YAML::Node& node, long long& out);
/// Decimal value of a scalar node, or false when it is not a number.
bool read_number(const YAML::Node& node, double& out);
/// true/false (also yes/no, on/off, as YAML 1.1 readers do), or false when not a boolean.
bool read_bool(const YAML::Node& node, bool& out);

} // namespace harness
