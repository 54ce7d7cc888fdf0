#include "bundle/bundle_verify_checks.hpp"

#include "bundle/bundle_metrics.hpp"
#include "provenance/provenance.hpp"
#include "run/run_directory.hpp"
#include "trace/rank_set.hpp"
#include "util/error.hpp"
#include "util/scratch_dir.hpp"
#include "util/json.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace harness::verify_checks {

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

void check_partial_record(const fs::path& dir, BundleReport& report) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(dir / k_provenance_name, ec))) {
        return; // check_provenance reports it
    }
    std::optional<PresentRanks> recorded;
    try {
        recorded = ingested_ranks_present(Json::parse(read_file(dir / k_provenance_name)));
    } catch (const std::exception&) {
        return; // check_provenance reports it
    }
    const std::string card = report.name + ".yaml";
    if (!recorded && report.partial()) {
        report.problems.push_back({k_provenance_name, fmt::format("the card claims {} (metric_source.ranks_present), but "
                                                                  "provenance.json records no ingested.ranks_present: only an "
                                                                  "ingested archive (ingest --ranks) holds some ranks' traces",
                                                                  describe_partial_ranks(report.ranks_present, report.total_count))});
    } else if (recorded && !report.partial()) {
        report.problems.push_back({card, fmt::format("provenance.json records {} (ingested.ranks_present), but the card's "
                                                     "metric_source has no ranks_present",
                                                     describe_partial_ranks(recorded->ranks, recorded->total))});
    } else if (recorded && (recorded->ranks != report.ranks_present || recorded->total != report.total_count)) {
        report.problems.push_back({k_provenance_name, fmt::format("ingested.ranks_present records {}, but the card claims {}",
                                                                  describe_partial_ranks(recorded->ranks, recorded->total),
                                                                  describe_partial_ranks(report.ranks_present, report.total_count))});
    }
}

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
namespace {

/// A value no run can have is a data point nobody should rank, though the bundle is intact:
/// warnings from bundle_metrics' `implausible` and `device_mismatch`.
void add_metric_warnings(const Json& metrics, Problems& warnings) {
    for (const auto& [name, entry] : metrics.find("metrics")->as_object()) {
        if (const std::string why = entry.string_or("implausible"); !why.empty()) {
            warnings.push_back({k_metrics_name, fmt::format("{} is implausible: {}", name, why)});
        }
    }
    if (const std::string mismatch = metrics.string_or("device_mismatch"); !mismatch.empty()) {
        warnings.push_back({k_metrics_name, mismatch});
    }
}

} // namespace

/// manifest lists it and lacks it is reported by check_manifest.
void check_metrics(const fs::path& dir, Problems& problems, Problems& warnings) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(dir / k_metrics_name, ec))) {
        // No stored metrics to check (an ingested bundle): still say what cannot be right.
        try {
            add_metric_warnings(bundle_metrics(dir), warnings);
        } catch (const HarnessError&) {
            // The traces' own problems are check_traces' to report.
        }
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
        problems.push_back({k_metrics_name, fmt::format("cannot recompute: {}", with_scratch_paths_shown(error.what(), dir, ""))});
        return;
    }
    for (std::string& problem : compare_bundle_metrics(stored, recomputed)) {
        problems.push_back({k_metrics_name, std::move(problem)});
    }
    if (const std::vector<std::string> newer = metrics_not_stored(stored, recomputed); !newer.empty()) {
        warnings.push_back(
            {k_metrics_name, fmt::format("has no {}: the bundle was packed by a harness without {} "
                                         "(`ccl-harness metrics` computes {} from its traces)",
                                         join(newer, ", "), newer.size() == 1 ? "it" : "them", newer.size() == 1 ? "it" : "them")});
    }
    add_metric_warnings(recomputed, warnings);
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

} // namespace harness::verify_checks
