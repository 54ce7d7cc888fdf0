// ccl-harness: parses the command line, runs one subcommand, and turns errors into exit codes.
#include "cli/commands.hpp"
#include "util/error.hpp"
#include "version.hpp"

#include <fmt/format.h>
#include <iostream>

int main(int argc, char** argv) {
    using namespace harness;
    CLI::App app{"ccl-harness: render, run, trace and bundle CCL-Bench workloads reproducibly.\n"
                 "Start with `ccl-harness validate CARD` and `ccl-harness render CARD --out DIR`."};
    app.set_version_flag("--version", std::string(k_version));
    app.require_subcommand(1);
    cli::Action action;
    for (const auto& command : cli::k_commands) {
        CLI::App* sub = app.add_subcommand(command.name, command.description);
        command.add(*sub, action);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : k_exit_usage;
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
