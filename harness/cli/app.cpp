#include "cli/app.hpp"

#include "util/error.hpp"
#include "util/home.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

#include <fmt/format.h>
#include <iostream>

namespace harness::cli {

namespace {

constexpr const char* k_global_group = "Global options";

// CLI11 shows a flag that sets false as `--no-pack{false}`; the user types `--no-pack`.
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
        std::string name = CLI::Formatter::make_option_name(opt, is_positional);
        for (std::size_t open = name.find('{'); open != std::string::npos; open = name.find('{', open)) {
            const std::size_t close = name.find('}', open);
            name.erase(open, close == std::string::npos ? std::string::npos : close - open + 1);
        }
        return name;
    }
};

const char* const k_start_here =
    "Start here (from the checkout, after .ci/setup):\n"
    "  ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml   # a real 2-rank job, traced, packed into a bundle\n"
    "  ccl-harness validate CARD                          # check a card, every problem with file:line:column\n"
    "  ccl-harness render CARD --out DIR                  # the launch scripts it would run\n"
    "Run 'ccl-harness help COMMAND' (or 'ccl-harness COMMAND --help') for a command's options;\n"
    "'ccl-harness completion bash|zsh|fish' prints a shell completion script.\n"
    "Exit status: 0 success, 1 failure, 2 usage or invalid input, 130 interrupted.";

const char* const k_global_footer =
    "Global options, before or after the command: -v/--verbose, -q/--quiet, --home DIR (see 'ccl-harness --help').";

// The visible or hidden subcommand called `name`, or null.
const CLI::App* find_command(const CLI::App& app, const std::string& name) {
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (sub->get_name() == name) {
            return sub;
        }
    }
    return nullptr;
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
        for (const std::string& name : opt->get_snames()) {
            names.push_back("-" + name);
        }
        for (const std::string& name : opt->get_lnames()) {
            names.push_back("--" + name);
        }
    }
    return names;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
    const std::string match = closest_match(word, candidates);
    return match.empty() ? std::string() : fmt::format("; did you mean {}?", enquote(match));
}

int usage_error(const std::string& message, const std::string& command) {
    std::cerr << fmt::format("ccl-harness: error: {}{}\n", command.empty() ? "" : command + ": ", message);
    std::cerr << (command.empty() ? std::string("run 'ccl-harness --help' for the list of commands\n")
                                  : fmt::format("run 'ccl-harness {} --help' for its options\n", command));
    return k_exit_usage;
}

int unknown_command(const CLI::App& app, const std::string& word) {
    std::cerr << fmt::format("ccl-harness: error: unknown command {}{}\n", enquote(word), did_you_mean(word, command_names(app)));
    std::cerr << "run 'ccl-harness --help' for the list of commands\n";
    return k_exit_usage;
}

// What CLI11 left over: an unknown option, an unknown command, or one argument too many. With
// fallthrough every leftover lands in the root App, whichever subcommand met it.
std::optional<int> check_leftovers(const CLI::App& app, const CLI::App* command) {
    const std::vector<std::string> left = app.remaining();
    if (left.empty()) {
        return std::nullopt;
    }
    const std::string& word = left.front();
    const std::string context = command == nullptr ? std::string() : command->get_name();
    if (word.size() > 1 && word[0] == '-') {
        const std::string option = word.substr(0, word.find('='));
        std::vector<std::string> candidates = option_names(app);
        if (command != nullptr) {
            const std::vector<std::string> own = option_names(*command);
            candidates.insert(candidates.end(), own.begin(), own.end());
        }
        return usage_error(fmt::format("unknown option {}{}", enquote(option), did_you_mean(option, candidates)), context);
    }
    if (command == nullptr) {
        return unknown_command(app, word);
    }
    return usage_error(fmt::format("unexpected argument {}", enquote(word)), context);
}

// CLI11's messages start with a capital ("Could not convert: ..."); ours are lowercase.
std::string lowercase_first(std::string message) {
    if (message.size() > 1 && std::isupper(static_cast<unsigned char>(message[0])) &&
        std::islower(static_cast<unsigned char>(message[1]))) {
        message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
    }
    return message;
}

// --version: the version and which build this is, then the libraries it carries (a bug report
// names both). The first line keeps the version as the second word.
std::string version_text() {
    std::vector<std::string> libraries;
    for (const LibraryVersion& library : library_versions()) {
        libraries.push_back(library.name + " " + library.version);
    }
    return fmt::format("ccl-harness {} ({})\nlibraries: {}", k_version, k_build_kind, join(libraries, ", "));
}

