// ccl-harness: parses the command line, runs one subcommand, and turns errors into exit codes.
#include "cli/app.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"

#include <fmt/format.h>
#include <iostream>

int main(int argc, char** argv) {
    using namespace harness;
    cli::Action action;
    const std::unique_ptr<CLI::App> app = cli::make_app(action);
    if (const std::optional<int> code = cli::parse_command_line(*app, argc, argv)) {
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
