#pragma once
// The prelude every command that plans shares: load the card, fill what it leaves unset from the
// user's defaults (card/user_defaults.hpp), stop on its errors, choose the cluster, load its
// profile, make the plan. One place, so render, run and sweep cannot drift.
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "card/diagnostic.hpp"
#include "plan/plan.hpp"
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

/// What to resolve: the card and its --set overrides, --cluster, and the harness home whose
/// clusters/ holds the shipped profiles (the accelerator -> cluster rule reads them).
struct ResolveRequest {
    fs::path card;
    std::vector<std::string> overrides;
    std::string cluster; ///< --cluster NAME|PATH; empty: launch.cluster, else the accelerator's
    bool strict = false; ///< runnability problems are errors (true) or warnings
    fs::path home;       ///< harness_home(), read once by the caller
    std::string name{};  ///< names the workload's runs (WorkloadCard::set_name); empty: the card's own name
};

/// A resolved card. `plan` and `profile` are empty when the card itself has errors (then
/// `diagnostics` holds them and nothing else was looked at).
struct Resolved {
    WorkloadCard card;
    Diagnostics diagnostics; ///< the card's, then the plan's; the caller prints them
    std::optional<ClusterProfile> profile;
    ClusterChoice choice;
    std::string target; ///< the profile's name
    std::optional<Plan> plan;

    /// True when a plan was made and nothing is an error.
    bool ok() const { return plan.has_value() && !diagnostics.has_errors(); }
};

/// Loads, checks and plans `request.card`. Throws what the card loader and the profile lookup
/// throw (a missing file, an unknown cluster); problems with the card's content are diagnostics.
Resolved resolve(const ResolveRequest& request);

} // namespace harness
