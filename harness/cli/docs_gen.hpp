#pragma once
// Shell completions and the man page, generated from the CLI11 App that parses the command line
// (see cli/app.hpp): every command, option and description comes from there, none is written
// twice, so what they offer is what the parser accepts.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace harness::cli {

/// What an option's value (or a positional) is, for completion.
enum class ValueKind {
    none,    ///< a flag: takes no value
    file,    ///< a path: cards, bundles, run directories, output files
    cluster, ///< a cluster profile name (--cluster): `ccl-harness list clusters --names`
    command, ///< a ccl-harness command name (help COMMAND)
    choice,  ///< one of `choices` (a CLI11 IsMember check)
    text,    ///< anything else (numbers, PATH=VALUE, URLs): nothing to complete
};

struct OptionDoc {
    std::vector<std::string> names; ///< "-q", "--quiet"; a positional has its one name, "card"
    std::string value;              ///< the value's label ("TEXT", "DIR"), empty for a flag
    std::string description;
    ValueKind kind = ValueKind::none;
    std::vector<std::string> choices; ///< for ValueKind::choice
    bool positional = false;
    bool required = false;
    bool repeatable = false; ///< a vector: the option may be given again, the positional takes many
};

struct CommandDoc {
    std::string name;
    std::string description;
    std::string footer;             ///< the --help footer: details, exit status, examples
    std::vector<OptionDoc> options; ///< without -h/--help; positionals last
};

struct AppDoc {
    std::string name;
    std::string description;
    std::vector<OptionDoc> global_options; ///< the root App's options, -h/--help included
    std::vector<CommandDoc> commands;      ///< visible commands only, in help order
};

/// Reads commands, options and descriptions off a built App (see make_app).
AppDoc describe_app(const CLI::App& app);

/// The usage line of one command: "ccl-harness run [OPTIONS] CARD".
std::string command_synopsis(const AppDoc& app, const CommandDoc& command);

/// A bash completion script defining _ccl_harness, for `complete -F`.
std::string bash_completion(const AppDoc& app);

/// A zsh completion function (#compdef ccl-harness), for $fpath or for `source`.
std::string zsh_completion(const AppDoc& app);

/// fish `complete` commands, for vendor_completions.d or for `source`.
std::string fish_completion(const AppDoc& app);

/// The roff man page ccl-harness(1); `date` (YYYY-MM-DD, not escaped) goes in its header, which stays empty
/// without one: the output depends on nothing but the App.
std::string man_page(const AppDoc& app, const std::string& version, const std::string& date);

} // namespace harness::cli
