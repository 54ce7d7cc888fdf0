#pragma once
// `build CARD`: resolve and render the card, then build (or reuse) the image its rendered
// Containerfile describes, tagged as the plan names it, so the image exists before any run needs it.
#include "image/image_build.hpp"
#include "image/image_context.hpp"
#include "plan/resolve.hpp"
#include "util/fs.hpp"

#include <optional>

namespace harness {

struct BuildImageRequest {
    ResolveRequest resolve; ///< the card, --set, --cluster and the home
    fs::path out;           ///< where the rendered files stay; empty: a scratch directory, removed afterwards
};

struct BuildImageOutcome {
    Resolved resolved;                ///< with its diagnostics for the caller to print
    std::optional<ImageRecord> image; ///< empty when the card had errors (nothing was built)
    fs::path rendered_dir;            ///< where the Containerfile was rendered ("" for a scratch directory)
    double seconds = 0;               ///< the whole build, base included
};

/// Resolves and renders `request`, then build_image(rendered, plan.container_build). A card
/// whose plan names no image to build (no launch.container.image, runtime none or shifter) is
/// an input error (exit 2) that says what to set. When the card has errors, returns them in
/// `resolved.diagnostics` with no image.
BuildImageOutcome build_card_image(const BuildImageRequest& request, const ImageContext& context);

} // namespace harness
