#include "bundle/bundle_verify.hpp"

#include "bundle/bundle_manifest.hpp"
#include "bundle/bundle_metrics.hpp"
#include "bundle/input_path.hpp"
#include "card/yaml_document.hpp"
#include "plan/validate.hpp"
#include "provenance/provenance.hpp"
#include "run/run_directory.hpp"
#include "trace/trace_names.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <simdjson.h>

namespace harness {

namespace {

using Problems = std::vector<BundleProblem>;

const std::set<std::string> k_kineto_kinds = {"json", "kineto_trace"};
const std::set<std::string> k_xla_kinds = {"json_tpu", "xla_trace", "tpu_profiler"};
const std::set<std::string> k_nsys_kinds = {"nsys"};

void check_interrupt() {
    if (interrupt_signal() != 0) {
        throw HarnessError("interrupted", k_exit_interrupted);
    }
}

// ---- the input: an archive or a directory ----

/// The extractor's message without the archive path it starts with (the report names it).
std::string without_archive_prefix(const std::string& what, const fs::path& archive) {
    const std::string prefix = archive.string() + ": ";
    return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

struct ArchiveReadFree {
    void operator()(archive* a) const { archive_read_free(a); }
};

/// Why the zstd stream cannot be read to its end, or empty when it can: this is what tells a
/// truncated or damaged bundle (a problem with the submission, exit 1) from an intact archive
/// the extractor refused (unsafe or not a tar: unusable input, exit 2). Nothing is written, and
/// reading stops where the extractor's expansion limits would, so a bomb costs no more here
/// than an honest archive of its size.
std::string zstd_stream_damage(const fs::path& archive_path) {
    const ExtractLimits limits;
    std::error_code ec;
    const std::uint64_t compressed = fs::file_size(archive_path, ec);
    const std::unique_ptr<archive, ArchiveReadFree> a(archive_read_new());
    if (!a) {
        return {};
    }
    archive_read_support_filter_zstd(a.get());
    archive_read_support_format_raw(a.get());
    const auto la_error = [&] {
        const char* message = archive_error_string(a.get());
        return std::string(message != nullptr ? message : "unreadable");
    };
    archive_entry* entry = nullptr;
    if (archive_read_open_filename(a.get(), archive_path.c_str(), std::size_t{1} << 20) != ARCHIVE_OK ||
        archive_read_next_header(a.get(), &entry) != ARCHIVE_OK) {
        return la_error();
    }
    std::vector<char> chunk(std::size_t{1} << 20);
    std::uint64_t total = 0;
    for (;;) {
        check_interrupt();
        const la_ssize_t n = archive_read_data(a.get(), chunk.data(), chunk.size());
        if (n < 0) {
            return la_error();
        }
        if (n == 0) {
            return {};
        }
        total += static_cast<std::uint64_t>(n);
        if (total > limits.max_bytes ||
            (total > limits.ratio_floor && static_cast<double>(total) > limits.max_ratio * static_cast<double>(compressed))) {
            return {};
        }
    }
}

std::vector<fs::path> list_directory(const fs::path& dir) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        entries.push_back(it->path());
    }
    if (ec) {
        throw input_error(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
    }
    std::sort(entries.begin(), entries.end());
    return entries;
}

bool is_real_directory(const fs::path& path) {
    std::error_code ec;
    return fs::is_directory(fs::symlink_status(path, ec));
}

/// The one directory an unpacked archive must hold, or empty with the problem recorded.
fs::path single_top_directory(const fs::path& unpacked, Problems& problems) {
    const std::vector<fs::path> entries = list_directory(unpacked);
    if (entries.size() == 1 && is_real_directory(entries.front())) {
        return entries.front();
    }
    if (entries.empty()) {
        problems.push_back({"", "the archive is empty; a bundle holds one directory, <name>/"});
        return {};
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < entries.size() && i < 5; ++i) {
        names.push_back(entries[i].filename().string() + (is_real_directory(entries[i]) ? "/" : ""));
    }
    if (entries.size() > names.size()) {
        names.push_back(fmt::format("and {} more", entries.size() - names.size()));
    }
    problems.push_back({"", fmt::format("a bundle archive holds exactly one directory, <name>/, at its top level; this one holds {}",
                                        join(names, ", "))});
    return {};
}

// ---- reading the bundle's JSON records ----

/// A parsed JSON file, or the problem that kept it from parsing (recorded under its name).
struct JsonRecord {
    simdjson::dom::parser parser;
    simdjson::dom::object root;
    bool ok = false;
};

void load_record(const fs::path& dir, const std::string& name, const std::string& what, JsonRecord& record, Problems& problems) {
    const fs::path path = dir / name;
    const fs::file_status status = fs::symlink_status(path);
    if (!fs::exists(status)) {
        problems.push_back({name, fmt::format("missing ({})", what)});
        return;
    }
    if (!fs::is_regular_file(status)) {
        return; // a link or special file: check_manifest reports it, and it is never followed
    }
    simdjson::padded_string text;
    if (const auto error = simdjson::padded_string::load(path.string()).get(text)) {
        problems.push_back({name, fmt::format("cannot read: {}", simdjson::error_message(error))});
        return;
    }
    simdjson::dom::element root;
    if (const auto error = record.parser.parse(text).get(root)) {
        problems.push_back({name, fmt::format("not valid JSON: {}", simdjson::error_message(error))});
        return;
    }
    if (root.get_object().get(record.root) != simdjson::SUCCESS) {
        problems.push_back({name, "not a JSON object"});
        return;
    }
    record.ok = true;
}

/// The string at `key`, or nullopt when absent or not a string.
std::optional<std::string_view> string_at(simdjson::dom::object object, std::string_view key) {
    std::string_view value;
    if (object[key].get_string().get(value) != simdjson::SUCCESS) {
        return std::nullopt;
    }
    return value;
}

// ---- provenance.json ----

/// The pins and format are provenance.hpp's check; whether the record is about this bundle is
/// verify's.
void check_provenance(const fs::path& dir, const std::string& name, Problems& problems) {
    for (const std::string& line : check_provenance_file(dir)) {
        const std::size_t colon = line.find(": ");
        problems.push_back(colon == std::string::npos ? BundleProblem{k_provenance_name, line}
                                                      : BundleProblem{line.substr(0, colon), line.substr(colon + 2)});
    }
    JsonRecord record;
    Problems ignored; // reported above
    load_record(dir, k_provenance_name, "", record, ignored);
    simdjson::dom::object run;
    if (record.ok && record.root["run"].get_object().get(run) == simdjson::SUCCESS) {
        if (const std::optional<std::string_view> id = string_at(run, "id"); id && *id != name) {
            problems.push_back(
                {k_provenance_name, fmt::format("run.id: {}, but the bundle is {}", json_string(*id), json_string(name))});
        }
        // reproduce names a file after run.card: a name that is not one plain file name is a
        // bundle made to write elsewhere, not a card name pack could have written.
        if (const std::optional<std::string_view> card = string_at(run, "card"); card && !card->empty()) {
            if (const std::string problem = file_name_problem(std::string(*card) + ".yaml"); !problem.empty()) {
                problems.push_back({k_provenance_name, fmt::format("run.card: {}: {}", json_string(*card), problem)});
            }
        }
    }
}

// ---- metrics.json ----

/// pack stores what the traces give; recomputing catches a number edited by hand or computed
/// from other traces. A bundle without metrics.json (made by hand) is not checked here; one whose
/// manifest lists it and lacks it is reported by check_manifest.
void check_metrics(const fs::path& dir, Problems& problems) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(dir / k_metrics_name, ec))) {
        return;
    }
    Json stored;
    try {
        stored = Json::parse(read_file(dir / k_metrics_name));
    } catch (const std::exception& error) {
        problems.push_back({k_metrics_name, error.what()});
        return;
    }
    Json recomputed;
    try {
        recomputed = bundle_metrics(dir);
    } catch (const HarnessError& error) {
        problems.push_back({k_metrics_name, fmt::format("cannot recompute: {}", error.what())});
        return;
    }
    for (std::string& problem : compare_bundle_metrics(stored, recomputed)) {
        problems.push_back({k_metrics_name, std::move(problem)});
    }
}

