#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "plan/validate.hpp"
#include "workflows/validate_render.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "util/quote.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct ValidateCommandOptions {
    std::vector<std::string> files;
    ValidateOptions validate;
    bool json = false;
    bool quiet = false;
    OverridePaths set_paths;
};

int run_validate(const ValidateCommandOptions& options) {
    if (!options.validate.profile) {
        options.set_paths.check(options.validate.overrides);
    }
    std::vector<ValidationResult> results;
    std::size_t failed = 0;
    ValidateOptions validate = options.validate;
    validate.home = harness_home();
    for (const auto& file : options.files) {
        results.push_back(validate_and_render(file, validate));
        const ValidationResult& result = results.back();
        failed += result.diagnostics.has_errors() ? 1U : 0U;
        if (options.json) {
            continue;
        }
        // A card may hold any bytes (a value with ESC or CR): its diagnostics quote them escaped.
        std::cerr << terminal_text(result.diagnostics.format(!options.quiet && g_verbosity != Verbosity::quiet), true);
        const auto& diags = result.diagnostics;
        std::cout << fmt::format("{}: {}{}\n", terminal_text(result.file), diags.has_errors() ? "invalid" : "valid",
                                 diags.items().empty() ? ""
                                                       : fmt::format(" ({} error{}, {} warning{})", diags.error_count(),
                                                                     diags.error_count() == 1 ? "" : "s", diags.warning_count(),
                                                                     diags.warning_count() == 1 ? "" : "s"));
    }
    if (options.json) {
        std::cout << validation_to_json(results).dump();
    }
    return failed > 0 ? k_exit_usage : k_exit_ok;
}

} // namespace

void add_validate(CLI::App& sub, Action& action) {
    auto options = std::make_shared<ValidateCommandOptions>();
    sub.add_option("files", options->files, "workload cards (or, with --profile, cluster profiles)")->required();
    sub.add_flag("--strict", options->validate.strict,
                 "also check the card can run: tp·pp·cp·dp_replicate·dp_shard = total_count, whole nodes, "
                 "ep divides dp×tp, batch divides, accelerator matches the target, launch: has what the target needs, "
                 "and it renders (in memory)");
    add_cluster_option(sub, options->validate.cluster, "for --strict: launch.cluster, else from xpu_spec.model");
    add_override_options(sub, options->set_paths, "--set", options->validate.overrides,
                         "override a card field before checking: PATH=VALUE (repeatable)");
    sub.add_flag("--profile", options->validate.profile, "the files are cluster profiles (clusters/*.yaml)");
    sub.add_flag("--json", options->json, "print one JSON array of results on stdout");
    sub.add_flag("-q,--quiet", options->quiet, "print errors only, not warnings");
    sub.footer("Exit status: 0 when every file is valid (warnings allowed), 2 when any has an error.\n"
               "Examples:\n"
               "  ccl-harness validate card.yaml\n"
               "  ccl-harness validate --strict --set Model-executor.model_plan_parallelization.tp=8 card.yaml\n"
               "  ccl-harness validate --profile clusters/*.yaml");
    sub.callback([options, &action] { action = [options] { return run_validate(*options); }; });
}

} // namespace harness::cli
