#pragma once
// A YAML file kept as a node tree with positions, plus the `--set` overrides applied to it, so
// every later message can point at the line and column (or the flag) a value came from.
#include "util/fs.hpp"

#include <map>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace harness {

// yaml-cpp's YAML::Node assignment is not noexcept, so neither is the implicit move assignment.
class YamlDocument { // NOLINT(bugprone-exception-escape)
public:
    /// Parses `path`. Invalid YAML is a HarnessError (exit 2) with file:line:column.
    static YamlDocument load(const fs::path& path);
    /// Parses text that claims to come from `display_name` (used by tests and --set).
    static YamlDocument parse(const std::string& text, const std::string& display_name);

    /// Applies `dotted.path=value`; the value is read as a YAML scalar or flow collection.
    /// Intermediate maps are created. A malformed assignment is an input error.
    void set(const std::string& assignment);

    /// Gives `field` (a dotted path) `value` only where the document has no value there yet, and
    /// records `where` ("file:line:col" of a defaults file, "$SBATCH_ACCOUNT") as its location,
    /// so a user default never hides the card's own value or a --set. Returns false when the
    /// field was already set or a part of its path is not a mapping (the card's value stands).
    bool fill(const std::string& field, const YAML::Node& value, const std::string& where);
    /// fill() for every leaf of `from` (a list is one leaf) at or under the dotted `section`
    /// ("" for the whole document), each located at its own line in `from`; `skip` names
    /// top-level keys of `from` to leave out.
    void fill_from(const YamlDocument& from, const std::string& section, const std::vector<std::string>& skip = {});
    /// True when `field_path` (or a mapping above it) was given by fill().
    bool filled(const std::string& field_path) const;

    const YAML::Node& root() const { return m_root; }

    /// Moves each of `sections` that is missing at the top level but nested one level down (under
    /// another top-level map) to the top level, and returns the dotted paths it was found at
    /// ("workload.Model-executor"), each with its nested key node, for the message's position.
    std::vector<std::pair<std::string, YAML::Node>> lift_nested_sections(const std::vector<std::string>& sections);
    const std::string& display_name() const { return m_display_name; }
    const fs::path& path() const { return m_path; }

    /// "file:line:col" for a node, the `--set` text for overridden values, where fill() took a
    /// user default from, or the file name.
    std::string location(const YAML::Node& node, const std::string& field_path) const;

    /// The effective document (after overrides), written by emit_yaml. Comments are not kept.
    std::string emit() const;

private:
    YAML::Node m_root;
    fs::path m_path;
    std::string m_display_name;
    std::map<std::string, std::string> m_overrides; ///< field path -> original assignment
    std::map<std::string, std::string> m_filled;    ///< field path -> where fill() took it from
};

/// Node at a dotted path or an undefined/invalid node. Never throws.
YAML::Node find_node(const YAML::Node& root, const std::string& dotted);

/// Scalar text of a node, "" for null or non-scalars.
std::string scalar_text(const YAML::Node& node);

/// `node` as block-style YAML that PyYAML (YAML 1.1, what the CCL-Bench tools read cards with)
/// and yaml-cpp read back alike: a scalar stays plain only when both parsers see the same value
/// in it; anything else (a scalar quoted in its source, `=`, yes/no/on/off, `~`, 010, dates,
/// leading indicators, tabs, CR, control or non-ASCII characters) is double-quoted with
/// escapes. Aliases are written out expanded; comments and tags are not kept.
std::string emit_yaml(const YAML::Node& node);

/// `text` as a YAML scalar under emit_yaml's rule: plain when safe, else double-quoted.
std::string yaml_scalar_text(const std::string& text);

} // namespace harness
