#pragma once
// How PyYAML reads a card. The CCL-Bench tools load cards with yaml.safe_load (YAML 1.1), the
// harness with yaml-cpp (YAML 1.2 core), so a card that leaves the harness (a bundle's) is checked
// against PyYAML 6's SafeLoader: its implicit resolvers, its constructors, and what its reader and
// scanner refuse. File:line citations are to /usr/lib/python3/dist-packages/yaml/ (python3-yaml 6.0).
#include "card/diagnostic.hpp"
#include "card/schema.hpp"
#include "card/yaml_document.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace harness {

/// Begins every message about a card that yaml.safe_load refuses outright.
constexpr const char* k_pyyaml_unloadable = "PyYAML cannot load this card";

/// The tag PyYAML's implicit resolvers give a plain (unquoted, untagged) scalar.
enum class PyYamlType { str, boolean, integer, floating, null, timestamp, merge, value };

struct PyYamlScalar {
    PyYamlType type = PyYamlType::str;
    /// The value as Python's str() shows it ("True", "1.1", "80", "2024-01-02"); the text itself
    /// for a str; "" where it cannot be built or an integer is past 64 bits.
    std::string shown;
    /// Why safe_load cannot construct it ("month must be in 1..12"), "" when it can.
    std::string refusal;
};

/// PyYAML's reading of the plain scalar `text`.
PyYamlScalar pyyaml_plain_scalar(std::string_view text);

/// "a boolean", "an integer", ... for messages.
const char* pyyaml_type_name(PyYamlType type);

/// Where PyYAML and the harness read the card `doc` (parsed from `text`, checked against `spec`)
/// differently. Errors lose meaning: safe_load refuses the card, or a field reads as another value
/// (`contributor: yes` or `False` → a boolean, `version: 1.10` → 1.1, `tp: 010` → 8). Warnings change only the
/// type (`date: 2024-01-02` → a date whose text is the same). A number read as the same text is
/// not reported. Fields of kind `any` and unknown fields are checked only for what safe_load
/// refuses; values from `--set` or user defaults only where the effective card writes them plain.
Diagnostics pyyaml_reading(std::string_view text, const YamlDocument& doc, const std::vector<FieldSpec>& spec);

} // namespace harness
