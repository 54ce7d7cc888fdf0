// The metrics report for scripts (JSON) and for people (a table).
#include "metrics/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace harness::metrics {

namespace {

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(); }

Json value_json(const MetricValue& value) {
    Json out = Json::object();
    out["value"] = optional_number(value.value);
    out["unit"] = value.unit;
    out["basis"] = value.basis;
    if (!value.value) {
        out["why"] = value.why;
    }
    Json per_rank = Json::array();
    for (const auto& rank : value.per_rank) {
        per_rank.push_back(optional_number(rank));
    }
    out["per_rank"] = per_rank;
    if (!value.parts.empty()) {
        Json parts = Json::object();
        for (const auto& [name, bytes] : value.parts) {
            parts[name] = bytes;
        }
        out["by_collective"] = parts;
    }
    if (!value.notes.empty()) {
        out["notes"] = json_string_array(value.notes);
    }
    if (!value.implausible.empty()) {
        out["implausible"] = value.implausible;
    }
    return out;
}

std::string human_bytes(double bytes) {
    static const char* k_units[] = {"B", "KB", "MB", "GB", "TB"};
    std::size_t unit = 0;
    while (std::fabs(bytes) >= 1000 && unit + 1 < std::size(k_units)) {
        bytes /= 1000;
        ++unit;
    }
    return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.4g} {}", bytes, k_units[unit]);
}

std::string format_value(const MetricValue& value) {
    if (!value.value) {
        return "n/a";
    }
    const double v = *value.value;
    if (value.unit == "bytes") {
        return human_bytes(v);
    }
    if (value.unit == "ratio") {
        return fmt::format("{:.6g}", v);
    }
    return fmt::format("{:.6g} {}", v, value.unit);
}

std::string format_rank_value(const MetricValue& value, const std::optional<double>& v) {
    if (!v) {
        return "-";
    }
    return value.unit == "bytes" ? human_bytes(*v) : fmt::format("{:.6g}", *v);
}

std::string shorten(const std::string& text, std::size_t width) {
    return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

} // namespace

Json metrics_to_json(const MetricsReport& report) {
    Json out = Json::object();
    out["path"] = report.path.string();
    out["layout"] = report.layout;
    out["card"] = report.card ? Json(report.card->string()) : Json();
    out["mode"] = report.reference ? "reference" : "default";
    out["partial"] = report.partial.empty() ? Json() : Json(report.partial);
    out["device_mismatch"] = report.device_mismatch.empty() ? Json() : Json(report.device_mismatch);
    Json ranks = Json::array();
    for (const RankSummary& rank : report.ranks) {
        Json r = Json::object();
        r["rank"] = rank.rank;
        r["file"] = rank.file.string();
        r["format"] = rank.format;
        r["compressed"] = rank.compressed;
        r["basis"] = rank.basis;
        r["bytes"] = static_cast<long long>(rank.bytes);
        r["events"] = static_cast<long long>(rank.events);
        r["kernels"] = static_cast<long long>(rank.kernels);
        r["host_ops"] = static_cast<long long>(rank.host_ops);
        r["xla_ops"] = static_cast<long long>(rank.xla_ops);
        r["steps"] = static_cast<long long>(rank.steps);
        r["devices"] = json_string_array(rank.devices);
        r["step_source"] = rank.step_source;
        r["in_default"] = rank.in_default;
        r["in_reference"] = rank.in_reference;
        ranks.push_back(r);
    }
    out["ranks"] = ranks;
    out["ranks_held_at_once"] = static_cast<long long>(report.ranks_held_at_once);
    Json metrics = Json::object();
    for (const MetricValue& value : report.metrics) {
        metrics[value.metric] = value_json(value);
    }
    out["metrics"] = metrics;
    Json disagreements = Json::array();
    for (const Disagreement& d : report.disagreements) {
        Json entry = Json::object();
        entry["metric"] = d.metric;
        entry["default"] = value_json(d.standard);
        entry["reference"] = value_json(d.reference);
        entry["pattern"] = d.pattern.empty() ? Json() : Json(d.pattern);
        Json kernels = Json::array();
        for (const KernelDisagreement& k : d.kernels) {
            Json kernel = Json::object();
            kernel["name"] = k.name;
            kernel["default"] = k.standard;
            kernel["reference"] = k.reference;
            kernel["count"] = static_cast<long long>(k.count);
            kernel["time_us"] = k.time_us;
            kernels.push_back(kernel);
        }
        entry["kernels"] = kernels;
        entry["more_kernels"] = static_cast<long long>(d.more_kernels);
        disagreements.push_back(entry);
    }
    out["disagreements"] = disagreements;
    out["notes"] = json_string_array(report.notes);
    return out;
}

