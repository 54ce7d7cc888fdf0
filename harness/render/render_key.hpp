#pragma once
// The identity of a rendered run: what `run --reuse` matches an earlier run by. The rendered
// files hold everything a run is made of (the effective card, the plan with the cluster, the
// image and its digest, the source commit pinned before rendering, the templates' text), and
// two renders of the same inputs are byte for byte the same, so their hash names the run.
#include "render/render.hpp"
#include "util/fs.hpp"

#include <string>

namespace harness {

/// sha256 over the top-level rendered files, by name: each name, its size and its bytes.
std::string render_key(const RenderedRun& run);

/// The same over a run directory's rendered/ as render wrote it (its top-level regular files;
/// what a job writes under rendered/logs or rendered/traces is not part of it); "" when there
/// is no rendered/.
std::string render_key_of_directory(const fs::path& rendered_dir);

} // namespace harness
