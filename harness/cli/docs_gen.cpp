#include "cli/docs_gen.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <initializer_list>

namespace harness::cli {

namespace {

std::string upper(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return text;
}

// CLI11 appends a check's description to the type name: "TEXT:{bash,zsh,fish}" for IsMember.
std::vector<std::string> choices_of(const std::string& type_name) {
    const std::size_t open = type_name.find(":{");
    const std::size_t close = type_name.rfind('}');
    std::vector<std::string> choices;
    if (open == std::string::npos || close == std::string::npos || close < open) {
        return choices;
    }
    const std::string list = type_name.substr(open + 2, close - open - 2);
    for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        choices.push_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return choices;
}

ValueKind kind_of(const CLI::Option& opt, const std::string& label, const std::vector<std::string>& choices) {
    if (opt.get_expected_max() == 0) {
        return ValueKind::none;
    }
    const std::vector<std::string>& lnames = opt.get_lnames();
    if (std::find(lnames.begin(), lnames.end(), "cluster") != lnames.end()) {
        return ValueKind::cluster;
    }
    if (label == "COMMAND") {
        return ValueKind::command;
    }
    if (!choices.empty()) {
        return ValueKind::choice;
    }
    if (label == "INT" || label == "UINT" || label == "FLOAT" || label == "NUMBER") {
        return ValueKind::text;
    }
    // --set PATH=VALUE, --vary, --to URL, --group, --description, --metric: a word, not a file.
    static const char* const k_words[] = {"set", "vary", "to", "group", "description", "metric", "grace", "threads"};
    for (const char* word : k_words) {
        if (std::find(lnames.begin(), lnames.end(), word) != lnames.end()) {
            return ValueKind::text;
        }
    }
    return ValueKind::file;
}

OptionDoc describe_option(const CLI::Option& opt) {
    OptionDoc doc;
    doc.positional = opt.get_positional();
    if (doc.positional) {
        doc.names.push_back(opt.get_name(true, false));
    }
    for (const std::string& name : opt.get_snames()) {
        doc.names.push_back("-" + name);
    }
    for (const std::string& name : opt.get_lnames()) {
        doc.names.push_back("--" + name);
    }
    const std::string type_name = opt.get_type_name();
    doc.choices = choices_of(type_name);
    const std::string label = type_name.substr(0, type_name.find(':'));
    doc.kind = kind_of(opt, label, doc.choices);
    if (doc.kind != ValueKind::none) {
        doc.value = doc.positional ? upper(doc.names.front()) : label;
    }
    doc.description = opt.get_description();
    doc.required = opt.get_required();
    doc.repeatable = opt.get_expected_max() >= CLI::detail::expected_max_vector_size;
    return doc;
}

// The options a user can see and type: hidden ones (group "") and -h/--help left out.
std::vector<OptionDoc> describe_options(const CLI::App& app, bool with_help) {
    std::vector<OptionDoc> options;
    std::vector<OptionDoc> positionals;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->get_group().empty() || (!with_help && opt == app.get_help_ptr())) {
            continue;
        }
        (opt->get_positional() ? positionals : options).push_back(describe_option(*opt));
    }
    options.insert(options.end(), positionals.begin(), positionals.end());
    return options;
}

std::string join(const std::vector<std::string>& words, const char* separator = " ") {
    std::string out;
    for (const std::string& word : words) {
        out += (out.empty() ? "" : separator) + word;
    }
    return out;
}

// Descriptions go into scripts on one line.
std::string one_line(const std::string& text) {
    std::string out = text;
    std::replace(out.begin(), out.end(), '\n', ' ');
    return out;
}

// ---- bash ----------------------------------------------------------------------------------

// The option names of `options` whose value is of the kinds asked for.
std::string names_taking(const std::vector<OptionDoc>& options, std::initializer_list<ValueKind> kinds) {
    std::vector<std::string> names;
    for (const OptionDoc& opt : options) {
        if (!opt.positional && std::find(kinds.begin(), kinds.end(), opt.kind) != kinds.end()) {
            names.insert(names.end(), opt.names.begin(), opt.names.end());
        }
    }
    return join(names);
}

std::string option_words(const std::vector<OptionDoc>& options) {
    std::vector<std::string> names;
    for (const OptionDoc& opt : options) {
        if (!opt.positional) {
            names.insert(names.end(), opt.names.begin(), opt.names.end());
        }
    }
    return join(names);
}

