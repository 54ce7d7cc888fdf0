#include "cli/card_options.hpp"

#include "card/card.hpp"

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

void add_cluster_option(CLI::App& sub, std::string& cluster, const std::string& default_text) {
    sub.add_option("--cluster", cluster,
                   "cluster profile: a name (`ccl-harness list clusters`; yours in ~/.config/ccl-harness/clusters/) or a "
                   "profile file, e.g. ./mine.yaml (default: " +
                       default_text + ")")
        ->type_name("NAME|FILE");
}

} // namespace harness::cli
