#include "workflows/build_image_workflow.hpp"

#include "render/render.hpp"
#include "util/error.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

#include <chrono>
#include <fmt/format.h>
#include <memory>

namespace harness {

BuildImageOutcome build_card_image(const BuildImageRequest& request, const ImageContext& context) {
    const auto start = std::chrono::steady_clock::now();
    BuildImageOutcome outcome{resolve(request.resolve), std::nullopt, {}, 0};
    if (!outcome.resolved.ok()) {
        return outcome;
    }
    const Plan& plan = *outcome.resolved.plan;
    const std::string card = outcome.resolved.card.name();
    if (plan.container_image.empty() || plan.container_runtime == "none") {
        throw input_error(fmt::format("card {}: no container to build (launch.container.image is {}, runtime {}); set, e.g., "
                                      "--set launch.container.image=ccl-base:bookworm-torch --set launch.container.runtime=podman",
                                      enquote(card), plan.container_image.empty() ? "not set" : enquote(plan.container_image),
                                      enquote(plan.container_runtime)));
    }
    const RenderedRun run = render_run(outcome.resolved.card, *outcome.resolved.profile, plan, request.resolve.home);
    if (run.plan.container_build.empty() || run.find("Containerfile") == nullptr) {
        throw input_error(fmt::format("card {}: runtime {} on {} runs images it does not build (only podman and podman-hpc build the "
                                      "rendered Containerfile); set launch.container.runtime=podman",
                                      enquote(card), enquote(plan.container_runtime), outcome.resolved.target));
    }
    std::unique_ptr<ScratchDir> scratch;
    fs::path dir = request.out;
    if (dir.empty()) {
        scratch = std::make_unique<ScratchDir>(fs::path(), "build");
        dir = scratch->path() / "rendered";
    } else {
        outcome.rendered_dir = dir;
    }
    write_rendered(run, dir);
    ImageContext runtime_context = context;
    runtime_context.use_runtime(run.plan.container_runtime);
    outcome.image = build_image(dir, run.plan.container_build, runtime_context);
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return outcome;
}

} // namespace harness