// What a command's positional completes to: "files", a word list, or "" for nothing.
std::string positional_words(const AppDoc& app, const CommandDoc& command) {
    for (const OptionDoc& opt : command.options) {
        if (!opt.positional) {
            continue;
        }
        switch (opt.kind) {
        case ValueKind::file: return "files";
        case ValueKind::choice: return join(opt.choices);
        case ValueKind::command: {
            std::vector<std::string> names;
            for (const CommandDoc& other : app.commands) {
                names.push_back(other.name);
            }
            return join(names);
        }
        case ValueKind::cluster: return "clusters";
        case ValueKind::none:
        case ValueKind::text: break;
        }
    }
    return "";
}

// ---- zsh -----------------------------------------------------------------------------------

// Text inside a single-quoted zsh word, inside _arguments' [description] (where a colon needs no
// escape) or after the name in a _describe entry (where the first colon has been seen).
std::string zsh_quote(const std::string& text) {
    std::string out;
    for (const char c : one_line(text)) {
        if (c == '\'') {
            out += "'\\''";
        } else if (c == '[' || c == ']' || c == '\\') {
            out += '\\';
            out += c;
        } else {
            out += c;
        }
    }
    return out;
}

std::string zsh_action(const AppDoc& app, const OptionDoc& opt) {
    switch (opt.kind) {
    case ValueKind::file: return "_files";
    case ValueKind::cluster: return "_ccl-harness_clusters";
    case ValueKind::choice: return "(" + join(opt.choices) + ")";
    case ValueKind::command: {
        std::vector<std::string> names;
        for (const CommandDoc& command : app.commands) {
            names.push_back(command.name);
        }
        return "(" + join(names) + ")";
    }
    case ValueKind::none:
    case ValueKind::text: break;
    }
    return " ";
}

void zsh_specs(std::string& out, const AppDoc& app, const std::vector<OptionDoc>& options) {
    for (const OptionDoc& opt : options) {
        const std::string label = zsh_quote(opt.value.empty() ? opt.names.front() : opt.value);
        if (opt.positional) {
            out += fmt::format("      '{}:{}:{}' \\\n", opt.repeatable ? "*" : opt.required ? "" : ":", label, zsh_action(app, opt));
            continue;
        }
        for (const std::string& name : opt.names) {
            if (opt.kind == ValueKind::none) {
                out += fmt::format("      '{}[{}]' \\\n", name, zsh_quote(opt.description));
            } else {
                out += fmt::format("      '{}{}=[{}]:{}:{}' \\\n", opt.repeatable ? "*" : "", name, zsh_quote(opt.description), label,
                                   zsh_action(app, opt));
            }
        }
    }
}

// ---- fish ----------------------------------------------------------------------------------

std::string fish_quote(const std::string& text) {
    std::string out = "'";
    for (const char c : one_line(text)) {
        if (c == '\'' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out + "'";
}

std::string fish_option(const AppDoc& app, const OptionDoc& opt, const std::string& condition) {
    std::string line = "complete -c " + app.name;
    if (!condition.empty()) {
        line += " -n " + fish_quote(condition);
    }
    for (const std::string& name : opt.names) {
        line += (name.size() == 2 ? " -s " + name.substr(1) : " -l " + name.substr(2));
    }
    switch (opt.kind) {
    case ValueKind::file: line += " -r -F"; break;
    case ValueKind::cluster: line += " -x -a '(__ccl_harness_clusters)'"; break;
    case ValueKind::choice: line += " -x -a " + fish_quote(join(opt.choices)); break;
    case ValueKind::command:
    case ValueKind::text: line += " -x"; break;
    case ValueKind::none: break;
    }
    return line + " -d " + fish_quote(opt.description) + "\n";
}

} // namespace

AppDoc describe_app(const CLI::App& app) {
    AppDoc doc;
    doc.name = app.get_name();
    doc.description = app.get_description();
    doc.global_options = describe_options(app, true);
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (sub->get_group().empty()) {
            continue;
        }
        CommandDoc command;
        command.name = sub->get_name();
        command.description = sub->get_description();
        command.footer = sub->get_footer();
        command.options = describe_options(*sub, false);
        doc.commands.push_back(std::move(command));
    }
    return doc;
}

std::string command_synopsis(const AppDoc& app, const CommandDoc& command) {
    std::string out = app.name + " " + command.name;
    bool has_options = false;
    for (const OptionDoc& opt : command.options) {
        has_options = has_options || !opt.positional;
    }
    if (has_options) {
        out += " [OPTIONS]";
    }
    for (const OptionDoc& opt : command.options) {
        if (opt.positional) {
            const std::string word = opt.value + (opt.repeatable ? "..." : "");
            out += " " + (opt.required ? word : "[" + word + "]");
        }
    }
    return out;
}

