#pragma once
// `adopt`: an archived card completed from the scripts its contributor ran, so that the harness's
// render runs what they ran. Where card and script disagree the script wins (it is what ran),
// and the disagreement is returned for the user to see.
#include "adopt/script_facts.hpp"
#include "util/fs.hpp"

#include <string>
#include <vector>

namespace harness {

struct Disagreement {
    std::string where; ///< the script's FILE:LINE
    std::string field;
    std::string card;
    std::string script;
};

struct AdoptResult {
    std::string card_yaml; ///< the completed card
    std::vector<Disagreement> disagreements;
    std::vector<ScriptFact> filled; ///< fields the card was silent on
    std::vector<ScriptFinding> unresolved;
    std::vector<ScriptFinding> notes;
    std::vector<std::string> recognized; ///< "FILE: vllm serve"
};

/// Reads `card` and `scripts` (bash, or TorchTitan TOML by a `.toml` name). A card that is not a
/// card, a missing script, or scripts none of which names a command adopt knows is an input error
/// (exit 2); one script of several that names none is a note.
AdoptResult adopt_card(const fs::path& card, const std::vector<fs::path>& scripts);

} // namespace harness
