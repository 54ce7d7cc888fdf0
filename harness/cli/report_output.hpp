#pragma once
// Where the reporting commands (run, render, sweep, reproduce) send what they print. With
// --json, stdout carries exactly one JSON document, so human progress and rank output move to
// stderr; with -q they go nowhere (the logs on disk still have them).
#include "cli/commands.hpp"
#include "util/json.hpp"

#include <fmt/format.h>
#include <iostream>
#include <string>
#include <vector>

namespace harness::cli {

/// --json of one command; -q is global (g_verbosity), given before or after the command.
struct ReportFlags {
    bool json = false;
};

/// Adds --json; its keys are listed in the command's footer.
inline void add_report_flags(CLI::App& sub, ReportFlags& flags) {
    sub.add_flag("--json", flags.json, "print one JSON object on stdout at the end (keys below); progress goes to stderr");
}

/// -q: no progress and no rank output (the logs on disk keep it): errors, warnings and the result only.
inline bool quiet_wanted() { return g_verbosity == Verbosity::quiet; }

/// The stream for progress: stdout, stderr with --json, a stream that drops everything with -q.
inline std::ostream& progress_stream(bool json, bool quiet) {
    // No buffer: every write fails silently and costs nothing.
    static std::ostream discard(nullptr);
    if (quiet) {
        return discard;
    }
    return json ? std::cerr : std::cout;
}

/// The stream for the human result lines: stdout, or stderr with --json (stdout is the JSON's).
inline std::ostream& result_stream(bool json) { return json ? std::cerr : std::cout; }

/// Warnings the library also streamed as progress: shown on stderr when progress was not.
inline void print_dropped_warnings(const std::vector<std::string>& warnings, bool quiet) {
    if (!quiet) {
        return;
    }
    for (const auto& warning : warnings) {
        std::cerr << fmt::format("ccl-harness: warning: {}\n", warning);
    }
}

/// The one JSON document of a --json command.
inline void print_json(const Json& json) { std::cout << json.dump() << std::flush; }

/// A command's outcome: its summary lines on stdout, or on stderr beside the JSON document with
/// --json (nowhere with --json -q), then the document.
inline void print_outcome(bool json, bool quiet, const std::string& summary, const Json& document) {
    if (!json || !quiet) {
        result_stream(json) << summary;
    }
    if (json) {
        print_json(document);
    }
}

} // namespace harness::cli