std::string bash_completion(const AppDoc& app) {
    std::vector<std::string> names;
    for (const CommandDoc& command : app.commands) {
        names.push_back(command.name);
    }
    const std::vector<OptionDoc>& global = app.global_options;
    std::string out = fmt::format(
        "# bash completion for {0}. Generated by `{0} completion bash` from its command table: do not edit.\n"
        "\n"
        "# Cluster names from the {0} being completed, when it can list them.\n"
        "_ccl_harness_clusters() {{\n"
        "    \"${{COMP_WORDS[0]}}\" list clusters --names 2>/dev/null\n"
        "}}\n"
        "\n"
        "_ccl_harness() {{\n"
        "    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=\"\" command=\"\" i word\n"
        "    if (( COMP_CWORD > 0 )); then prev=${{COMP_WORDS[COMP_CWORD-1]}}; fi\n"
        "    # The command is the first word that is neither an option nor a global option's value.\n"
        "    for (( i = 1; i < COMP_CWORD; i++ )); do\n"
        "        word=${{COMP_WORDS[i]}}\n"
        "        if [[ \" {1} \" == *\" $word \"* ]]; then\n"
        "            (( i++ ))\n"
        "            continue\n"
        "        fi\n"
        "        case $word in\n"
        "            -*) ;;\n"
        "            *) command=$word; break ;;\n"
        "        esac\n"
        "    done\n"
        "    local options=\"{2}\" files=\"{3}\" clusters=\"\" values=\"{4}\" positional=\"\"\n"
        "    case $command in\n",
        app.name, names_taking(global, {ValueKind::file, ValueKind::text, ValueKind::cluster}), option_words(global),
        names_taking(global, {ValueKind::file}), names_taking(global, {ValueKind::text}));
    for (const CommandDoc& command : app.commands) {
        out += fmt::format("        {})\n"
                           "            options+=\" {}\"\n"
                           "            files+=\" {}\"\n"
                           "            clusters+=\" {}\"\n"
                           "            values+=\" {}\"\n"
                           "            positional=\"{}\" ;;\n",
                           command.name, option_words(command.options), names_taking(command.options, {ValueKind::file}),
                           names_taking(command.options, {ValueKind::cluster}),
                           names_taking(command.options, {ValueKind::text, ValueKind::choice, ValueKind::command}),
                           positional_words(app, command));
    }
    out += fmt::format("    esac\n"
                       "    if [[ -n $prev && \" $clusters \" == *\" $prev \"* ]]; then\n"
                       "        mapfile -t COMPREPLY < <(compgen -W \"$(_ccl_harness_clusters)\" -- \"$cur\")\n"
                       "        return 0\n"
                       "    fi\n"
                       "    if [[ -n $prev && \" $files \" == *\" $prev \"* ]]; then\n"
                       "        compopt -o filenames 2>/dev/null\n"
                       "        mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
                       "        return 0\n"
                       "    fi\n"
                       "    if [[ -n $prev && \" $values \" == *\" $prev \"* ]]; then\n"
                       "        COMPREPLY=()\n"
                       "        return 0\n"
                       "    fi\n"
                       "    if [[ $cur == -* ]]; then\n"
                       "        mapfile -t COMPREPLY < <(compgen -W \"$options\" -- \"$cur\")\n"
                       "    elif [[ -z $command ]]; then\n"
                       "        mapfile -t COMPREPLY < <(compgen -W \"{1}\" -- \"$cur\")\n"
                       "    elif [[ $positional == files ]]; then\n"
                       "        compopt -o filenames 2>/dev/null\n"
                       "        mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
                       "    elif [[ $positional == clusters ]]; then\n"
                       "        mapfile -t COMPREPLY < <(compgen -W \"$(_ccl_harness_clusters)\" -- \"$cur\")\n"
                       "    else\n"
                       "        mapfile -t COMPREPLY < <(compgen -W \"$positional\" -- \"$cur\")\n"
                       "    fi\n"
                       "    return 0\n"
                       "}}\n"
                       "complete -F _ccl_harness {0}\n",
                       app.name, join(names));
    return out;
}

