#include "workflows/references.hpp"

#include "card/schema.hpp"
#include "card/yaml_document.hpp"
#include "metrics/metrics.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <fnmatch.h>
#include <regex>
#include <set>

namespace harness {

namespace {

/// A whole decimal number of `text`, nothing after it.
bool parse_amount(const std::string& text, double& out) {
    if (text.empty()) {
        return false;
    }
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() && std::isfinite(out);
}

class ReferenceReader {
public:
    explicit ReferenceReader(const YamlDocument& doc) : m_doc(doc) {}

    [[noreturn]] void refuse(const YAML::Node& node, const std::string& field, const std::string& message) const {
        throw input_error(fmt::format("{}: {}: {}", m_doc.location(node, field), field, message));
    }

    void only_keys(const YAML::Node& node, const std::string& field, const std::vector<std::string>& keys) const {
        for (const auto& item : node) {
            const std::string key = item.first.Scalar();
            if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
                const std::string near = closest_match(key, keys);
                refuse(item.first, field.empty() ? key : field + "." + key,
                       fmt::format("not a key here (keys: {}){}", join(keys, ", "),
                                   near.empty() ? "" : fmt::format("; did you mean \"{}\"?", near)));
            }
        }
    }

    double number(const YAML::Node& node, const std::string& field) const {
        double value = 0;
        if (!node.IsScalar() || !read_number(node, value) || !std::isfinite(value)) {
            refuse(node, field, "expected a number");
        }
        return value;
    }

    MetricReference metric(const std::string& name, const YAML::Node& key, const YAML::Node& node, const std::string& field) const {
        const std::vector<std::string>& names = metrics::metric_names();
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            const std::string near = closest_match(name, names);
            refuse(key, field,
                   fmt::format("not a metric (`ccl-harness list metrics`){}",
                               near.empty() ? "" : fmt::format("; did you mean \"{}\"?", near)));
        }
        if (!node.IsMap()) {
            refuse(node, field, "expected {value: V, tolerance: T}, {min: A}, {max: B} or a mix");
        }
        only_keys(node, field, {"value", "tolerance", "min", "max"});
        MetricReference out;
        out.metric = name;
        out.location = m_doc.location(key, field);
        if (node["value"]) {
            out.value = number(node["value"], field + ".value");
            const YAML::Node tolerance = node["tolerance"];
            if (!tolerance) {
                refuse(node, field, "a value needs a tolerance: a share of it (tolerance: 10%) or an amount in the metric's unit");
            }
            std::string text = tolerance.IsScalar() ? trim(tolerance.Scalar()) : std::string();
            out.tolerance_relative = ends_with(text, "%");
            if (out.tolerance_relative) {
                text.pop_back();
            }
            double amount = 0;
            if (!parse_amount(trim(text), amount) || amount < 0) {
                refuse(tolerance, field + ".tolerance", "expected N% or a non-negative number in the metric's unit");
            }
            out.tolerance = out.tolerance_relative ? amount / 100.0 : amount;
        } else if (node["tolerance"]) {
            refuse(node["tolerance"], field + ".tolerance", "a tolerance needs a value to be around");
        }
        if (node["min"]) {
            out.min = number(node["min"], field + ".min");
        }
        if (node["max"]) {
            out.max = number(node["max"], field + ".max");
        }
        if (out.min && out.max && *out.min > *out.max) {
            refuse(node, field, fmt::format("min {} is above max {}", *out.min, *out.max));
        }
        if (!out.value && !out.min && !out.max) {
            refuse(node, field, "nothing to hold the metric to: give value and tolerance, min or max");
        }
        return out;
    }

