#include "cli/card_options.hpp"

#include "card/card.hpp"
#include "card/user_defaults.hpp"

namespace harness::cli {

void OverridePaths::check(const std::vector<std::string>& assignments) const {
    if (!allow_new) {
        check_card_paths(assignments, flag);
    }
}

void add_override_options(CLI::App& sub, OverridePaths& paths, const std::string& flag, std::vector<std::string>& values,
                          const std::string& description) {
    paths.flag = flag;
    sub.add_option(flag, values, description);
    sub.add_flag("--allow-new", paths.allow_new,
                 "accept " + flag + " paths the card schema does not know (a new field); by default they are errors");
}

CLI::Option* add_results_option(CLI::App& sub, std::filesystem::path& results, const std::string& description) {
    return sub.add_option("--results", results, description + " (default: results: in your defaults.yaml, else ./results)")
        ->type_name("DIR");
}

void apply_results_default(const CLI::Option* option, std::filesystem::path& results) {
    if (option->count() != 0) {
        return;
    }
    const UserDefaults defaults = load_user_defaults();
    results = defaults.results.empty() ? std::filesystem::path("results") : defaults.results;
}

void add_cluster_option(CLI::App& sub, std::string& cluster, const std::string& default_text) {
    sub.add_option("--cluster", cluster,
                   "cluster profile: a name (`ccl-harness list clusters`; yours in ~/.config/ccl-harness/clusters/) or a "
                   "profile file, e.g. ./mine.yaml (default: " +
                       default_text + ")")
        ->type_name("NAME|FILE");
}

} // namespace harness::cli
