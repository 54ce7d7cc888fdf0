#include "cli/commands.hpp"
#include "util/quote.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "workflows/catalog.hpp"

#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct ListOptions {
    std::string section; ///< empty: every section
    bool json = false;
    bool names = false;
};

int run_list(const ListOptions& options) {
    const Catalog catalog = read_catalog(harness_home());
    std::vector<std::string> sections = catalog_sections();
    if (!options.section.empty()) {
        catalog_names(catalog, options.section); // an unknown section is a usage error before any output
        sections = {options.section};
    }
    if (options.names) {
        for (const auto& section : sections) {
            for (const auto& name : catalog_names(catalog, section)) {
                std::cout << terminal_text(name) << "\n";
            }
        }
    } else if (options.json) {
        std::cout << catalog_to_json(catalog, sections).dump();
    } else {
        std::cout << format_catalog(catalog, sections);
    }
    return k_exit_ok;
}

} // namespace

void add_list(CLI::App& sub, Action& action) {
    auto options = std::make_shared<ListOptions>();
    sub.add_option("section", options->section, "clusters, frameworks, templates, metrics or workloads (default: all five)");
    sub.add_flag("--json", options->json, "print one JSON object with a list per section");
    sub.add_flag("--names", options->names, "print bare names, one per line (for shell completion)");
    sub.footer("clusters: every profile --cluster NAME can find, the user's ($XDG_CONFIG_HOME/ccl-harness/clusters,\n"
               "default ~/.config/ccl-harness/clusters) before the shipped ones, with scheduler, accelerator and file.\n"
               "frameworks: each framework with the targets it has templates for; templates: their files;\n"
               "metrics: what `ccl-harness metrics` computes.\n"
               "Examples:\n"
               "  ccl-harness list\n"
               "  ccl-harness list clusters --names");
    sub.callback([options, &action] { action = [options] { return run_list(*options); }; });
}

} // namespace harness::cli
