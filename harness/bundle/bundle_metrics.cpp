#include "bundle/bundle_metrics.hpp"

#include "bundle/bundle_unpack.hpp"
#include "bundle/input_path.hpp"
#include "metrics/metrics.hpp"
#include "util/scratch_dir.hpp"

#include <cmath>
#include <fmt/format.h>

namespace harness {

Json bundle_metrics(const fs::path& dir) {
    const metrics::MetricsReport report = metrics::compute_metrics(dir, metrics::MetricsOptions{});
    Json values = Json::object();
    for (const metrics::MetricValue& metric : report.metrics) {
        Json entry = Json::object();
        entry["value"] = metric.value ? Json(*metric.value) : Json();
        entry["unit"] = metric.unit;
        entry["why"] = metric.why;
        if (!metric.implausible.empty()) {
            // Only then: a plausible run's metrics.json stays as it always was.
            entry["implausible"] = metric.implausible;
        }
        values[metric.metric] = std::move(entry);
    }
    Json out = Json::object();
    out["format"] = 1;
    out["mode"] = "default";
    out["metrics"] = std::move(values);
    if (!report.device_mismatch.empty()) {
        out["device_mismatch"] = report.device_mismatch;
    }
    return out;
}

std::vector<std::string> compare_bundle_metrics(const Json& stored, const Json& recomputed) {
    std::vector<std::string> problems;
    const Json* stored_metrics = stored.find("metrics");
    if (stored.find("format") == nullptr || !stored.find("format")->is_int() || stored.find("format")->as_int() != 1) {
        problems.emplace_back("format: expected 1");
    }
    if (stored_metrics == nullptr || !stored_metrics->is_object()) {
        problems.emplace_back("metrics: expected an object of metric name -> {value, unit, why}");
        return problems;
    }
    const Json::Object& want = recomputed.find("metrics")->as_object();
    for (const auto& [name, entry] : want) {
        const Json* have = stored_metrics->find(name);
        if (have == nullptr) {
            continue; // metrics_not_stored's
        }
        if (!have->is_object()) {
            problems.push_back(fmt::format("{}: expected an object of {{value, unit, why}}", name));
            continue;
        }
        const Json* stored_value = have->find("value");
        const Json* recomputed_value = entry.find("value");
        const bool stored_applies = stored_value != nullptr && stored_value->is_number();
        const bool recomputed_applies = recomputed_value != nullptr && recomputed_value->is_number();
        if (stored_applies != recomputed_applies) {
            problems.push_back(fmt::format("{}: stored {}, the traces give {}", name,
                                           stored_applies ? fmt::format("{}", stored_value->as_double()) : std::string("n/a"),
                                           recomputed_applies ? fmt::format("{}", recomputed_value->as_double())
                                                              : "n/a (" + entry.string_or("why") + ")"));
            continue;
        }
        if (stored_applies) {
            const double a = stored_value->as_double();
            const double b = recomputed_value->as_double();
            if (std::fabs(a - b) > 1e-9 * std::max(std::fabs(a), std::fabs(b))) {
                problems.push_back(fmt::format("{}: stored {:.17g}, the traces give {:.17g}", name, a, b));
            }
        }
    }
    for (const auto& [name, entry] : stored_metrics->as_object()) {
        if (want.count(name) == 0) {
            problems.push_back(fmt::format("{}: not a metric this harness computes", name));
        }
    }
    return problems;
}

metrics::MetricsReport metrics_of_input(const fs::path& path, const metrics::MetricsOptions& options) {
    if (classify_input(path).kind != InputKind::packed_bundle) {
        return metrics::compute_metrics(path, options);
    }
    const ScratchDir scratch({}, "metrics");
    const fs::path unpacked = scratch.path() / "bundle";
    const std::string shown = path.string() + ":";
    metrics::MetricsReport report;
    try {
        report = metrics::compute_metrics(unpack_bundle(path, unpacked), options);
    } catch (const ScratchSpaceError&) {
        throw; // a full $TMPDIR: the message names it, not the bundle
    } catch (const HarnessError& error) {
        throw HarnessError(with_scratch_paths_shown(error.what(), unpacked, shown), error.code());
    }
    for (metrics::MetricValue& metric : report.metrics) {
        metric.why = with_scratch_paths_shown(std::move(metric.why), unpacked, shown);
        for (std::string& note : metric.notes) {
            note = with_scratch_paths_shown(std::move(note), unpacked, shown);
        }
    }
    for (std::string& note : report.notes) {
        note = with_scratch_paths_shown(std::move(note), unpacked, shown);
    }
    report.path = path;
    if (report.card) {
        report.card = fs::relative(*report.card, unpacked);
    }
    for (auto& rank : report.ranks) {
        rank.file = fs::relative(rank.file, unpacked);
    }
    return report;
}

std::vector<std::string> metrics_not_stored(const Json& stored, const Json& recomputed) {
    std::vector<std::string> names;
    const Json* stored_metrics = stored.find("metrics");
    if (stored_metrics == nullptr || !stored_metrics->is_object()) {
        return names; // compare_bundle_metrics says what is wrong with it
    }
    for (const auto& [name, entry] : recomputed.find("metrics")->as_object()) {
        if (stored_metrics->find(name) == nullptr) {
            names.push_back(name);
        }
    }
    return names;
}

} // namespace harness