std::string metrics_table(const MetricsReport& report) {
    const auto counted = static_cast<std::size_t>(
        std::count_if(report.ranks.begin(), report.ranks.end(),
                      [&](const RankSummary& rank) { return report.reference ? rank.in_reference : rank.in_default; }));
    std::string out = fmt::format("metrics of {} ({}, {} rank trace{}{})\nmode: {}\n\n", report.path.string(), report.layout, counted,
                                  counted == 1 ? "" : "s", report.card ? ", card " + report.card->filename().string() : ", no card",
                                  report.reference ? "reference (the CCL-Bench Python tools, bug for bug)"
                                                   : "default (one kernel classifier)");
    if (!report.partial.empty()) {
        out.insert(out.size() - 1, fmt::format("partial: {} traced (the card's metric_source.ranks_present){}\n", report.partial,
                                               report.reference ? "; --reference reads what is there, as the tools do" : ""));
    }
    out += fmt::format("{:>5}  {:<28}  {:<16}  {:<26}  {:>9}  {}\n", "rank", "file", "format", "measured", "events", "steps");
    for (const RankSummary& rank : report.ranks) {
        if (!(report.reference ? rank.in_reference : rank.in_default)) {
            continue;
        }
        out += fmt::format("{:>5}  {:<28}  {:<16}  {:<26}  {:>9}  {}\n", rank.rank, shorten(rank.file.filename().string(), 28),
                           rank.format + (rank.compressed ? " gz" : ""), rank.basis, rank.events,
                           rank.steps == 0 ? std::string("none") : fmt::format("{} ({})", rank.steps, rank.step_source));
    }
    out += fmt::format("\n{:<26}  {:<16}  {}\n", "metric", "value", "per rank / why");
    for (const MetricValue& value : report.metrics) {
        std::string detail;
        if (!value.value) {
            detail = value.why;
        } else {
            for (std::size_t r = 0; r < value.per_rank.size() && r < report.ranks.size(); ++r) {
                const RankSummary& rank = report.ranks[r];
                if (value.per_rank[r] || (rank.format != "not-a-trace" && (report.reference ? rank.in_reference : rank.in_default))) {
                    detail += fmt::format("{}{}={}", detail.empty() ? "" : "  ", report.ranks[r].rank,
                                          format_rank_value(value, value.per_rank[r]));
                }
            }
            if (std::none_of(value.per_rank.begin(), value.per_rank.end(), [](const auto& v) { return v.has_value(); })) {
                detail.clear();
            }
            if (!value.basis.empty()) {
                detail += fmt::format("  [{}]", value.basis);
            }
        }
        out += fmt::format("{:<26}  {:<16}  {}\n", value.metric, format_value(value), detail);
        for (const auto& [name, bytes] : value.parts) {
            out += fmt::format("{:<26}  {:<16}  {}\n", "", human_bytes(bytes), name);
        }
        for (const auto& note : value.notes) {
            out += fmt::format("{:<26}  {:<16}  note: {}\n", "", "", note);
        }
        if (!value.implausible.empty()) {
            out += fmt::format("{:<26}  {:<16}  IMPLAUSIBLE: {}\n", "", "", value.implausible);
        }
    }
    if (!report.disagreements.empty()) {
        out += fmt::format("\nThe default classifier and the CCL-Bench reference disagree:\n");
        for (const Disagreement& d : report.disagreements) {
            out += fmt::format("  {}: default {}, reference {}\n", d.metric,
                               d.standard.value ? format_value(d.standard) : "n/a (" + d.standard.why + ")",
                               d.reference.value ? format_value(d.reference) : "n/a (" + d.reference.why + ")");
            if (!d.kernels.empty()) {
                out += fmt::format("    kernels classified differently (reference pattern /{}/i):\n", d.pattern);
            }
            for (const KernelDisagreement& k : d.kernels) {
                out += fmt::format("    {:>5} x {:>10.3f} ms  reference: {:<13}  default: {:<18}  {}\n", k.count, k.time_us / 1e3,
                                   k.reference, k.standard, shorten(k.name, 100));
            }
            if (d.more_kernels > 0) {
                out += fmt::format("    ... and {} more kernel name(s) (see --json)\n", d.more_kernels);
            }
            // No kernel to blame (the tool reads other files or other kernels): its notes say why.
            if (d.kernels.empty() && !report.reference) {
                for (const auto& note : d.reference.notes) {
                    out += fmt::format("    reference: {}\n", note);
                }
            }
        }
    }
    for (const auto& note : report.notes) {
        out += fmt::format("note: {}\n", note);
    }
    return out;
}

} // namespace harness::metrics
