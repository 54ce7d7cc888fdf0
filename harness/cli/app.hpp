#pragma once
// The command line as one CLI11 App: the subcommand table, the global options, help and usage
// errors. main parses with it; `completion` and `manpage` describe the same App, so the shell
// completions and the man page cannot drift from what the parser accepts.
#include "cli/commands.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace harness::cli {

/// The whole command line: one subcommand per row of k_commands and the global options
/// (-v/--verbose, -q/--quiet, --home DIR, --version), accepted before or after the subcommand.
/// A parsed subcommand's callback stores what it runs in `action`, which must outlive the App.
std::unique_ptr<CLI::App> make_app(Action& action);

/// Parses argv into `app`. Returns an exit code when the command line alone decides the outcome:
/// help or --version (0, printed on stdout), a usage error (2, printed on stderr as
/// `ccl-harness: error: ...` with a pointer to --help). Otherwise returns nothing: the global
/// options are applied (g_verbosity, the --home override) and `action` holds the command to run.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

/// The visible subcommands' names, in help order (hidden ones, like `manpage`, left out).
std::vector<std::string> command_names(const CLI::App& app);

} // namespace harness::cli
