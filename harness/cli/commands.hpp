#pragma once
// The subcommand table: one row per command, each registered from its own cmd_<name>.cpp.
#include <CLI/CLI.hpp>
#include <functional>

namespace harness::cli {

/// -q / -v, global flags set while parsing, before any action runs. Only cli/ reads it: the
/// library returns data and cli/ decides how much of it to print.
enum class Verbosity { quiet, normal, verbose };
inline Verbosity g_verbosity = Verbosity::normal;

/// What a parsed subcommand runs; returns the process exit code.
using Action = std::function<int()>;

struct Command {
    const char* name;
    const char* description;
    void (*add)(CLI::App& sub, Action& action);
};

void add_validate(CLI::App& sub, Action& action);
void add_render(CLI::App& sub, Action& action);
void add_build(CLI::App& sub, Action& action);
void add_run(CLI::App& sub, Action& action);
void add_attach(CLI::App& sub, Action& action);
void add_pack(CLI::App& sub, Action& action);
void add_ingest(CLI::App& sub, Action& action);
void add_verify(CLI::App& sub, Action& action);
void add_reproduce(CLI::App& sub, Action& action);
void add_sweep(CLI::App& sub, Action& action);
void add_compare(CLI::App& sub, Action& action);
void add_submit(CLI::App& sub, Action& action);
void add_status(CLI::App& sub, Action& action);
void add_results(CLI::App& sub, Action& action);
void add_eval(CLI::App& sub, Action& action);
void add_metrics(CLI::App& sub, Action& action);
void add_help(CLI::App& sub, Action& action);       // cli/app.cpp
void add_completion(CLI::App& sub, Action& action); // cli/cmd_completion.cpp
void add_manpage(CLI::App& sub, Action& action);    // cli/cmd_completion.cpp (hidden)
void add_schema(CLI::App& sub, Action& action);
void add_list(CLI::App& sub, Action& action);
void add_explain(CLI::App& sub, Action& action);
void add_adopt(CLI::App& sub, Action& action);

inline const Command k_commands[] = {
    {"validate", "check workload cards (or cluster profiles) and report every problem with file:line:column", add_validate},
    {"explain", "show the plan a card resolves to and where every value comes from: card, --set, cluster profile, default, derived",
     add_explain},
    {"render", "resolve a card against a cluster and write its launch scripts, configs and container spec", add_render},
    {"build", "render a card's Containerfile and build (or reuse) its image with podman, on a base made from Debian packages",
     add_build},
    {"run", "render, execute on the target, follow to the end, collect the traces and pack a bundle", add_run},
    {"attach", "follow a detached Slurm run (run --detach, a dropped session, a dead harness) to its end, collect and pack",
     add_attach},
    {"pack", "pack a run directory into a verifiable, deterministic <name>.tar.zst bundle", add_pack},
    {"adopt", "complete an archived card from the scripts its contributor ran (parsed, never run): launch: block, silent fields",
     add_adopt},
    {"ingest", "make a run directory and verified bundle from a job the harness did not run (hand-run, archived)", add_ingest},
    {"verify", "check a bundle: checksums, card, traces, rank count, provenance pins (exit 0 valid, 1 invalid, 2 unusable)",
     add_verify},
    {"reproduce", "run a bundle again: pinned sources, re-rendered scripts compared byte for byte with the bundled ones",
     add_reproduce},
    {"metrics", "compute the CCL-Bench metrics from a run's traces (default classifier, or --reference bug for bug)", add_metrics},
    {"sweep", "run a card over a matrix of field values (cross product or --zip), resumable; one failed point never stops the others",
     add_sweep},
    {"compare", "put runs or bundles side by side: card differences, metrics, ranking; --html for a self-contained page with charts",
     add_compare},
    {"submit", "verify a bundle and upload it to a CCL-Bench upload server", add_submit},
    {"status", "list runs and sweeps under a results directory with state, duration, bundle and headline metrics", add_status},
    {"results", "index results directories into an SQLite store and query runs by card field, state, date and metric", add_results},
    {"eval", "one trial of a tuning loop: a card with a config run (or reused) to a verified bundle and scored; --json for the loop",
     add_eval},
    {"list", "list what exists: cluster profiles (shipped and yours), frameworks x targets, templates, metrics", add_list},
    {"schema", "print the JSON Schema of workload cards (or cluster profiles) for editors and other tools", add_schema},
    {"help", "show the help of ccl-harness or of one command (as --help does)", add_help},
    {"completion", "print a shell completion script for bash, zsh or fish, generated from this command table", add_completion},
    {"manpage", "print the man page ccl-harness(1) in roff, generated from this command table", add_manpage},
};

} // namespace harness::cli
