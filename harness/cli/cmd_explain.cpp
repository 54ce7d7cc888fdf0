#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "card/user_defaults.hpp"
#include "card/yaml_document.hpp"
#include "plan/explain.hpp"
#include "plan/explain_fix.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
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
    bool fix = false;
    OverridePaths set_paths;
};

/// `entries` as one nested launch: mapping, each leaf after a comment with the problem it answers.
std::string launch_block(const std::vector<FixEntry>& entries) {
    std::string out;
    std::vector<std::string> open; // the mapping keys printed so far, outermost first
    for (const FixEntry& entry : entries) {
        const std::vector<std::string> parts = split(entry.field, '.');
        std::size_t shared = 0;
        while (shared < open.size() && shared + 1 < parts.size() && open[shared] == parts[shared]) {
            ++shared;
        }
        open.resize(shared);
        for (std::size_t i = shared; i + 1 < parts.size(); ++i) {
            out += fmt::format("{}{}:\n", std::string(2 * i, ' '), parts[i]);
            open.push_back(parts[i]);
        }
        const std::string indent(2 * (parts.size() - 1), ' ');
        out += fmt::format("{}# {}\n{}{}: {}\n", indent, terminal_text(entry.reason), indent, parts.back(),
                           yaml_scalar_text(entry.placeholder));
    }
    return out;
}

int run_fix(const ExplainOptions& options) {
    const FixSuggestion fix = suggest_fix(options.card, options.overrides, options.cluster, harness_home());
    std::vector<FixEntry> site;
    std::vector<FixEntry> card;
    for (const FixEntry& entry : fix.launch) {
        (entry.site ? site : card).push_back(entry);
    }
    const std::string where = fix.target.empty() ? std::string() : " on " + fix.target;
    std::string out;
    if (fix.launch.empty() && fix.card_problems.empty()) {
        out = fmt::format("# {} runs as it is{}: nothing to add.\n", fix.card, where);
    }
    if (!site.empty()) {
        const fs::path defaults = user_defaults_path();
        out += fmt::format("# Site facts{}, the same for every card: once in {} (or in the card's launch:).\n{}", where,
                           defaults.empty() ? std::string("~/.config/ccl-harness/defaults.yaml") : defaults.string(),
                           launch_block(site));
    }
    if (!card.empty()) {
        out += fmt::format("{}# For {}{}: in its launch: section. Replace each <...>.\n{}", out.empty() ? "" : "\n", fix.card, where,
                           launch_block(card));
    }
    if (!fix.card_problems.empty()) {
        out += fmt::format("{}# Not fixed by launch: the card's own problems, at their lines:\n", out.empty() ? "" : "\n");
        for (const Diagnostic& problem : fix.card_problems) {
            out += "#   " + terminal_text(problem.text()) + "\n";
        }
    }
    std::cout << out;
    return fix.card_problems.empty() ? k_exit_ok : k_exit_failure;
}

int run_explain(const ExplainOptions& options) {
    options.set_paths.check(options.overrides);
    if (options.fix) {
        return run_fix(options);
    }
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
    sub.add_flag(
        "--fix", options->fix,
        "print, as YAML to paste, the launch: fields the card lacks to run here, as validate's strict check finds them (site facts "
        "apart, for defaults.yaml), and list the problems only the card itself can fix");
    sub.add_flag("--json", options->json,
                 "print {target, cluster: {name, file, found, chosen_by}, values: [{field, value, origin: {kind, where, detail}}]}");
    sub.footer("Shows the plan render would use (plan.json's values) and, for each value, its origin: the card\n"
               "(file:line:col and field), a --set override, the cluster profile (file:line:col and key), a harness\n"
               "default (and its rule), or derived (from which values). Writes nothing; problems that would stop\n"
               "`render --strict` are printed as warnings.\n"
               "--fix prints the launch: block an archived card needs instead, each field after the problem it\n"
               "answers; exit 1 when the card also has problems only its own fields can fix.\n"
               "Exit status: 0, 2 for a card that does not validate or an unknown cluster.\n"
               "Examples:\n"
               "  ccl-harness explain workloads/tiny-ddp/tiny-ddp.yaml\n"
               "  ccl-harness explain card.yaml --cluster ./mine.yaml --set launch.steps=3 --json\n"
               "  ccl-harness explain --fix trace_collection/ROW/ROW.yaml");
    sub.callback([options, &action] { action = [options] { return run_explain(*options); }; });
}

} // namespace harness::cli
