#pragma once
// Options that every command loading a card spells the same way: --set (sweep: --vary) with
// --allow-new, and --cluster. One owner, so their help and the unknown-path rule cannot drift.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace harness::cli {

/// What the command must check before it runs: the assignments given with `flag`.
struct OverridePaths {
    std::string flag;
    bool allow_new = false;
    /// Refuses (exit 2, with a "did you mean") a path the card schema does not know, unless
    /// --allow-new was given.
    void check(const std::vector<std::string>& assignments) const;
};

/// `flag` (--set or --vary) into `values`, repeatable, and --allow-new into `paths` (which must
/// outlive parsing: a member of the command's shared options).
void add_override_options(CLI::App& sub, OverridePaths& paths, const std::string& flag, std::vector<std::string>& values,
                          const std::string& description);

/// --results DIR; without it, `results:` of the user's defaults.yaml, else ./results
/// (apply_results_default, once the command line is parsed).
CLI::Option* add_results_option(CLI::App& sub, std::filesystem::path& results, const std::string& description);
/// Sets `results` to the default when `option` was not given.
void apply_results_default(const CLI::Option* option, std::filesystem::path& results);

/// --cluster NAME|FILE; `default_text` says what is used without it.
void add_cluster_option(CLI::App& sub, std::string& cluster, const std::string& default_text);

} // namespace harness::cli
