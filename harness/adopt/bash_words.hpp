#pragma once
// A contributor's launch script read as words, never run: enough of bash (quotes, escapes, line
// continuations, assignments, `${VAR:-default}`, positional defaults, arrays, here-documents) to
// know what argv each command had, and which words depended on something only running would tell.
#include <map>
#include <string>
#include <vector>

namespace harness {

/// One argv word. `unresolved` names what it needed and could not know ("$(date ...)",
/// "$PSCRATCH"); such a word's text holds the unresolved part as written.
struct BashWord {
    std::string text;
    int line = 0;
    std::string unresolved;
};

/// One simple command (split at newlines, `;`, `&`, `&&`, `||`, `|`). `#SBATCH` lines come as a
/// command whose first word is "#SBATCH", since a job script's options live there.
struct BashCommand {
    std::vector<BashWord> words;
    int line = 0;
};

struct BashScript {
    std::vector<BashCommand> commands;
    /// Variables exported by the script (`export NAME=value`), in order, value as resolved.
    std::vector<std::pair<std::string, BashWord>> exports;
};

/// Splits `text` into commands. Assignments (`NAME=value`, `export`, `NAME=(a b)`) are applied in
/// order and not returned as commands; an unset variable with a default (`${X:-d}`, `${1:-d}`) takes
/// the default, since that is what the script ran without arguments.
BashScript split_bash(const std::string& text);

} // namespace harness