// ---- run.json, scripts/ ----

void check_run_record(const fs::path& dir, const std::string& name, Problems& problems) {
    JsonRecord record;
    load_record(dir, run_files::k_record, "the run record", record, problems);
    if (!record.ok) {
        return;
    }
    const std::optional<std::string_view> state = string_at(record.root, "state");
    if (!state) {
        problems.push_back({run_files::k_record, "state: missing"});
    } else if (*state != "completed") {
        problems.push_back(
            {run_files::k_record, fmt::format("state is {}; only a completed run is a data point", json_string(*state))});
    }
    if (const std::optional<std::string_view> id = string_at(record.root, "run_id"); !id || *id != name) {
        problems.push_back({run_files::k_record,
                            fmt::format("run_id: {}, but the bundle is {}", id ? json_string(*id) : "missing", json_string(name))});
    }
}

void check_scripts(const fs::path& dir, const std::vector<std::string>& files, Problems& problems) {
    if (!is_real_directory(dir / "scripts")) {
        problems.push_back({"scripts/", "missing: the scripts that ran (the run directory's rendered/)"});
        return;
    }
    if (std::none_of(files.begin(), files.end(), [](const std::string& file) { return starts_with(file, "scripts/"); })) {
        problems.push_back({"scripts/", "empty: it should hold the scripts that ran (the run directory's rendered/)"});
    }
}

