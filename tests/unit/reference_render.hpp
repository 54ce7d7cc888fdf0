#pragma once
// A reference card from workloads/ planned and rendered the way `render [--strict]` would: what
// the framework fidelity tests (test_framework_*.cpp) vary a field of and read back.
#include "plan/plan.hpp"
#include "render/render.hpp"

#include <string>
#include <vector>

namespace harness::test {

struct ReferenceRender {
    Plan plan;
    Diagnostics diagnostics;
    RenderedRun run; ///< rendered even when planning found problems (what a run without --strict gets)

    /// The rendered file `name` (launch.sbatch, train.toml, remote.sh...); fails the test when absent.
    const std::string& file(const std::string& name) const;
};

/// The text of a card under the harness home (workloads/<name>/<name>.yaml).
std::string reference_card_text(const std::string& card);

/// `text` with its first `from` replaced by `to`; fails the test when `from` is absent.
std::string with(std::string text, const std::string& from, const std::string& to);

/// `text` (shown as card.yaml) with `--set` overrides, planned for the shipped profile `cluster`.
ReferenceRender render_reference(const std::string& text, const std::vector<std::string>& sets, const std::string& cluster,
                                 bool strict);

} // namespace harness::test
