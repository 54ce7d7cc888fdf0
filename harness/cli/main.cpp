// ccl-harness: parses the command line, runs one subcommand, and turns errors into exit codes.
#include "cli/app.hpp"
#include "cli/stream_watch.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <iostream>
#include <string_view>

namespace {

/// True when the command was given --json: as parsed, or, where parsing failed, as written
/// before any `--`.
bool json_wanted(const CLI::App& app, int argc, char** argv) {
    for (const CLI::App* sub : app.get_subcommands()) {
        const CLI::Option* json = sub->get_option_no_throw("--json");
        if (json != nullptr && json->count() > 0) {
            return true;
        }
    }
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word == "--") {
            break;
        }
        if (word == "--json") {
            return true;
        }
    }
    return false;
}

int run(CLI::App& app, const harness::cli::Action& action, int argc, char** argv) {
    using namespace harness;
    if (const std::optional<int> code = cli::parse_command_line(app, argc, argv)) {
        return *code;
    }
    try {
        return action();
    } catch (const HarnessError& e) {
        // Messages quote names from bundles, traces and servers: escaped, so none can redraw the
        // terminal.
        std::cerr << fmt::format("ccl-harness: error: {}\n", terminal_text(e.what(), true));
        return e.code();
    } catch (const std::exception& e) {
        std::cerr << fmt::format("ccl-harness: error: {}\n", terminal_text(e.what(), true));
        return k_exit_failure;
    }
}

} // namespace

int main(int argc, char** argv) {
    using namespace harness;
    cli::Action action;
    const std::unique_ptr<CLI::App> app = cli::make_app(action);
    cli::StreamWatch out(std::cout);
    cli::StreamWatch err(std::cerr);
    const int code = run(*app, action, argc, argv);
    // A failed command given --json answers on stdout whatever path it failed on, unless it
    // printed its own document: a script reading stdout never gets an empty stream.
    if (code != k_exit_ok && out.bytes() == 0 && json_wanted(*app, argc, argv)) {
        Json document = Json::object();
        document["error"] = err.errors().empty() ? fmt::format("failed with exit status {} (see stderr)", code)
                                                 : join(err.errors(), "\n");
        document["exit"] = code;
        std::cout << document.dump() << std::flush;
    }
    return code;
}
