#include "workflows/validate_render.hpp"

#include "plan/resolve.hpp"
#include "render/render.hpp"
#include "util/error.hpp"

#include <fmt/format.h>

namespace harness {

ValidationResult validate_and_render(const fs::path& file, const ValidateOptions& options) {
    ValidationResult result = validate_file(file, options);
    if (!options.strict || options.profile || result.unreadable || result.diagnostics.has_errors()) {
        return result;
    }
    try {
        const Resolved resolved = resolve({file, options.overrides, options.cluster, true, options.home});
        if (resolved.ok()) {
            const RenderedRun run = render_run(resolved.card, *resolved.profile, *resolved.plan, options.home);
            result.framework = run.plan.framework;
            result.target = run.plan.target;
            result.nodes = run.plan.nodes;
            result.ranks_per_node = run.plan.ranks_per_node;
            for (const auto& rendered : run.files) {
                result.rendered.push_back(rendered.name);
            }
        }
    } catch (const HarnessError& error) {
        std::string why = error.what();
        if (const std::string prefix = result.file + ": "; why.rfind(prefix, 0) == 0) {
            why.erase(0, prefix.size());
        }
        result.diagnostics.error(result.file, "", fmt::format("the card plans but does not render, so it cannot run: {}", why));
    }
    return result;
}

} // namespace harness