bool counted(const CLI::App& app, const char* name) {
    const CLI::Option* opt = app.get_option_no_throw(name);
    return opt != nullptr && opt->count() > 0;
}

// -v/-q into g_verbosity, --home into the home override. A command's own -q (render, validate,
// verify print less with it) counts as the global one.
std::optional<int> apply_global_options(const CLI::App& app, const CLI::App* command) {
    const bool verbose = counted(app, "--verbose");
    const bool quiet = counted(app, "--quiet") || (command != nullptr && counted(*command, "--quiet"));
    if (verbose && quiet) {
        return usage_error("-v/--verbose and -q/--quiet cannot be used together", "");
    }
    g_verbosity = verbose ? Verbosity::verbose : quiet ? Verbosity::quiet : Verbosity::normal;
    if (counted(app, "--home")) {
        set_home_override(app.get_option("--home")->as<std::string>());
    }
    if (verbose) {
        try {
            std::cerr << fmt::format("ccl-harness {}: harness home {}\n", k_version, harness_home().string());
        } catch (const HarnessError& e) {
            // Not every command needs the home (verify, metrics): the command says so if it does.
            std::cerr << fmt::format("ccl-harness {}: no harness home: {}\n", k_version, e.what());
        }
    }
    return std::nullopt;
}

} // namespace

std::vector<std::string> command_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (!sub->get_group().empty()) {
            names.push_back(sub->get_name());
        }
    }
    return names;
}

void add_help(CLI::App& sub, Action& action) {
    auto command = std::make_shared<std::string>();
    sub.add_option("command", *command, "the command to describe (default: all of them)")->type_name("COMMAND");
    const CLI::App* app = sub.get_parent();
    sub.callback([app, command, &action] {
        action = [app, command] {
            if (command->empty()) {
                // Not app->help(): that describes the selected subcommand, `help` itself.
                std::cout << app->get_formatter()->make_help(app, app->get_name(), CLI::AppFormatMode::Normal);
                return int{k_exit_ok};
            }
            const CLI::App* target = find_command(*app, *command);
            if (target == nullptr) {
                return unknown_command(*app, *command);
            }
            std::cout << target->help(app->get_name());
            return int{k_exit_ok};
        };
    });
}

std::unique_ptr<CLI::App> make_app(Action& action) {
    auto app = std::make_unique<CLI::App>("ccl-harness: render, run, trace and bundle CCL-Bench workloads reproducibly.",
                                          "ccl-harness");
    auto formatter = std::make_shared<HelpFormatter>();
    formatter->label("SUBCOMMAND", "COMMAND");
    app->formatter(formatter);
    // Inherited by every subcommand added below: options it does not know go to the root (the
    // global ones), and leftovers are kept for parse_command_line's "did you mean".
    app->fallthrough();
    app->allow_extras();
    app->group("Commands");
    for (const Command& command : k_commands) {
        CLI::App* sub = app->add_subcommand(command.name, command.description);
        command.add(*sub, action);
        sub->footer(sub->get_footer().empty() ? std::string(k_global_footer) : sub->get_footer() + "\n" + k_global_footer);
    }
    app->require_subcommand(0, 1);
    app->get_help_ptr()->group(k_global_group);
    app->set_version_flag("--version", version_text)->group(k_global_group);
    app->add_flag("-v,--verbose", "print more: where the harness home was found, on stderr, before the command runs")
        ->group(k_global_group);
    app->add_flag("-q,--quiet", "no progress lines or rank output: results, warnings and errors only")->group(k_global_group);
    app->add_option("--home", "where templates/, clusters/, containers/ and workloads/ are (default: $CCL_HARNESS_HOME, "
                              "else the installed or source copy)")
        ->type_name("DIR")
        ->group(k_global_group);
    app->footer(k_start_here);
    return app;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
    if (argc <= 1) {
        std::cout << app.help();
        return k_exit_ok;
    }
    const auto selected = [&app]() -> const CLI::App* {
        const std::vector<CLI::App*> parsed = app.get_subcommands();
        return parsed.empty() ? nullptr : parsed.front();
    };
    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e); // --help, --version: printed on stdout
    } catch (const CLI::ParseError& e) {
        if (auto code = check_leftovers(app, selected())) {
            return code;
        }
        const CLI::App* command = selected();
        return usage_error(lowercase_first(e.what()), command == nullptr ? "" : command->get_name());
    }
    const CLI::App* command = selected();
    if (auto code = check_leftovers(app, command)) {
        return code;
    }
    if (command == nullptr) {
        return usage_error("no command given", "");
    }
    return apply_global_options(app, command);
}

} // namespace harness::cli