    WorkloadReference entry(const YAML::Node& node, const std::string& field) const {
        if (!node.IsMap()) {
            refuse(node, field, "expected a map with workload and metrics");
        }
        only_keys(node, field, {"workload", "where", "metrics"});
        WorkloadReference out;
        out.location = m_doc.location(node, field);
        if (!node["workload"] || !node["workload"].IsScalar() || trim(node["workload"].Scalar()).empty()) {
            refuse(node, field + ".workload", "required: the card name (a glob) whose runs this holds");
        }
        out.workload = trim(node["workload"].Scalar());
        if (const YAML::Node where = node["where"]) {
            if (!where.IsMap()) {
                refuse(where, field + ".where", "expected a map of card path: value");
            }
            for (const auto& item : where) {
                if (!item.second.IsScalar()) {
                    refuse(item.second, field + ".where." + item.first.Scalar(), "expected one value");
                }
                out.where.emplace_back(item.first.Scalar(), item.second.Scalar());
            }
        }
        const YAML::Node metrics = node["metrics"];
        if (!metrics || !metrics.IsMap() || metrics.size() == 0) {
            refuse(metrics ? metrics : node, field + ".metrics", "required: a map of metric name: expectation");
        }
        for (const auto& item : metrics) {
            const std::string name = item.first.Scalar();
            out.metrics.push_back(metric(name, item.first, item.second, field + ".metrics." + name));
        }
        return out;
    }

private:
    const YamlDocument& m_doc;
};

std::string number_text(double value) { return fmt::format("{:.6g}", value); }

std::string expected_text(const MetricReference& reference, const std::string& unit) {
    std::vector<std::string> parts;
    if (reference.value) {
        parts.push_back(reference.tolerance_relative
                            ? fmt::format("{} {} ± {}%", number_text(*reference.value), unit, number_text(reference.tolerance * 100))
                            : fmt::format("{} ± {} {}", number_text(*reference.value), number_text(reference.tolerance), unit));
    }
    if (reference.min) {
        parts.push_back(fmt::format(">= {} {}", number_text(*reference.min), unit));
    }
    if (reference.max) {
        parts.push_back(fmt::format("<= {} {}", number_text(*reference.max), unit));
    }
    return join(parts, ", ");
}

/// Where `measured` stands against `reference`, and by how much when it is out.
std::pair<ReferenceVerdict, std::string> judge(const MetricReference& reference, double measured, const std::string& unit) {
    if (reference.min && measured < *reference.min) {
        return {ReferenceVerdict::regression, fmt::format("below the minimum by {} {}", number_text(*reference.min - measured), unit)};
    }
    if (reference.max && measured > *reference.max) {
        return {ReferenceVerdict::regression, fmt::format("above the maximum by {} {}", number_text(measured - *reference.max), unit)};
    }
    if (!reference.value) {
        return {ReferenceVerdict::within, ""};
    }
    const double allowed = reference.tolerance_relative ? std::fabs(*reference.value) * reference.tolerance : reference.tolerance;
    const double off = measured - *reference.value;
    if (std::fabs(off) <= allowed) {
        return {ReferenceVerdict::within, ""};
    }
    const std::string by = *reference.value != 0 ? fmt::format("{:+.1f} %", off / std::fabs(*reference.value) * 100)
                                                 : fmt::format("{:+.6g} {}", off, unit);
    const metrics::Better better = metrics::metric_better(reference.metric);
    const bool improved = (better == metrics::Better::lower && off < 0) || (better == metrics::Better::higher && off > 0);
    if (improved) {
        return {ReferenceVerdict::better, fmt::format("{} past the tolerance, the better way: update the reference", by)};
    }
    return {ReferenceVerdict::regression, fmt::format("{} past the tolerance{}", by,
                                                      better == metrics::Better::neither ? " (a metric that should not change)" : "")};
}

bool matches(const WorkloadReference& reference, const ComparedRun& run) {
    const std::string workload = workload_of_run(run.name);
    if (fnmatch(reference.workload.c_str(), workload.c_str(), 0) != 0 &&
        fnmatch(reference.workload.c_str(), run.name.c_str(), 0) != 0) {
        return false;
    }
    return std::all_of(reference.where.begin(), reference.where.end(), [&run](const auto& condition) {
        const auto found = run.card.find(condition.first);
        return found != run.card.end() && found->second == condition.second;
    });
}

double mean_of(const std::vector<double>& values) {
    double sum = 0;
    for (double v : values) {
        sum += v;
    }
    return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

double variance_of(const std::vector<double>& values) {
    if (values.size() < 2) {
        return 0;
    }
    const double m = mean_of(values);
    double sum = 0;
    for (double v : values) {
        sum += (v - m) * (v - m);
    }
    return sum / static_cast<double>(values.size() - 1);
}

/// The run's inner steps as one series: each step's duration averaged over the ranks (the ranks
/// of a synchronous job wait for each other, so their steps are one measurement, not several).
std::vector<double> step_series(const RunDetail& detail) {
    std::size_t count = 0;
    bool first = true;
    for (const std::vector<double>& steps : detail.steps) {
        if (!steps.empty()) {
            count = first ? steps.size() : std::min(count, steps.size());
            first = false;
        }
    }
    std::vector<double> series;
    for (std::size_t i = 0; i < count; ++i) {
        std::vector<double> at;
        for (const std::vector<double>& steps : detail.steps) {
            if (!steps.empty()) {
                at.push_back(steps[i]);
            }
        }
        series.push_back(mean_of(at));
    }
    return series;
}

} // namespace

