#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "plan/explain.hpp"
#include "util/error.hpp"
#include "util/home.hpp"

#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct ExplainOptions {
    std::string card;
    std::string cluster;
    std::vector<std::string> overrides;
    bool json = false;
    OverridePaths set_paths;
};

int run_explain(const ExplainOptions& options) {
    options.set_paths.check(options.overrides);
    const Explanation explanation = explain_card(options.card, options.overrides, options.cluster, harness_home());
    if (explanation.diagnostics.has_errors()) {
        std::cerr << explanation.diagnostics.format();
        return k_exit_usage;
    }
    if (g_verbosity != Verbosity::quiet) {
        std::cerr << explanation.diagnostics.format();
    }
    std::cout << (options.json ? explanation_to_json(explanation).dump() : format_explanation(explanation));
    return k_exit_ok;
}

} // namespace

void add_explain(CLI::App& sub, Action& action) {
    auto options = std::make_shared<ExplainOptions>();
    sub.add_option("card", options->card, "workload card")->required();
    add_cluster_option(sub, options->cluster, "launch.cluster, else from xpu_spec.model");
    add_override_options(sub, options->set_paths, "--set", options->overrides, "override a card field: PATH=VALUE (repeatable)");
    sub.add_flag("--json", options->json,
                 "print {target, cluster: {name, file, found, chosen_by}, values: [{field, value, origin: {kind, where, detail}}]}");
    sub.footer("Shows the plan render would use (plan.json's values) and, for each value, its origin: the card\n"
               "(file:line:col and field), a --set override, the cluster profile (file:line:col and key), a harness\n"
               "default (and its rule), or derived (from which values). Writes nothing; problems that would stop\n"
               "`render --strict` are printed as warnings.\n"
               "Exit status: 0, 2 for a card that does not validate or an unknown cluster.\n"
               "Examples:\n"
               "  ccl-harness explain workloads/tiny-ddp/tiny-ddp.yaml\n"
               "  ccl-harness explain card.yaml --cluster ./mine.yaml --set launch.steps=3 --json");
    sub.callback([options, &action] { action = [options] { return run_explain(*options); }; });
}

} // namespace harness::cli
