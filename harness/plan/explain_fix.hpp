#pragma once
// `explain --fix`: what an archived card lacks to run here, as the launch: fields to add. The
// problems --strict reports at launch.* fields are the ones a launch: block (or, for site facts,
// the user's defaults.yaml) can fix; every other problem is the card's own, to fix at its line.
#include "card/diagnostic.hpp"
#include "util/fs.hpp"

#include <string>
#include <vector>

namespace harness {

struct FixEntry {
    std::string field;       ///< "launch.account"
    std::string placeholder; ///< what to write there, for the user to replace: "<allocation account, e.g. m1234>"
    std::string reason;      ///< the --strict problem it answers
    bool site = false;       ///< a site fact (account, QOS, TPU project...): belongs in defaults.yaml
};

struct FixSuggestion {
    std::string card;                      ///< the card as given
    std::string target;                    ///< the cluster it was planned for; empty when the card did not plan
    std::vector<FixEntry> launch;          ///< sorted by field
    std::vector<Diagnostic> card_problems; ///< errors no launch: field fixes
};

/// Resolves `card` as validate --strict would (with `overrides` and `cluster`, user defaults
/// included) and sorts its errors into launch: fields to add and the card's own problems.
/// Unreadable input throws.
FixSuggestion suggest_fix(const fs::path& card, const std::vector<std::string>& overrides, const std::string& cluster,
                          const fs::path& home);

} // namespace harness
