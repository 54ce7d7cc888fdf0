// `completion SHELL` and the hidden `manpage`: both print what docs_gen makes of the App they are
// part of, so they describe exactly the command line that parses them.
#include "cli/commands.hpp"
#include "cli/docs_gen.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

void add_completion(CLI::App& sub, Action& action) {
    auto shell = std::make_shared<std::string>();
    sub.add_option("shell", *shell, "the shell to complete for")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
    sub.footer("Prints the script on stdout. Installed copies are loaded automatically; to try one now:\n"
               "  source <(ccl-harness completion bash)                  # bash\n"
               "  source <(ccl-harness completion zsh)                   # zsh, after compinit\n"
               "  ccl-harness completion fish | source                   # fish\n"
               "To keep one: write it to ~/.local/share/bash-completion/completions/ccl-harness (bash),\n"
               "a directory in $fpath as _ccl-harness (zsh) or ~/.config/fish/completions/ccl-harness.fish (fish).\n"
               "--cluster completes the names `ccl-harness list clusters --names` prints.");
    const CLI::App* app = sub.get_parent();
    sub.callback([app, shell, &action] {
        action = [app, shell] {
            const AppDoc doc = describe_app(*app);
            std::cout << (*shell == "bash" ? bash_completion(doc) : *shell == "zsh" ? zsh_completion(doc) : fish_completion(doc));
            return int{k_exit_ok};
        };
    });
}

void add_manpage(CLI::App& sub, Action& action) {
    // Hidden from --help: the build runs it to write man/ccl-harness.1.
    sub.group("");
    auto date = std::make_shared<std::string>();
    sub.add_option("--date", *date, "the date in the page's header, YYYY-MM-DD (default: none)");
    const CLI::App* app = sub.get_parent();
    sub.callback([app, date, &action] {
        action = [app, date] {
            if (date->find_first_not_of("0123456789-") != std::string::npos) {
                throw input_error(fmt::format("--date {}: expected YYYY-MM-DD", enquote(*date)));
            }
            std::cout << man_page(describe_app(*app), k_version, *date);
            return int{k_exit_ok};
        };
    });
}

} // namespace harness::cli
