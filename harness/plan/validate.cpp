#include "plan/validate.hpp"

#include "card/card.hpp"
#include "card/cluster.hpp"
#include "card/pyyaml_reading.hpp"
#include "plan/frameworks/contract.hpp"
#include "plan/plan.hpp"
#include "plan/resolve.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
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

/// launch.args the framework's contract does not list: a warning, never an error. The framework
/// may well accept them (the contract lists what the harness renders), but nobody has checked,
/// and a job that dies on an unknown option has often waited hours for its nodes first.
void check_launch_args(const WorkloadCard& card, const Plan& plan, const fs::path& home, Diagnostics& diagnostics) {
    const std::optional<FrameworkContract> contract = find_contract(plan, home / "docs" / "contracts");
    if (!contract || plan.extra_args.empty()) {
        return;
    }
    const std::string location = card.document().location(find_node(card.document().root(), "launch.args"), "launch.args");
    const std::vector<std::string> known(contract->options.begin(), contract->options.end());
    for (const std::string& arg : args_outside_contract(plan.extra_args, *contract)) {
        const std::string name = arg.substr(0, arg.find('='));
        const std::string near = closest_match(name, known);
        diagnostics.warning(location, "launch.args",
                            fmt::format("{} is not among the options {} lists for {} at {}{}: check that it exists there "
                                        "(a contract change cites the framework's source)",
                                        enquote(arg), contract->file.filename().string(), plan.framework, plan.source_ref,
                                        near.empty() ? "" : fmt::format(" (did you mean {}?)", enquote(near))));
    }
}

/// Where PyYAML, which the CCL-Bench tools read cards with, reads the card otherwise
/// (card/pyyaml_reading.hpp): warnings, so a contributor learns before packing; under --strict its
/// errors stay errors, as `verify` holds a bundle's card to them.
void check_pyyaml_reading(const fs::path& file, const WorkloadCard& card, bool strict, Diagnostics& diagnostics) {
    const Diagnostics found = pyyaml_reading(read_file(file), card.document(), card_schema());
    for (const Diagnostic& d : found.items()) {
        if (strict && d.severity == Severity::error) {
            diagnostics.error(d.location, d.field, d.message);
        } else {
            diagnostics.warning(d.location, d.field, d.message);
        }
    }
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
        if (!options.strict) {
            const WorkloadCard card = WorkloadCard::load(file, options.overrides);
            result.diagnostics = card.diagnostics();
            check_pyyaml_reading(file, card, false, result.diagnostics);
            return result;
        }
        const Resolved resolved = resolve({file, options.overrides, options.cluster, true, options.home});
        result.diagnostics = resolved.diagnostics;
        check_pyyaml_reading(file, resolved.card, true, result.diagnostics);
        if (resolved.plan) {
            check_launch_args(resolved.card, *resolved.plan, options.home, result.diagnostics);
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
        entry["status"] = result.diagnostics.has_errors() ? "error" : result.diagnostics.warning_count() > 0 ? "warning" : "ok";
        if (!result.target.empty()) {
            entry["renders"] = Json(Json::Object{{"framework", result.framework},
                                                 {"target", result.target},
                                                 {"nodes", result.nodes},
                                                 {"ranks_per_node", result.ranks_per_node},
                                                 {"files", json_string_array(result.rendered)}});
        }
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