std::string zsh_completion(const AppDoc& app) {
    std::string out = fmt::format("#compdef {0}\n"
                                  "# zsh completion for {0}. Generated by `{0} completion zsh` from its command table: do not edit.\n"
                                  "\n"
                                  "# Cluster names from the {0} being completed, when it can list them.\n"
                                  "_ccl-harness_clusters() {{\n"
                                  "  local -a clusters\n"
                                  "  clusters=(${{(f)\"$(${{_ccl_harness_program:-{0}}} list clusters --names 2>/dev/null)\"}})\n"
                                  "  compadd -a clusters\n"
                                  "}}\n"
                                  "\n"
                                  "_ccl-harness() {{\n"
                                  "  local _ccl_harness_program=$words[1]\n"
                                  "  local curcontext=$curcontext state state_descr line ret=1\n"
                                  "  typeset -A opt_args\n"
                                  "  _arguments -C \\\n",
                                  app.name);
    zsh_specs(out, app, app.global_options);
    out += "      '1: :->command' \\\n"
           "      '*:: :->args' && ret=0\n"
           "  case $state in\n"
           "    (command)\n"
           "      local -a commands\n"
           "      commands=(\n";
    for (const CommandDoc& command : app.commands) {
        out += fmt::format("        '{}:{}'\n", command.name, zsh_quote(command.description));
    }
    out += fmt::format("      )\n"
                       "      _describe -t commands '{} command' commands && ret=0\n"
                       "      ;;\n"
                       "    (args)\n"
                       "      curcontext=${{curcontext%:*:*}}:{}-$line[1]:\n"
                       "      case $line[1] in\n",
                       app.name, app.name);
    for (const CommandDoc& command : app.commands) {
        out += fmt::format("        ({})\n"
                           "          _arguments \\\n",
                           command.name);
        std::vector<OptionDoc> options = app.global_options;
        options.insert(options.begin(), command.options.begin(), command.options.end());
        // Positionals last, after the global options: _arguments reads them in order.
        std::stable_partition(options.begin(), options.end(), [](const OptionDoc& opt) { return !opt.positional; });
        zsh_specs(out, app, options);
        out += "            && ret=0\n"
               "          ;;\n";
    }
    out += "      esac\n"
           "      ;;\n"
           "  esac\n"
           "  return ret\n"
           "}\n"
           "\n"
           "# Autoloaded from $fpath, or sourced.\n"
           "if [ \"$funcstack[1]\" = _ccl-harness ]; then\n"
           "  _ccl-harness \"$@\"\n"
           "else\n"
           "  compdef _ccl-harness " +
           app.name +
           "\n"
           "fi\n";
    return out;
}

std::string fish_completion(const AppDoc& app) {
    std::string out = fmt::format(
        "# fish completion for {0}. Generated by `{0} completion fish` from its command table: do not edit.\n"
        "\n"
        "# The command typed so far: the first word that is neither an option nor a global option's value.\n"
        "function __ccl_harness_command\n"
        "    set -l words (commandline -opc)\n"
        "    set -e words[1]\n"
        "    set -l skip 0\n"
        "    for word in $words\n"
        "        if test $skip = 1\n"
        "            set skip 0\n"
        "        else if contains -- $word {1}\n"
        "            set skip 1\n"
        "        else if not string match -q -- '-*' $word\n"
        "            echo $word\n"
        "            return 0\n"
        "        end\n"
        "    end\n"
        "    return 1\n"
        "end\n"
        "\n"
        "function __ccl_harness_needs_command\n"
        "    not __ccl_harness_command >/dev/null\n"
        "end\n"
        "\n"
        "function __ccl_harness_using\n"
        "    contains -- (__ccl_harness_command) $argv\n"
        "end\n"
        "\n"
        "# Cluster names from the {0} being completed, when it can list them.\n"
        "function __ccl_harness_clusters\n"
        "    set -l program (commandline -opc)[1]\n"
        "    command $program list clusters --names 2>/dev/null\n"
        "end\n"
        "\n"
        "complete -c {0} -f\n",
        app.name, names_taking(app.global_options, {ValueKind::file, ValueKind::text, ValueKind::cluster}));
    for (const OptionDoc& opt : app.global_options) {
        out += fish_option(app, opt, "");
    }
    for (const CommandDoc& command : app.commands) {
        out += fmt::format("complete -c {} -n __ccl_harness_needs_command -a {} -d {}\n", app.name, command.name,
                           fish_quote(command.description));
    }
    for (const CommandDoc& command : app.commands) {
        const std::string condition = "__ccl_harness_using " + command.name;
        for (const OptionDoc& opt : command.options) {
            if (!opt.positional) {
                out += fish_option(app, opt, condition);
            }
        }
        const std::string positional = positional_words(app, command);
        if (positional == "files") {
            out += fmt::format("complete -c {} -n {} -F\n", app.name, fish_quote(condition));
        } else if (positional == "clusters") {
            out += fmt::format("complete -c {} -n {} -a '(__ccl_harness_clusters)'\n", app.name, fish_quote(condition));
        } else if (!positional.empty()) {
            out += fmt::format("complete -c {} -n {} -a {}\n", app.name, fish_quote(condition), fish_quote(positional));
        }
    }
    return out;
}

} // namespace harness::cli
