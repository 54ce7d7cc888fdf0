#pragma once
// The one way YAML from outside is parsed: bounded before any tree is built (file size, nodes,
// aliases expanded, nesting, scalar mapping keys; see util/limits.hpp), so that a card, a
// profile or a bundle's card can never take the process down. Nothing here knows what a card is.
#include "util/fs.hpp"

#include <string>
#include <yaml-cpp/yaml.h>

namespace harness {

/// The first document of `text`, which claims to come from `display_name` (for messages). Past a
/// bound, or invalid, it is an input error (exit 2) at "display_name:line:col".
YAML::Node parse_yaml_bounded(const std::string& text, const std::string& display_name);

/// parse_yaml_bounded on the regular file `path`, refused before it is read when it is a
/// directory, not a regular file (a FIFO would block the read) or larger than the bound.
YAML::Node load_yaml_bounded(const fs::path& path);

} // namespace harness
