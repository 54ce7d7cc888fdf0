#include "plan/resolve.hpp"

namespace harness {

Resolved resolve(const ResolveRequest& request) {
    Resolved out{WorkloadCard::load(request.card, request.overrides), {}, std::nullopt, {}, {}, std::nullopt};
    out.diagnostics = out.card.diagnostics();
    if (out.diagnostics.has_errors()) {
        return out;
    }
    out.profile = resolve_cluster(out.card, request.cluster, request.home, &out.choice);
    out.target = out.profile->name;
    out.plan = make_plan(out.card, *out.profile, request.strict, out.diagnostics);
    return out;
}

} // namespace harness