// ---- traces ----

void check_traces(const fs::path& dir, const std::vector<std::string>& files, BundleReport& report) {
    std::map<long long, std::string> rank_files; // kineto_trace_<r>.json and .json.gz share a rank
    for (const std::string& relative : files) {
        const std::string first = relative.substr(0, relative.find('/'));
        if (relative.find('/') == std::string::npos && is_trace_file_name(relative)) {
            check_interrupt();
            if (const long long rank = kineto_trace_rank(relative); rank >= 0) {
                if (const auto [at, fresh] = rank_files.emplace(rank, relative); !fresh) {
                    report.problems.push_back(
                        {relative, fmt::format("a second trace of rank {} (also {}): keep one", rank, at->second)});
                }
            }
            BundleTrace trace{relative, check_trace(dir / relative)};
            if (!trace.check.problem.empty()) {
                report.problems.push_back({relative, trace.check.problem});
            } else if (trace.check.form == "legacy-array") {
                report.problems.push_back({relative, "torch's legacy autograd array; the CCL-Bench tools read Kineto's "
                                                     "{\"traceEvents\": [...]} form (pack converts it)"});
            }
            report.traces.push_back(std::move(trace));
        } else if (first != "scripts" && first != "logs" && first != "accounting") {
            if (const std::string why = misplaced_trace_problem(relative); !why.empty()) {
                report.problems.push_back({relative, why});
            }
        }
    }
}

/// What the run's plan (scripts/plan.json) says its traces hold, read once for the checks below.
/// Bundles from before plan.json carried these, and hand-made bundles without one, have neither.
struct PlannedTraces {
    /// profile.traced_steps: ProfilerStep markers per Kineto trace; 0 when the plan counts none.
    std::int64_t steps = 0;
    /// framework_config.torch_profiler_ranks "0": the framework profiles rank 0 only (SGLang's
    /// bench_one_batch, harness/frameworks/sglang.cpp).
    bool rank0_only = false;
};

PlannedTraces read_planned_traces(const fs::path& dir) {
    PlannedTraces planned;
    if (!fs::is_regular_file(fs::symlink_status(dir / "scripts" / "plan.json"))) {
        return planned;
    }
    JsonRecord plan;
    Problems ignored; // a malformed plan.json is not a trace problem; the manifest vouches for it
    load_record(dir, "scripts/plan.json", "", plan, ignored);
    if (!plan.ok) {
        return planned;
    }
    if (plan.root["profile"]["traced_steps"].get_int64().get(planned.steps) != simdjson::SUCCESS || planned.steps < 0) {
        planned.steps = 0;
    }
    std::string_view ranks;
    planned.rank0_only = plan.root["framework_config"]["torch_profiler_ranks"].get_string().get(ranks) == simdjson::SUCCESS &&
                         ranks == "0";
    return planned;
}