std::vector<WorkloadReference> load_references(const fs::path& file) {
    const YamlDocument doc = YamlDocument::load(file);
    const ReferenceReader reader(doc);
    const YAML::Node& root = doc.root();
    if (!root.IsMap()) {
        reader.refuse(root, "references", "expected a map with a references: list");
    }
    reader.only_keys(root, "", {"references"});
    const YAML::Node list = root["references"];
    if (!list || !list.IsSequence() || list.size() == 0) {
        reader.refuse(list ? list : root, "references", "required: a list of {workload, where, metrics}");
    }
    std::vector<WorkloadReference> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
        out.push_back(reader.entry(list[i], fmt::format("references[{}]", i)));
    }
    return out;
}

std::string workload_of_run(const std::string& run_id) {
    static const std::regex suffix(R"(-\d{8}T\d{6}Z-[0-9a-f]{6}$)");
    std::smatch match;
    if (std::regex_search(run_id, match, suffix)) {
        return run_id.substr(0, static_cast<std::size_t>(match.position(0)));
    }
    return run_id;
}

const char* to_string(ReferenceVerdict verdict) {
    switch (verdict) {
    case ReferenceVerdict::within: return "within";
    case ReferenceVerdict::better: return "better";
    case ReferenceVerdict::regression: return "regression";
    case ReferenceVerdict::missing: return "missing";
    }
    return "?";
}

bool ReferenceReport::failed() const {
    return checks.empty() || std::any_of(checks.begin(), checks.end(), [](const ReferenceCheck& check) {
               return check.verdict == ReferenceVerdict::regression || check.verdict == ReferenceVerdict::missing;
           });
}

ReferenceReport check_references(const std::vector<WorkloadReference>& references, const std::vector<ComparedRun>& runs) {
    ReferenceReport report;
    for (const ComparedRun& run : runs) {
        bool held = false;
        for (const WorkloadReference& reference : references) {
            if (!matches(reference, run)) {
                continue;
            }
            held = true;
            for (const MetricReference& expected : reference.metrics) {
                ReferenceCheck check;
                check.run = run.name;
                check.metric = expected.metric;
                check.location = expected.location;
                const auto found = run.metrics.find(expected.metric);
                check.unit = found != run.metrics.end() ? found->second.unit : "";
                check.expected = expected_text(expected, check.unit);
                if (found == run.metrics.end() || !found->second.value) {
                    check.verdict = ReferenceVerdict::missing;
                    check.detail = found == run.metrics.end() ? "the run has no such metric" : "n/a: " + found->second.why;
                } else {
                    check.measured = found->second.value;
                    std::tie(check.verdict, check.detail) = judge(expected, *check.measured, check.unit);
                }
                report.checks.push_back(std::move(check));
            }
        }
        if (!held) {
            report.unmatched_runs.push_back(run.name);
        }
    }
    return report;
}

std::string reference_report_table(const ReferenceReport& report) {
    std::string out = "\nagainst the references:\n";
    if (report.checks.empty()) {
        out += "  no run is named by any reference (workload, where): nothing was held to account\n";
    }
    for (const ReferenceCheck& check : report.checks) {
        out += fmt::format("  {:<11} {}  {} = {}  (expected {}){}\n", to_string(check.verdict), check.run, check.metric,
                           check.measured ? number_text(*check.measured) + " " + check.unit : std::string("n/a"), check.expected,
                           check.detail.empty() ? "" : ": " + check.detail);
    }
    if (!report.unmatched_runs.empty()) {
        out += fmt::format("  no reference for: {}\n", join(report.unmatched_runs, ", "));
    }
    std::size_t regressions = 0;
    for (const ReferenceCheck& check : report.checks) {
        regressions += check.verdict == ReferenceVerdict::regression || check.verdict == ReferenceVerdict::missing ? 1 : 0;
    }
    out += report.failed() ? fmt::format("  FAILED: {} of {} checks\n", regressions, report.checks.size())
                           : fmt::format("  passed: {} checks\n", report.checks.size());
    return out;
}

