#include "bundle/bundle_verify.hpp"

#include "bundle/bundle_manifest.hpp"
#include "bundle/bundle_verify_checks.hpp"
#include "bundle/input_path.hpp"
#include "provenance/provenance.hpp"
#include "run/run_directory.hpp"
#include "trace/rank_set.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>

namespace harness {

namespace verify_checks {

void check_interrupt() {
    if (interrupt_signal() != 0) {
        throw HarnessError("interrupted", k_exit_interrupted);
    }
}

bool is_real_directory(const fs::path& path) {
    std::error_code ec;
    return fs::is_directory(fs::symlink_status(path, ec));
}

} // namespace verify_checks

namespace {

using verify_checks::check_card;
using verify_checks::check_container;
using verify_checks::check_interrupt;
using verify_checks::check_metrics;
using verify_checks::check_partial_record;
using verify_checks::check_provenance;
using verify_checks::check_run_record;
using verify_checks::check_scripts;
using verify_checks::check_traces;
using verify_checks::check_window;
using verify_checks::is_real_directory;
using verify_checks::JsonRecord;
using verify_checks::load_record;
using verify_checks::PlannedTraces;
using verify_checks::Problems;
using verify_checks::read_planned_traces;
using verify_checks::string_at;

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

/// Whether provenance.json says origin "ingested"; an unreadable one says nothing (check_provenance
/// reports it).
bool ingested_bundle(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(dir / k_provenance_name, ec))) {
        return false;
    }
    try {
        return is_ingested_provenance(Json::parse(read_file(dir / k_provenance_name)));
    } catch (const std::exception&) {
        return false;
    }
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
    check_metrics(dir, report.problems, report.warnings);
    check_provenance(dir, report.name, report.problems);
    check_partial_record(dir, report);
    report.ingested = ingested_bundle(dir);
    check_container(dir, report.problems);
    check_run_record(dir, report.name, report.problems);
    check_scripts(dir, files, report.problems);
    check_interrupt();
}

} // namespace

std::string BundleReport::partial_summary() const {
    return partial() ? "partial: " + describe_partial_ranks(ranks_present, total_count) : std::string();
}

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
    if (report.ingested) {
        // Only then: a harness run's report stays as it always was.
        out["provenance"] = k_unpinned_ingested;
    }
    if (report.partial()) {
        Json ranks = Json::array();
        for (const long long rank : report.ranks_present) {
            ranks.push_back(Json(rank));
        }
        out["partial"] = Json(Json::Object{
            {"ranks_present", std::move(ranks)}, {"total_count", report.total_count}, {"summary", report.partial_summary()}});
    }
    out["problems"] = Json::array();
    for (const BundleProblem& problem : report.problems) {
        Json item = Json::object();
        item["path"] = problem.path;
        item["message"] = problem.message;
        out["problems"].push_back(std::move(item));
    }
    out["warnings"] = Json::array();
    for (const BundleProblem& warning : report.warnings) {
        out["warnings"].push_back(Json(Json::Object{{"path", warning.path}, {"message", warning.message}}));
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