/// The window the run was planned with against the ProfilerStep markers each Kineto trace holds:
/// a framework that traces one step more or less than the card says (an off-by-one schedule)
/// makes every per-step metric describe another run.
void check_window(const PlannedTraces& planned, BundleReport& report) {
    if (planned.steps <= 0) {
        return;
    }
    for (const BundleTrace& trace : report.traces) {
        if (trace.check.step_marker == "ProfilerStep#N" && static_cast<std::int64_t>(trace.check.steps) != planned.steps) {
            report.problems.push_back(
                {trace.path, fmt::format("{} ProfilerStep markers, but the run was planned to trace {} (scripts/plan.json "
                                         "profile.traced_steps, from the card's launch.profile.active)",
                                         trace.check.steps, planned.steps)});
        }
    }
}

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

/// Without a card field naming sampled ranks (CCL-Bench cards have none), every rank is traced,
/// unless the plan says its framework profiles rank 0 only.
void check_rank_count(const YamlDocument& doc, const fs::path& dir, const HeldTraces& held, const PlannedTraces& planned,
                      BundleReport& report) {
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
        check_rank_count(doc, dir, held, planned, report);
    } catch (const HarnessError&) {
        // validate_file has reported why the card cannot be read.
    }
}

// ---- the bundle directory ----

std::vector<std::string> list_files(const fs::path& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (fs::is_regular_file(it->symlink_status(ec))) {
            files.push_back(it->path().lexically_relative(dir).generic_string());
        }
    }
    if (ec) {
        throw input_error(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
    }
    std::sort(files.begin(), files.end());
    return files;
}

/// The run a renamed bundle directory holds, when run.json and the card agree on it; else empty.
std::string renamed_from(const fs::path& dir, const std::string& name) {
    if (fs::exists(dir / (name + ".yaml"))) {
        return {};
    }
    JsonRecord record;
    Problems ignored; // check_run_record reports them
    load_record(dir, run_files::k_record, "", record, ignored);
    const std::optional<std::string_view> id = record.ok ? string_at(record.root, "run_id") : std::nullopt;
    if (!id || *id == name || id->find('/') != std::string_view::npos || !fs::exists(dir / (std::string(*id) + ".yaml"))) {
        return {};
    }
    return std::string(*id);
}

void check_bundle_directory(const fs::path& dir, const std::string& pack_hint, BundleReport& report) {
    if (!fs::exists(dir / k_manifest_name) && is_real_directory(dir / "rendered")) {
        report.problems.push_back({"", fmt::format("this is a run directory; pack it first: ccl-harness pack {}", pack_hint)});
        return;
    }
    if (!fs::exists(dir / k_manifest_name) && !fs::exists(dir / run_files::k_record) && !fs::exists(dir / (report.name + ".yaml"))) {
        report.problems.push_back({"", "not a bundle: no manifest.json, run.json or card (a bundle is the directory <name>/ "
                                       "that `ccl-harness pack` writes, or its <name>.tar.zst)"});
        return;
    }
    // One problem for a renamed directory, rather than one for every file that names the run.
    if (const std::string run = renamed_from(dir, report.name); !run.empty()) {
        report.problems.push_back({"", fmt::format("the bundle directory is named {} but holds the run {} (run.json, {}.yaml): "
                                                   "a bundle is named after its run",
                                                   json_string(report.name), json_string(run), run)});
        report.name = run;
    }
    const std::vector<std::string> files = list_files(dir);
    report.files = files.size();
    for (ManifestProblem& problem : check_manifest(dir)) {
        report.problems.push_back({std::move(problem.path), std::move(problem.message)});
    }
    check_interrupt();
    check_traces(dir, files, report);
    const PlannedTraces planned = read_planned_traces(dir);
    check_window(planned, report);
    check_card(dir, files, planned, report);
    check_metrics(dir, report.problems);
    check_provenance(dir, report.name, report.problems);
    check_run_record(dir, report.name, report.problems);
    check_scripts(dir, files, report.problems);
    check_interrupt();
}

