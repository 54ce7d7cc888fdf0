#include "plan/explain_fix.hpp"

#include "plan/resolve.hpp"
#include "util/strings.hpp"

#include <algorithm>

namespace harness {

namespace {

struct Placeholder {
    const char* field;
    const char* text;
    bool site;
};

// What each launch field wants, in words the user replaces; the site facts are the ones the
// same on every card (docs/clusters.md, defaults.yaml).
const Placeholder k_placeholders[] = {
    {"launch.account", "<allocation account, e.g. m1234>", true},
    {"launch.qos", "<QOS, e.g. regular>", true},
    {"launch.partition", "<partition>", true},
    {"launch.constraint", "<constraint, e.g. gpu>", true},
    {"launch.tpu.project", "<Google Cloud project id>", true},
    {"launch.tpu.zone", "<zone, e.g. us-east5-b>", true},
    {"launch.container.image", "<registry/repository>@sha256:<64 hex digits>", false},
    {"launch.container.cuda", "<the image's CUDA version, e.g. \"12.9\">", false},
    {"launch.dataset_path", "<the dataset file on the cluster's shared file system>", false},
    {"launch.source.repo", "<git URL of the framework>", false},
    {"launch.source.ref", "<tag or commit the contributor ran>", false},
};

FixEntry entry_for(const Diagnostic& problem) {
    FixEntry entry{problem.field, "<value>", problem.message, false};
    for (const Placeholder& known : k_placeholders) {
        if (problem.field == known.field) {
            entry.placeholder = known.text;
            entry.site = known.site;
        }
    }
    return entry;
}

} // namespace

FixSuggestion suggest_fix(const fs::path& card, const std::vector<std::string>& overrides, const std::string& cluster,
                          const fs::path& home) {
    FixSuggestion out;
    out.card = card.string();
    const Resolved resolved = resolve({card, overrides, cluster, true, home});
    out.target = resolved.plan ? resolved.target : std::string();
    for (const Diagnostic& problem : resolved.diagnostics.items()) {
        if (problem.severity != Severity::error) {
            continue;
        }
        // An unknown launch key is a typo to fix where it is, not a field to add.
        const bool addable = starts_with(problem.field, "launch.") && problem.message.find("unknown key") == std::string::npos;
        if (!addable) {
            out.card_problems.push_back(problem);
            continue;
        }
        const bool seen = std::any_of(out.launch.begin(), out.launch.end(),
                                      [&](const FixEntry& e) { return e.field == problem.field; });
        if (!seen) {
            out.launch.push_back(entry_for(problem));
        }
    }
    std::sort(out.launch.begin(), out.launch.end(), [](const FixEntry& a, const FixEntry& b) { return a.field < b.field; });
    return out;
}

} // namespace harness
