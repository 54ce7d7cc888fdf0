#include "plan/resolve.hpp"

#include "card/user_defaults.hpp"

namespace harness {

Resolved resolve(const ResolveRequest& request) {
    YamlDocument doc = YamlDocument::load(request.card);
    for (const auto& assignment : request.overrides) {
        doc.set(assignment);
    }
    // After the --set overrides, so that the card and the command line both win over them.
    apply_user_defaults(doc, load_user_defaults());
    Resolved out{WorkloadCard::from_document(std::move(doc)), {}, std::nullopt, {}, {}, std::nullopt};
    if (!request.name.empty()) {
        out.card.set_name(request.name);
    }
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
