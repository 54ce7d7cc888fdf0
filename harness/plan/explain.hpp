#pragma once
// `explain`: a card's resolved plan with, for every value, where it came from (the card, a
// --set override, the cluster profile, a harness default, or derived from other values). The
// values are plan.json's; the origins are those make_plan recorded as it decided them.
#include "card/diagnostic.hpp"
#include "plan/plan.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <string>
#include <vector>

namespace harness {

struct ExplainedValue {
    std::string field; ///< plan.json path: "geometry.world_size", "env.NCCL_DEBUG"
    Json value;
    Origin origin;
};

struct Explanation {
    std::string card;   ///< the card file as given
    std::string target; ///< the template set (plan.target)
    std::string cluster_name;
    fs::path cluster_file;
    ProfileSource cluster_found = ProfileSource::shipped;
    fs::path cluster_shadows;   ///< the shipped profile a user profile of the same name hides
    std::string cluster_chosen; ///< how the cluster was chosen (ClusterChoice::how)
    std::vector<ExplainedValue> values;
    Diagnostics diagnostics; ///< the card's problems, then the plan's (as warnings: explain is not --strict)
};

/// Loads the card with `overrides` applied and, when it has no schema errors, resolves it against
/// `cluster` (a name or path; empty: launch.cluster, else the accelerator). A card with errors
/// comes back with its diagnostics and no values. Unreadable input throws.
Explanation explain_card(const fs::path& card, const std::vector<std::string>& overrides, const std::string& cluster,
                         const fs::path& home);

/// plan_to_json(plan)'s leaves (arrays count as one value) paired with plan.origins, in plan.json's
/// reading order: identity, geometry, parallelism, steps and window, data, scheduler, container,
/// source, env, TPU.
std::vector<ExplainedValue> explain_plan(const Plan& plan);

/// One line for an origin: "card tiny.yaml:12:5 (launch.steps)", "--set launch.steps=3",
/// "profile clusters/local.yaml:9:3 (python)", "default: ...", "derived: ...".
std::string describe(const Origin& origin);

Json explanation_to_json(const Explanation& explanation);

/// The human form: the card, the cluster and how it was chosen, then `field  value  origin` rows.
std::string format_explanation(const Explanation& explanation);

} // namespace harness