Json reference_report_to_json(const ReferenceReport& report) {
    Json checks = Json::array();
    for (const ReferenceCheck& check : report.checks) {
        checks.push_back(Json(Json::Object{{"run", check.run},
                                           {"metric", check.metric},
                                           {"measured", check.measured ? Json(*check.measured) : Json()},
                                           {"unit", check.unit},
                                           {"expected", check.expected},
                                           {"verdict", to_string(check.verdict)},
                                           {"detail", check.detail},
                                           {"reference", check.location}}));
    }
    return Json(
        Json::Object{{"checks", checks}, {"unmatched_runs", json_string_array(report.unmatched_runs)}, {"failed", report.failed()}});
}

ReproductionVerdict reproduction_verdict(const ComparedRun& original, const ComparedRun& reproduced) {
    ReproductionVerdict out;
    for (const auto& [name, metric] : original.metrics) {
        const auto other = reproduced.metrics.find(name);
        if (metric.value && other != reproduced.metrics.end() && other->second.value) {
            out.changes.push_back({name, metric.unit, *metric.value, *other->second.value});
        }
    }
    const std::vector<double> before = step_series(original.detail);
    const std::vector<double> after = step_series(reproduced.detail);
    out.original_steps = before.size();
    out.reproduced_steps = after.size();
    if (before.size() < 2 || after.size() < 2) {
        out.why = fmt::format("too few steps to know the noise ({} in the bundle, {} in the reproduction; 2 each at least)",
                              before.size(), after.size());
        return out;
    }
    out.judged = true;
    out.original_step = mean_of(before);
    out.reproduced_step = mean_of(after);
    out.noise = 2 * std::sqrt(variance_of(before) / static_cast<double>(before.size()) +
                              variance_of(after) / static_cast<double>(after.size()));
    out.within_noise = std::fabs(*out.reproduced_step - *out.original_step) <= out.noise;
    return out;
}

std::string reproduction_verdict_text(const ReproductionVerdict& verdict) {
    std::string out;
    if (!verdict.judged) {
        out = fmt::format("reproduction: not judged: {}\n", verdict.why);
    } else {
        const double base = *verdict.original_step;
        out = fmt::format("{}: step time {} s vs the bundle's {} s ({:+.1f} %; noise ±{:.1f} %, from {} and {} steps)\n",
                          verdict.within_noise ? "reproduced within noise" : "NOT reproduced within noise",
                          number_text(*verdict.reproduced_step), number_text(base), (*verdict.reproduced_step - base) / base * 100,
                          verdict.noise / base * 100, verdict.original_steps, verdict.reproduced_steps);
    }
    for (const auto& change : verdict.changes) {
        out += fmt::format("  {:<26} {} {} (bundle: {}{})\n", change.metric, number_text(change.reproduced), change.unit,
                           number_text(change.original),
                           change.original != 0
                               ? fmt::format(", {:+.1f} %", (change.reproduced - change.original) / std::fabs(change.original) * 100)
                               : std::string());
    }
    return out;
}

Json reproduction_verdict_to_json(const ReproductionVerdict& verdict) {
    Json changes = Json::object();
    for (const auto& change : verdict.changes) {
        changes[change.metric] = Json(
            Json::Object{{"bundle", change.original}, {"reproduced", change.reproduced}, {"unit", change.unit}});
    }
    return Json(Json::Object{{"judged", verdict.judged},
                             {"within_noise", verdict.judged ? Json(verdict.within_noise) : Json()},
                             {"bundle_step_time", verdict.original_step ? Json(*verdict.original_step) : Json()},
                             {"reproduced_step_time", verdict.reproduced_step ? Json(*verdict.reproduced_step) : Json()},
                             {"noise", verdict.judged ? Json(verdict.noise) : Json()},
                             {"bundle_steps", static_cast<long long>(verdict.original_steps)},
                             {"reproduced_steps", static_cast<long long>(verdict.reproduced_steps)},
                             {"why", verdict.why},
                             {"metrics", changes}});
}

} // namespace harness
