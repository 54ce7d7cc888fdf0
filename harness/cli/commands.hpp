#pragma once
// The subcommand table: one row per command, each registered from its own cmd_<name>.cpp.
#include <CLI/CLI.hpp>
#include <functional>

namespace harness::cli {

/// What a parsed subcommand runs; returns the process exit code.
using Action = std::function<int()>;

struct Command {
    const char* name;
    const char* description;
    void (*add)(CLI::App& sub, Action& action);
};

void add_validate(CLI::App& sub, Action& action);
void add_render(CLI::App& sub, Action& action);
void add_run(CLI::App& sub, Action& action);

inline const Command k_commands[] = {
    {"validate", "check workload cards (or cluster profiles) and report every problem with file:line:column", add_validate},
    {"render", "resolve a card against a cluster and write its launch scripts, configs and container spec", add_render},
    {"run", "render, execute on the target, follow to the end, and collect the traces into a run directory", add_run},
};

} // namespace harness::cli
