#include "workflows/stage_card.hpp"

#include "card/card.hpp"
#include "card/yaml_document.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

fs::path stage_card(const StageCardSource& source, const fs::path& stage) {
    fs::create_directories(stage);
    // The name comes from a record, data like any other: one file name inside the stage.
    const std::string card_file_name = source.card_name.empty() ? std::string("card.yaml") : source.card_name + ".yaml";
    if (const std::string problem = file_name_problem(card_file_name); !problem.empty()) {
        throw input_error(fmt::format("{}: card name {}: {}", source.what, enquote(source.card_name), problem));
    }
    fs::path card_file = stage / card_file_name;
    fs::copy_file(source.dir / "card.yaml", card_file);
    const WorkloadCard probe = WorkloadCard::load(card_file);
    const std::string script = trim(scalar_text(find_node(probe.document().root(), "launch.script")));
    if (script.empty() || !probe.launch.source_repo.empty()) {
        return card_file;
    }
    const fs::path target = safe_path_under(stage, script, source.what + ": launch.script");
    const fs::path copied = source.dir / target.filename();
    std::error_code ec;
    if (!fs::is_regular_file(copied, ec)) {
        if (source.need_entry_point) {
            throw input_error(fmt::format("{}: {}/ has no entry point for launch.script {}", source.what,
                                          source.dir.filename().string(), enquote(script)));
        }
        return card_file;
    }
    fs::create_directories(target.parent_path());
    fs::copy_file(copied, target);
    return card_file;
}

} // namespace harness
