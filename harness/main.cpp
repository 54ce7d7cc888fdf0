// ccl-harness: parses the command line, runs one subcommand, and turns errors into exit codes.
#include "cli/app.hpp"
#include "util/error.hpp"

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
        std::cerr << fmt::format("ccl-harness: error: {}\n", e.what());
        return e.code();
    } catch (const std::exception& e) {
        std::cerr << fmt::format("ccl-harness: error: {}\n", e.what());
        return k_exit_failure;
    }
}
