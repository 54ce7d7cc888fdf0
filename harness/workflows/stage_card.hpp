#pragma once
// A card that ran, staged again so that planning and rendering it see what the original render
// saw: the effective card as <card>.yaml with its entry point at the relative path
// launch.script names. reproduce stages a bundle's scripts/, attach a run directory's rendered/.
#include "util/fs.hpp"

#include <string>

namespace harness {

struct StageCardSource {
    fs::path dir;                 ///< holds card.yaml and the entry point (scripts/ or rendered/)
    std::string card_name;        ///< from the record; empty: the card is named after its file
    std::string what;             ///< names the source in errors: "bundle", "run directory"
    bool need_entry_point = true; ///< a missing launch.script file is an error (else it is skipped)
};

/// Copies `source`'s card (and entry point, when the card has one and no launch.source) into
/// `stage`; returns the staged card file. Input errors name `source.what`.
fs::path stage_card(const StageCardSource& source, const fs::path& stage);

} // namespace harness
