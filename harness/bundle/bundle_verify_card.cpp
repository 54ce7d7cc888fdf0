#include "bundle/bundle_verify_checks.hpp"

#include "card/card.hpp"
#include "card/pyyaml_reading.hpp"
#include "card/schema.hpp"
#include "card/yaml_document.hpp"
#include "metrics/nsys_sqlite.hpp"
#include "plan/validate.hpp"
#include "trace/rank_set.hpp"
#include "trace/trace_names.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <set>

namespace harness::verify_checks {

namespace {

const std::set<std::string> k_kineto_kinds = {"json", "kineto_trace"};
const std::set<std::string> k_xla_kinds = {"json_tpu", "xla_trace", "tpu_profiler"};
const std::set<std::string> k_nsys_kinds = {"nsys"};

/// "kineto_trace_0..7", "kineto_trace_3", or "kineto_trace_0, 2, 5".
std::string describe_ranks(const std::vector<long long>& ranks) {
    const bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<long long>(ranks.size());
    if (contiguous) {
        return ranks.size() == 1 ? fmt::format("kineto_trace_{}", ranks.front())
                                 : fmt::format("kineto_trace_{}..{}", ranks.front(), ranks.back());
    }
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) {
        shown.push_back(std::to_string(ranks[i]));
    }
    return fmt::format("kineto_trace_{}{}", join(shown, ", "), ranks.size() > shown.size() ? ", ..." : "");
}

// ---- the card ----

std::string relative_location(const std::string& location, const fs::path& dir) {
    const std::string prefix = dir.string() + "/";
    return location.rfind(prefix, 0) == 0 ? location.substr(prefix.size()) : location;
}

/// metric_source.traces as written: a list, or one value.
std::vector<std::string> listed_traces(const YAML::Node& root) {
    const YAML::Node node = find_node(root, "metric_source.traces");
    std::vector<std::string> kinds;
    if (node.IsSequence()) {
        for (const YAML::Node& item : node) {
            kinds.push_back(scalar_text(item));
        }
    } else if (node.IsScalar()) {
        kinds.push_back(scalar_text(node));
    }
    return kinds;
}

/// xpu_spec.total_count when it is a positive integer, else 0 (validation reports why).
long long total_count(const YAML::Node& root) {
    const std::string text = scalar_text(find_node(root, "workload.hardware.xpu_spec.total_count"));
    if (text.empty() || text.size() > 18 || !all_digits(text)) {
        return 0;
    }
    return std::stoll(text);
}

/// "card.yaml:12:3" for a field of the card, relative to the bundle.
std::string where(const YamlDocument& doc, const fs::path& dir, const std::string& field) {
    return relative_location(doc.location(find_node(doc.root(), field), field), dir);
}

/// The kinds of trace a bundle holds, as metric_source.traces names them.
struct HeldTraces {
    std::vector<long long> ranks; ///< of kineto_trace_<rank>.json, sorted
    bool xla = false;
    bool nsys = false;
};

HeldTraces held_traces(const BundleReport& report, const std::vector<std::string>& files) {
    HeldTraces held;
    for (const BundleTrace& trace : report.traces) {
        if (const long long rank = kineto_trace_rank(trace.path); rank >= 0) {
            held.ranks.push_back(rank);
        } else {
            held.xla = true;
        }
    }
    std::sort(held.ranks.begin(), held.ranks.end());
    held.ranks.erase(std::unique(held.ranks.begin(), held.ranks.end()), held.ranks.end());
    held.nsys = std::any_of(files.begin(), files.end(), [](const std::string& file) {
        const TraceName name = classify_trace_name(file);
        return file.find('/') == std::string::npos && name.canonical &&
               (name.kind == TraceKind::nsys_rep || name.kind == TraceKind::nsys_sqlite);
    });
    return held;
}

void check_trace_url(const YamlDocument& doc, const fs::path& dir, BundleReport& report) {
    const std::string trace_url = scalar_text(find_node(doc.root(), "trace_url"));
    const std::string archive_name = report.name + ".tar.zst";
    if (trace_url != archive_name) {
        report.problems.push_back({where(doc, dir, "trace_url"),
                                   fmt::format("trace_url: {}, expected {} (the bundle's archive)",
                                               trace_url.empty() ? "empty" : json_string(trace_url), json_string(archive_name))});
    }
}

bool lists_any(const std::vector<std::string>& listed, const std::set<std::string>& kinds) {
    return std::any_of(listed.begin(), listed.end(), [&](const std::string& kind) { return kinds.count(kind) != 0; });
}

/// metric_source.traces must say truthfully which kinds of trace the bundle holds.
void check_trace_kinds(const YamlDocument& doc, const fs::path& dir, const HeldTraces& held, BundleReport& report) {
    const std::vector<std::string> listed = listed_traces(doc.root());
    const auto check = [&](bool holds, const std::set<std::string>& kinds, const char* kind, const char* files) {
        if (holds == lists_any(listed, kinds)) {
            return;
        }
        report.problems.push_back({where(doc, dir, "metric_source.traces"),
                                   holds ? fmt::format("metric_source.traces lists {}, but the bundle holds {}: add {}",
                                                       listed.empty() ? "nothing" : join(listed, ", "), files, kind)
                                         : fmt::format("metric_source.traces lists {}, but the bundle holds no {}", kind, files)});
    };
    check(!held.ranks.empty(), k_kineto_kinds, "json", "kineto_trace_<rank>.json");
    check(held.xla, k_xla_kinds, "json_tpu", "<host>.trace.json(.gz)");
    check(held.nsys, k_nsys_kinds, "nsys", "nsys_<rank>.nsys-rep");
}

/// A card that lists nsys promises kernels the metrics can read: each nsys_<rank>.sqlite must open
/// and hold a kernel table, and a report without its export is one the metrics cannot read.
void check_nsys_exports(const YamlDocument& doc, const fs::path& dir, const std::vector<std::string>& files, BundleReport& report) {
    if (!lists_any(listed_traces(doc.root()), k_nsys_kinds)) {
        return;
    }
    std::set<std::string> exports;
    for (const std::string& file : files) {
        const TraceName name = classify_trace_name(file);
        if (file.find('/') == std::string::npos && name.kind == TraceKind::nsys_sqlite) {
            exports.insert(file);
        }
    }
    for (const std::string& file : files) {
        const TraceName name = classify_trace_name(file);
        if (file.find('/') != std::string::npos || !name.canonical) {
            continue;
        }
        if (name.kind == TraceKind::nsys_rep && name.rank &&
            exports.count(canonical_trace_name(TraceKind::nsys_sqlite, *name.rank, false)) == 0) {
            report.warnings.push_back(
                {file, fmt::format("metric_source.traces lists nsys, but {} has no SQLite export beside it ({}): "
                                   "the metrics cannot read a report (nsys export --type=sqlite)",
                                   file, canonical_trace_name(TraceKind::nsys_sqlite, *name.rank, false))});
        }
        // A link is check_manifest's to report, and never followed.
        if (name.kind != TraceKind::nsys_sqlite || !fs::is_regular_file(fs::symlink_status(dir / file))) {
            continue;
        }
        const metrics::NsysCheck check = metrics::check_nsys_sqlite(dir / file);
        if (!check.problem.empty()) {
            report.warnings.push_back({file, fmt::format("metric_source.traces lists nsys, but the metrics cannot read kernels "
                                                         "from {}: {}",
                                                         file, check.problem)});
        }
    }
}

/// metric_source.ranks_present as written: ascending ranks, each once; nothing (the problem
/// recorded) when it is not that.
std::optional<std::vector<long long>> claimed_ranks(const YamlDocument& doc, const fs::path& dir, const YAML::Node& node,
                                                    BundleReport& report) {
    const std::string field = std::string("metric_source.") + k_ranks_present_key;
    std::vector<long long> ranks;
    bool ok = node.IsSequence() && node.size() > 0;
    for (std::size_t i = 0; ok && i < node.size(); ++i) {
        long long rank = -1;
        ok = read_int(node[i], rank) && rank >= 0 && (ranks.empty() || rank > ranks.back());
        ranks.push_back(rank);
    }
    if (!ok) {
        report.problems.push_back({where(doc, dir, field), fmt::format("{}: expected the traced ranks in ascending order, each "
                                                                       "once ([0] or [0, 2])",
                                                                       field)});
        return std::nullopt;
    }
    return ranks;
}

/// A partial bundle: the rank traces held are exactly the ranks the card claims, a part of
/// total_count's.
void check_partial_ranks(const YamlDocument& doc, const fs::path& dir, const HeldTraces& held, const YAML::Node& node,
                         BundleReport& report) {
    const std::string field = std::string("metric_source.") + k_ranks_present_key;
    const std::optional<std::vector<long long>> claimed = claimed_ranks(doc, dir, node, report);
    const long long total = total_count(doc.root());
    if (!claimed || total <= 0) {
        return; // validation reports a total_count that is no count
    }
    report.ranks_present = *claimed;
    report.total_count = total;
    const std::string claim = describe_partial_ranks(*claimed, total);
    if (claimed->back() >= total || static_cast<long long>(claimed->size()) >= total) {
        report.problems.push_back(
            {where(doc, dir, field),
             claimed->back() >= total
                 ? fmt::format("{}: rank {} is outside the card's total_count: {}", field, claimed->back(), total)
                 : fmt::format("{}: names every rank of {}; a bundle with every rank's trace leaves it out", field, total)});
        return;
    }
    std::vector<std::string> lacking;
    for (const long long rank : *claimed) {
        if (!std::binary_search(held.ranks.begin(), held.ranks.end(), rank)) {
            lacking.push_back(fmt::format("kineto_trace_{}.json", rank));
        }
    }
    if (!lacking.empty()) {
        report.problems.push_back(
            {where(doc, dir, field), fmt::format("{} claims {}, but the bundle has no {}", field, claim, join(lacking, ", "))});
    }
    for (const BundleTrace& trace : report.traces) {
        if (const long long rank = kineto_trace_rank(trace.path);
            rank >= 0 && !std::binary_search(claimed->begin(), claimed->end(), rank)) {
            report.problems.push_back({trace.path, fmt::format("a trace of rank {}, which the card's {} ({}) does not claim", rank,
                                                               field, format_rank_list(*claimed))});
        }
    }
}

/// Every rank is traced, unless the card says which were (metric_source.ranks_present, a partial
/// bundle's: check_partial_ranks) or the plan says its framework profiles rank 0 only.
void check_rank_count(const YamlDocument& doc, const fs::path& dir, const HeldTraces& held, const PlannedTraces& planned,
                      BundleReport& report) {
    if (const YAML::Node claimed = find_node(doc.root(), std::string("metric_source.") + k_ranks_present_key);
        claimed.IsDefined() && !claimed.IsNull()) {
        check_partial_ranks(doc, dir, held, claimed, report);
        return;
    }
    const long long total = total_count(doc.root());
    const std::vector<long long>& ranks = held.ranks;
    if (total <= 0 || (ranks.empty() && !lists_any(listed_traces(doc.root()), k_kineto_kinds))) {
        return;
    }
    if (planned.rank0_only) {
        if (ranks != std::vector<long long>{0}) {
            report.problems.push_back({"kineto_trace_0.json",
                                       "the plan traces rank 0 only (framework_config.torch_profiler_ranks), but the "
                                       "bundle's rank traces are not exactly kineto_trace_0"});
        }
        return;
    }
    if (static_cast<long long>(ranks.size()) != total) {
        report.problems.push_back(
            {where(doc, dir, "workload.hardware.xpu_spec.total_count"),
             ranks.empty()
                 ? fmt::format("card says total_count: {} but the bundle has no rank traces (kineto_trace_<rank>.json)", total)
                 : fmt::format("card says total_count: {} but the bundle has {} rank trace{} ({})", total, ranks.size(),
                               ranks.size() == 1 ? "" : "s", describe_ranks(ranks))});
        return;
    }
    for (const long long rank : ranks) {
        if (rank >= total) {
            report.problems.push_back(
                {fmt::format("kineto_trace_{}.json", rank),
                 fmt::format("rank {} is outside the card's total_count: {} (ranks 0..{})", rank, total, total - 1)});
        }
    }
}

/// The card as the CCL-Bench tools read it (yaml.safe_load, card/pyyaml_reading.hpp): what loses
/// its meaning there, or keeps the card from loading at all, is a problem; a change of type alone
/// (a date where the harness reads text) is a warning.
void check_pyyaml_reading(const fs::path& card_path, const YamlDocument& doc, const fs::path& dir, BundleReport& report) {
    const Diagnostics found = pyyaml_reading(read_file(card_path), doc, card_schema());
    for (const Diagnostic& d : found.items()) {
        BundleProblem problem{relative_location(d.location, dir), d.field.empty() ? d.message : d.field + ": " + d.message};
        (d.severity == Severity::error ? report.problems : report.warnings).push_back(std::move(problem));
    }
}

} // namespace

