#include "validate.hpp"

#include "card.hpp"
#include "cluster.hpp"
#include "home.hpp"
#include "plan.hpp"
#include "util/error.hpp"

#include <regex>

namespace harness {

namespace {

/// An input error's text is "location: message"; split it so JSON consumers get the fields.
Diagnostic from_error(const std::string& what, const std::string& file) {
    static const std::regex positioned(R"(^(.*?:\d+:\d+): (.*)$)");
    std::smatch match;
    if (std::regex_match(what, match, positioned)) {
        return {Severity::error, match[1].str(), "", match[2].str()};
    }
    const std::string prefix = file + ": ";
    return {Severity::error, file, "", what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what};
}

} // namespace

ValidationResult validate_file(const fs::path& file, const ValidateOptions& options) {
    ValidationResult result;
    result.file = file.string();
    try {
        if (options.profile) {
            ClusterProfile profile;
            result.diagnostics = ClusterProfile::check(file, &profile);
            return result;
        }
        const WorkloadCard card = WorkloadCard::load(file, options.overrides);
        result.diagnostics = card.diagnostics();
        if (options.strict && !result.diagnostics.has_errors()) {
            const ClusterProfile cluster = resolve_cluster(card, options.cluster);
            make_plan(card, cluster, true, result.diagnostics);
        }
    } catch (const HarnessError& e) {
        const Diagnostic d = from_error(e.what(), result.file);
        result.diagnostics.error(d.location, d.field, d.message);
        result.unreadable = true;
    }
    return result;
}

Json validation_to_json(const std::vector<ValidationResult>& results) {
    Json out = Json::array();
    for (const auto& result : results) {
        Json entry = Json::object();
        entry["file"] = result.file;
        entry["status"] = result.diagnostics.has_errors() ? "error"
                          : result.diagnostics.warning_count() > 0 ? "warning"
                                                                   : "ok";
        entry["errors"] = Json::array();
        entry["warnings"] = Json::array();
        for (const auto& d : result.diagnostics.items()) {
            Json item = Json::object();
            item["location"] = d.location;
            item["field"] = d.field;
            item["message"] = d.message;
            entry[d.severity == Severity::error ? "errors" : "warnings"].push_back(item);
        }
        out.push_back(entry);
    }
    return out;
}

} // namespace harness
