#include "reference_render.hpp"

#include "util/fs.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

namespace harness::test {

const std::string& ReferenceRender::file(const std::string& name) const {
    const RenderedFile* found = run.find(name);
    INFO(diagnostics.format());
    REQUIRE(found != nullptr);
    return found->content;
}

std::string reference_card_text(const std::string& card) { return read_file(harness_home() / card); }

std::string with(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    INFO("the card has no " << from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

ReferenceRender render_reference(const std::string& text, const std::vector<std::string>& sets, const std::string& cluster,
                                 bool strict) {
    YamlDocument doc = YamlDocument::parse(text, "card.yaml");
    for (const std::string& assignment : sets) {
        doc.set(assignment);
    }
    const WorkloadCard card = WorkloadCard::from_document(std::move(doc));
    INFO(card.diagnostics().format());
    REQUIRE_FALSE(card.diagnostics().has_errors());
    const ClusterProfile profile = ClusterProfile::load(harness_home() / "clusters", cluster);
    ReferenceRender out;
    out.plan = make_plan(card, profile, strict, out.diagnostics);
    // Rendered even when refused: a test may check what a run without --strict would get.
    out.run = render_run(card, profile, out.plan, harness_home());
    return out;
}

} // namespace harness::test
