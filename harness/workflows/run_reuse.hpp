#pragma once
// run --reuse: a run that would render byte for byte as an earlier completed one (same effective
// card, cluster, image, pinned source commit, templates: render/render_key.hpp) is not run again;
// the earlier run's verified bundle is its result.
#include "render/render.hpp"
#include "workflows/run_workload.hpp"

#include <optional>
#include <ostream>

namespace harness {

/// The newest completed run in the per-user results store (store/results_store.hpp) rendered as
/// `run` is, whose bundle is on disk and verifies, as the outcome of this run (RunOutcome::
/// reused set, headline metrics from its metrics.json); nullopt when there is none, the store is
/// turned off ($CCL_HARNESS_STORE=none) or cannot be read, each said on `out`.
std::optional<RunOutcome> reuse_earlier_run(const RenderedRun& run, const std::string& card, const std::string& target,
                                            std::ostream& out);

} // namespace harness
