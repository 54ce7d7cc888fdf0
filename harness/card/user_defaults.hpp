#pragma once
// A user's own defaults: the site facts every card would otherwise repeat (account, QOS, the
// TPU project, the weight cache, where results go), from one file and from sbatch's input
// environment. They fill only what a card leaves unset: a card's value, or a --set, always wins.
//
// Precedence, first wins: --set, the card, $SBATCH_ACCOUNT and friends, defaults.yaml, the
// cluster profile, the harness's built-in default. explain shows which gave each value.
#include "card/yaml_document.hpp"
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

/// sbatch's input environment variables the plan reads (`man sbatch`, INPUT ENVIRONMENT
/// VARIABLES), each with the card field it stands for. sbatch lets them beat a script's #SBATCH
/// lines, so the harness reads them here and keeps them out of sbatch's own environment.
const std::vector<std::pair<std::string, std::string>>& sbatch_input_variables();

struct UserDefaults {
    fs::path file;                   ///< the file read; empty when there is none
    std::optional<YamlDocument> doc; ///< its content, for positions
    fs::path results;                ///< `results:`, relative to the file's directory; empty when unset
};

/// The defaults file: $CCL_HARNESS_DEFAULTS when set (empty or "none": no file), else
/// $XDG_CONFIG_HOME/ccl-harness/defaults.yaml (or ~/.config/...). The path is returned whether
/// or not the file exists; empty when there is nowhere to look.
fs::path user_defaults_path();

/// Reads user_defaults_path(); no file is no defaults. A file that is not valid YAML, is not a
/// mapping, or has a key other than `launch:` and `results:` is an input error at its line.
UserDefaults load_user_defaults();

/// Fills `doc` (a card, after its --set overrides) where it has no value: each $SBATCH_* of
/// sbatch_input_variables() that is set and non-empty, then every leaf of the defaults' `launch:`
/// mapping (a list, such as launch.args, is one leaf). Each filled value's location is the
/// variable or the defaults file's line, so messages and explain point there.
void apply_user_defaults(YamlDocument& doc, const UserDefaults& defaults);

} // namespace harness
