#pragma once
// The mustache context templates render with: the plan's values under the names templates use
// (docs/templates.md), flags for their sections, and the #SBATCH directives, each checked.
#include "card/cluster.hpp"
#include "plan/plan.hpp"

#include <kainjow/mustache.hpp>

namespace harness {

/// The context of `plan` on `cluster`, without partials. A value that cannot go on an #SBATCH
/// line (a Slurm plan only) is an input error naming its card field.
kainjow::mustache::data template_context(const Plan& plan, const ClusterProfile& cluster);

} // namespace harness