void check_card(const fs::path& dir, const std::vector<std::string>& files, const PlannedTraces& planned, BundleReport& report) {
    const std::string card_name = report.name + ".yaml";
    const fs::path card_path = dir / card_name;
    const fs::file_status status = fs::symlink_status(card_path);
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        return; // a link or special file: check_manifest reports it, and it is never followed
    }
    if (!fs::exists(status)) {
        std::vector<std::string> others;
        for (const std::string& file : files) {
            if (file.find('/') == std::string::npos && (ends_with(file, ".yaml") || ends_with(file, ".yml"))) {
                others.push_back(file);
            }
        }
        report.problems.push_back(
            {card_name, others.empty()
                            ? "missing (the effective workload card)"
                            : fmt::format("missing: the card must be named after the bundle (found {})", join(others, ", "))});
        return;
    }
    const ValidationResult validation = validate_file(card_path, ValidateOptions{});
    for (const Diagnostic& d : validation.diagnostics.items()) {
        if (d.severity == Severity::error) {
            const std::string location = relative_location(d.location, dir);
            report.problems.push_back(
                {location.empty() ? card_name : location, d.field.empty() ? d.message : d.field + ": " + d.message});
        }
    }
    if (validation.unreadable) {
        return;
    }
    try {
        // Read as written, so that these are found even when the card has other errors.
        const YamlDocument doc = YamlDocument::load(card_path);
        const HeldTraces held = held_traces(report, files);
        check_trace_url(doc, dir, report);
        check_trace_kinds(doc, dir, held, report);
        check_nsys_exports(doc, dir, files, report);
        check_rank_count(doc, dir, held, planned, report);
        check_pyyaml_reading(card_path, doc, dir, report);
    } catch (const HarnessError&) {
        // validate_file has reported why the card cannot be read.
    }
}

} // namespace harness::verify_checks