/// The bundle inside a directory the user named: the directory itself, or the one bundle it
/// holds when it is where an archive was unpacked.
} // namespace

std::size_t BundleReport::steps() const {
    std::size_t total = 0;
    for (const BundleTrace& trace : traces) {
        total += trace.check.steps;
    }
    return total;
}

BundleReport verify_bundle(const fs::path& bundle, const VerifyOptions& options) {
    BundleReport report;
    report.bundle = bundle.string();
    std::error_code ec;
    const fs::file_status status = fs::status(bundle, ec);
    if (!fs::exists(status)) {
        throw input_error(fmt::format("{}: no such file or directory", bundle.string()));
    }
    const auto finish = [&] {
        std::stable_sort(report.problems.begin(), report.problems.end(),
                         [](const BundleProblem& a, const BundleProblem& b) { return a.path < b.path; });
        return report;
    };
    if (fs::is_directory(status)) {
        // A bundle directory, or the directory it was unpacked into; anything else is checked as
        // given, so that the report says what it lacks.
        const fs::path dir = classify_input(bundle).dir;
        report.name = dir.filename().string();
        report.directory = dir;
        check_bundle_directory(dir, shell_quote(bundle.string()), report);
        return finish();
    }
    if (!fs::is_regular_file(status)) {
        throw input_error(fmt::format("{}: neither a file nor a directory", bundle.string()));
    }
    if (const std::string kind = foreign_archive_kind(bundle); !kind.empty()) {
        throw input_error(fmt::format("{}: {}; a bundle is a zstd-compressed tar, <name>.tar.zst, or its unpacked directory "
                                      "(pack a run directory with `ccl-harness pack RUN_DIR`)",
                                      bundle.string(), kind));
    }
    std::optional<ScratchDir> scratch;
    if (options.unpack_into.empty()) {
        scratch.emplace(options.scratch_root, "verify");
    }
    const fs::path unpacked = scratch ? scratch->path() / "unpacked" : options.unpack_into;
    try {
        extract_tar_zst_safely(bundle, unpacked);
    } catch (const ScratchSpaceError&) {
        throw; // a full $TMPDIR says nothing about the bundle
    } catch (const HarnessError& e) {
        if (e.code() == k_exit_interrupted) {
            throw;
        }
        const std::string why = without_archive_prefix(e.what(), bundle);
        if (const std::string damage = zstd_stream_damage(bundle); !damage.empty()) {
            report.problems.push_back({"", fmt::format("truncated or damaged archive ({}); unpacking stopped at {}", damage, why)});
            return finish();
        }
        throw input_error(fmt::format("{}: refused: {}", bundle.string(), why));
    }
    const fs::path dir = single_top_directory(unpacked, report.problems);
    if (dir.empty()) {
        return finish();
    }
    report.name = dir.filename().string();
    if (!scratch) {
        report.directory = dir;
    }
    check_bundle_directory(dir, "RUN_DIR", report);
    return finish();
}

Json bundle_report_to_json(const BundleReport& report) {
    Json out = Json::object();
    out["bundle"] = report.bundle;
    out["valid"] = report.valid();
    out["name"] = report.name;
    out["files"] = static_cast<long long>(report.files);
    out["steps"] = static_cast<long long>(report.steps());
    out["problems"] = Json::array();
    for (const BundleProblem& problem : report.problems) {
        Json item = Json::object();
        item["path"] = problem.path;
        item["message"] = problem.message;
        out["problems"].push_back(std::move(item));
    }
    out["traces"] = Json::array();
    for (const BundleTrace& trace : report.traces) {
        Json item = Json::object();
        item["path"] = trace.path;
        item["form"] = trace.check.form;
        item["compressed"] = trace.check.compressed;
        item["events"] = static_cast<long long>(trace.check.events);
        item["steps"] = static_cast<long long>(trace.check.steps);
        item["step_marker"] = trace.check.step_marker;
        out["traces"].push_back(std::move(item));
    }
    return out;
}

} // namespace harness
