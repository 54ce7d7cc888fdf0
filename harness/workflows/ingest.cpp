#include "workflows/ingest.hpp"

#include "bundle/bundle_card.hpp"
#include "bundle/bundle_pack.hpp"
#include "bundle/bundle_verify.hpp"
#include "card/card.hpp"
#include "plan/validate.hpp"
#include "provenance/env_capture.hpp"
#include "provenance/provenance.hpp"
#include "render/render.hpp"
#include "render/secret_values.hpp"
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "trace/rank_set.hpp"
#include "trace/trace_names.hpp"
#include "trace/trace_normalize.hpp"
#include "util/byte_source.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"
#include "util/walk.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <ostream>
#include <set>

namespace harness {

namespace {

// What scripts/ holds when no --scripts was given: verify wants the scripts that ran, and the honest
// answer is that nobody said.
constexpr const char* k_no_scripts_note = "README.txt";

/// The regular files under `dir` (an option's directory), refusing what a bundle cannot hold.
std::vector<TreeEntry> files_of(const fs::path& dir, const std::string& option) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(dir, ec);
    if (fs::is_symlink(status)) {
        throw input_error(fmt::format("{} {}: a symbolic link; give the directory itself", option, terminal_text(dir.string())));
    }
    if (!fs::is_directory(status)) {
        throw input_error(fmt::format("{} {}: no such directory", option, terminal_text(dir.string())));
    }
    const Tree tree = walk_tree(dir);
    if (tree.error) {
        throw input_error(fmt::format("{} {}: cannot list: {}", option, terminal_text(dir.string()), tree.error.message()));
    }
    std::vector<TreeEntry> files;
    for (const TreeEntry& entry : tree.entries) {
        // Before anything is written: a name the bundle's archive would refuse (a newline, an
        // escape sequence) is refused here, at its directory, not after the run directory exists.
        if (const std::string problem = relative_name_problem(entry.relative); !problem.empty()) {
            throw input_error(fmt::format("{} {}: {}: {}; rename it or move it out", option, terminal_text(dir.string()),
                                          enquote(entry.relative), problem));
        }
        if (entry.type == fs::file_type::regular) {
            files.push_back(entry);
        } else if (entry.type != fs::file_type::directory) {
            throw input_error(fmt::format("{}: a {} cannot go into a bundle (only files and directories); copy what it names instead",
                                          terminal_text(entry.path.string()),
                                          entry.type == fs::file_type::symlink ? "symbolic link" : "special file"));
        }
    }
    return files;
}

/// Whether a file trace_names.hpp does not know would be taken for a trace: a profiler's output under
/// a name we cannot place is an error, never silently dropped; an archived data point's card, README
/// or job log beside the traces is left out with a warning.
bool looks_like_trace(const std::string& file_name) {
    const std::string lower = to_lower(file_name);
    if (starts_with(lower, ".")) {
        return false; // .DS_Store, editor swap files
    }
    if (lower.find("trace") != std::string::npos) {
        return true;
    }
    for (const char* suffix : {".json", ".gz", ".pb", ".sqlite", ".nsys-rep", ".qdrep", ".zst"}) {
        if (ends_with(lower, suffix)) {
            return true;
        }
    }
    return false;
}

/// A trace of TRACE_DIR with the place it takes.
struct Placed {
    TreeEntry entry;
    TraceName name;
    IngestedTrace trace;
    /// A gzip'd trace in torch's legacy autograd form (torch without Kineto, gzip'd by hand): it is
    /// unpacked and normalized to kineto_trace_<r>.json, as verify reads no legacy form.
    bool legacy_gzip = false;
};

/// Whether the (gzip'd) JSON at `path` opens with '[': the legacy autograd array, not Kineto's object.
bool opens_as_array(const fs::path& path) {
    try {
        const std::unique_ptr<ByteSource> source = ByteSource::open(path);
        char c = ' ';
        while (source->read(&c, 1) == 1) {
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return c == '[';
            }
        }
    } catch (const HarnessError&) {
        return false; // unreadable: verify names the problem
    }
    return false;
}

/// Where each file of TRACE_DIR goes, every rank placed by trace_names.hpp's rules; refuses what
/// cannot be placed before anything is written.
std::vector<Placed> place_traces(const fs::path& dir, long long world, std::vector<std::string>& warnings) {
    const std::vector<TreeEntry> files = files_of(dir, "TRACE_DIR");
    std::vector<Placed> placed;
    for (const TreeEntry& entry : files) {
        const std::string file_name = entry.path.filename().string();
        Placed item{entry, classify_trace_name(file_name), {}};
        item.trace.source = entry.relative;
        if (item.name.kind == TraceKind::not_a_trace && !looks_like_trace(file_name)) {
            warnings.push_back(fmt::format("{}: not a trace (a card, a note, a log...): left out of traces/", entry.relative));
            continue;
        }
        if (item.name.kind == TraceKind::not_a_trace) {
            throw input_error(fmt::format("{}: not a trace name ingest can place (expected {}, torch's rank<r>_trace.json or "
                                          "<worker>.<ns>.pt.trace.json(.gz)); move it out of TRACE_DIR",
                                          terminal_text(entry.path.string()), expected_trace_names()));
        }
        if (item.name.kind == TraceKind::xla) {
            item.trace.name = file_name; // XLA traces are per host, named as the profiler wrote them
            placed.push_back(item);
            continue;
        }
        if (item.name.rank) {
            item.trace.rank = *item.name.rank;
            item.trace.rank_from = "name";
        } else if (const DistributedInfoRead read = item.name.kind == TraceKind::kineto ? read_distributed_info_checked(entry.path)
                                                                                        : DistributedInfoRead{};
                   read.info) {
            item.trace.rank = read.info->rank;
            item.trace.rank_from = "distributedInfo";
        } else if (!read.problem.empty()) {
            // The trace speaks of its rank and says nothing usable: taking it for the card's one
            // rank, or calling it silent, would hide a damaged or forged trace.
            throw input_error(fmt::format("{}: {} carries no rank and {}; rename it {}", terminal_text(entry.path.string()),
                                          describe_trace_name_form(item.name.form), read.problem,
                                          canonical_trace_name(item.name.kind, 0, item.name.compressed) + " (its global rank)"));
        } else if (world == 1) {
            item.trace.rank = 0; // the card's one rank; a second such file claims it twice below
            item.trace.rank_from = "single rank";
        } else {
            throw input_error(fmt::format("{}: {} carries no rank and the trace has no distributedInfo rank; rename it {}",
                                          terminal_text(entry.path.string()), describe_trace_name_form(item.name.form),
                                          canonical_trace_name(item.name.kind, 0, item.name.compressed) + " (its global rank)"));
        }
        if (item.trace.rank >= world) {
            throw input_error(fmt::format("{}: rank {}, but the card's total_count is {}", terminal_text(entry.path.string()),
                                          item.trace.rank, world));
        }
        item.legacy_gzip = item.name.kind == TraceKind::kineto && item.name.compressed && opens_as_array(entry.path);
        item.trace.name = canonical_trace_name(item.name.kind, item.trace.rank, item.name.compressed && !item.legacy_gzip);
        placed.push_back(item);
    }
    if (placed.empty()) {
        throw input_error(fmt::format("TRACE_DIR {}: no traces (expected {})", terminal_text(dir.string()), expected_trace_names()));
    }
    // One file per (kind, rank): a .json and a .json.gz of one rank are two claims on it too.
    std::map<std::pair<TraceKind, long long>, const Placed*> claims;
    std::map<std::string, const Placed*> names;
    for (const Placed& item : placed) {
        const auto key = std::make_pair(item.name.kind, item.trace.rank >= 0 ? item.trace.rank : -1);
        const bool per_rank = item.trace.rank >= 0;
        if (const auto [at, fresh] = claims.emplace(key, &item); per_rank && !fresh) {
            throw input_error(fmt::format("{} and {} both claim rank {}; keep one", terminal_text(at->second->entry.path.string()),
                                          terminal_text(item.entry.path.string()), item.trace.rank));
        }
        if (const auto [at, fresh] = names.emplace(item.trace.name, &item); !fresh) {
            throw input_error(fmt::format("{} and {} would both be {} in the bundle", terminal_text(at->second->entry.path.string()),
                                          terminal_text(item.entry.path.string()), item.trace.name));
        }
    }
    std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) { return a.trace.name < b.trace.name; });
    return placed;
}

/// verify holds the Kineto traces to ranks 0..total_count-1, or to the ranks a partial archive
/// lists (--ranks): say now which rank is missing or not listed.
void check_rank_coverage(const std::vector<Placed>& placed, const fs::path& dir, long long world,
                         const std::optional<std::vector<long long>>& listed) {
    std::set<long long> kineto;
    std::set<long long> any_kind;
    for (const Placed& item : placed) {
        if (item.trace.rank >= 0) {
            any_kind.insert(item.trace.rank);
            if (item.name.kind == TraceKind::kineto) {
                kineto.insert(item.trace.rank);
            }
        }
    }
    // A rank "has its trace" as verify counts it: the Kineto one when there are any, else any kind.
    const std::set<long long>& held = kineto.empty() ? any_kind : kineto;
    const auto rank_words = [](const auto& ranks) {
        std::vector<std::string> words;
        for (const long long rank : ranks) {
            words.push_back(std::to_string(rank));
        }
        return words;
    };
    if (!listed) {
        std::vector<long long> missing;
        for (long long rank = 0; !kineto.empty() && rank < world; ++rank) {
            if (kineto.count(rank) == 0) {
                missing.push_back(rank);
            }
        }
        if (!missing.empty()) {
            throw input_error(fmt::format("TRACE_DIR {}: no torch trace for rank{} {} (the card's total_count is {}: every rank needs "
                                          "one; --ranks {} accepts the ranks it has)",
                                          terminal_text(dir.string()), missing.size() == 1 ? "" : "s", join(rank_words(missing), ", "),
                                          world, format_rank_list(std::vector<long long>(kineto.begin(), kineto.end()))));
        }
        return;
    }
    const std::string list = format_rank_list(*listed);
    if (any_kind.empty()) {
        throw input_error(fmt::format("--ranks {}: TRACE_DIR {} holds only XLA traces, which are per host, not per rank; leave "
                                      "--ranks out",
                                      list, terminal_text(dir.string())));
    }
    for (const Placed& item : placed) {
        if (item.trace.rank >= 0 && !std::binary_search(listed->begin(), listed->end(), item.trace.rank)) {
            throw input_error(fmt::format("{}: a trace of rank {}, which --ranks {} does not list; add the rank to --ranks or move "
                                          "the file out of TRACE_DIR",
                                          terminal_text(item.entry.path.string()), item.trace.rank, list));
        }
    }
    std::vector<long long> missing;
    for (const long long rank : *listed) {
        if (held.count(rank) == 0) {
            missing.push_back(rank);
        }
    }
    if (!missing.empty()) {
        throw input_error(fmt::format("--ranks {}: TRACE_DIR {} has no {}trace for rank{} {} (it has rank{} {}); list only the ranks "
                                      "it has: --ranks {}",
                                      list, terminal_text(dir.string()), kineto.empty() ? "" : "torch ",
                                      missing.size() == 1 ? "" : "s", join(rank_words(missing), ", "), held.size() == 1 ? "" : "s",
                                      join(rank_words(held), ", "),
                                      format_rank_list(std::vector<long long>(held.begin(), held.end()))));
    }
}

/// --scripts: flat, because pack bundles the top level of rendered/ as scripts/.
std::vector<TreeEntry> script_files(const fs::path& dir) {
    std::vector<TreeEntry> files = files_of(dir, "--scripts");
    for (const TreeEntry& entry : files) {
        if (entry.relative.find('/') != std::string::npos) {
            throw input_error(fmt::format("--scripts {}: {} is in a subdirectory; a bundle's scripts/ holds files only (put the "
                                          "scripts that ran at the directory's top level)",
                                          terminal_text(dir.string()), terminal_text(entry.relative)));
        }
    }
    if (files.empty()) {
        throw input_error(
            fmt::format("--scripts {}: empty; leave the option out when no script is known", terminal_text(dir.string())));
    }
    return files;
}

std::string backend_of(const WorkloadCard& card) {
    const std::string library = to_lower(card.comm_library);
    if (library == "gloo" || (library.empty() && to_lower(card.xpu_type) == "cpu")) {
        return "gloo";
    }
    return "nccl";
}

/// Removes what ingest wrote unless it finished: bad input never leaves half a run behind.
class Undo {
public:
    void add(fs::path path) { m_paths.push_back(std::move(path)); }
    void keep() { m_paths.clear(); }
    Undo() = default;
    Undo(const Undo&) = delete;
    Undo& operator=(const Undo&) = delete;
    Undo(Undo&&) = delete;
    Undo& operator=(Undo&&) = delete;
    ~Undo() {
        for (const fs::path& path : m_paths) {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    }

private:
    std::vector<fs::path> m_paths;
};

struct Inputs {
    fs::path card;
    fs::path traces;
    fs::path scripts;
    fs::path logs;
    std::vector<Placed> placed;
    std::vector<TreeEntry> script_files;
    std::vector<TreeEntry> log_files;
    std::vector<long long> ranks_present; ///< a partial archive's ranks; empty when every rank is traced
};

/// provenance.json of an ingested run: the files given, pinned by sha256; everything the harness
/// would have recorded by running the job is null (unknown).
Json ingested_provenance(const Inputs& in, const WorkloadCard& card, const std::string& id, const std::string& now) {
    std::map<std::string, std::string> pins;
    pins.emplace(in.card.string(), sha256_file(in.card));
    for (const Placed& item : in.placed) {
        pins.emplace(item.entry.path.string(), sha256_file(item.entry.path));
    }
    for (const auto* files : {&in.script_files, &in.log_files}) {
        for (const TreeEntry& entry : *files) {
            pins.emplace(entry.path.string(), sha256_file(entry.path));
        }
    }
    Json out = Json::object();
    out["format"] = k_provenance_format;
    out["origin"] = k_origin_ingested;
    out["ingested"] = Json(Json::Object{{"at", now},
                                        {"traces", in.traces.string()},
                                        {"scripts", string_or_null(in.scripts.string())},
                                        {"logs", string_or_null(in.logs.string())}});
    if (!in.ranks_present.empty()) {
        Json ranks = Json::array();
        for (const long long rank : in.ranks_present) {
            ranks.push_back(Json(rank));
        }
        out["ingested"][k_ingested_ranks_present] = std::move(ranks);
        out["ingested"][k_ingested_total_count] = std::max(card.total_count, 1LL);
    }
    out["harness"] = Json(Json::Object{{"version", k_version}, {"commit", Json()}, {"dirty", false}, {"patch", Json()}});
    out["run"] = Json(Json::Object{{"id", id},
                                   {"card", card.name()},
                                   {"cluster", Json()},
                                   {"executor", k_executor_ingested},
                                   {"state", to_string(RunState::completed)},
                                   {"started", Json()},
                                   {"finished", Json()}});
    out["inputs"] = Json::array();
    for (const auto& [path, sha256] : pins) {
        out["inputs"].push_back(Json(Json::Object{{"path", path}, {"sha256", sha256}}));
    }
    out["sources"] = Json::array();
    if (!card.launch.source_repo.empty()) {
        out["sources"].push_back(
            Json(Json::Object{{"repo", card.launch.source_repo}, {"ref", card.launch.source_ref}, {"commit", Json()}}));
    }
    out["container"] = Json();
    out["hosts"] = Json();
    out["environment"] = Json();
    out["scheduler"] = Json();
    return out;
}

void copy_placed(const Placed& item, const fs::path& traces, long long world, const std::string& backend) {
    try {
        if (item.legacy_gzip || (item.name.kind == TraceKind::kineto && !item.name.compressed)) {
            // The legacy autograd form becomes Kineto's (inflated as it is read, when gzip'd); a
            // Kineto trace is copied byte for byte. Streamed either way: memory follows one event.
            normalize_trace(item.entry.path, traces / item.trace.name, TraceIdentity{item.trace.rank, world, backend});
        } else {
            fs::copy_file(item.entry.path, traces / item.trace.name);
        }
    } catch (const HarnessError& error) {
        throw input_error(error.what());
    }
}

/// Writes the run directory; returns how many secret values it replaced in the copied files.
std::size_t write_run_directory(const Inputs& in, const WorkloadCard& card, const RunDirectory& dir, const std::string& now) {
    fs::create_directories(dir.rendered());
    fs::create_directories(dir.traces());
    // An ingested run is recorded as a run is: the card's secrets by name and by value, and the
    // values of the secret-named variables of this environment, are [REDACTED] in what it keeps.
    Environment job_env = card.launch.env;
    job_env.insert(job_env.end(), card.comm_env.begin(), card.comm_env.end());
    const SecretValues secrets(job_env, process_environment());
    const std::string card_record = secrets.card_record(card);
    // The contributor's own text (comments kept) unless something in it had to be redacted.
    // A partial archive says so in the card every reader of the bundle sees (docs/bundle.md).
    const std::string card_text = card_record == card.document().emit() ? read_file(in.card) : card_record;
    write_file_atomic(dir.path / run_files::k_card,
                      in.ranks_present.empty() ? card_text : set_ranks_present(card_text, in.ranks_present, in.card.string()));
    const long long world = std::max(card.total_count, 1LL);
    const std::string backend = backend_of(card);
    for (const Placed& item : in.placed) {
        copy_placed(item, dir.traces(), world, backend);
    }
    for (const TreeEntry& entry : in.script_files) {
        fs::copy_file(entry.path, dir.rendered() / entry.relative);
    }
    if (in.scripts.empty()) {
        write_file_atomic(dir.rendered() / k_no_scripts_note,
                          fmt::format("Ingested by ccl-harness {} from a job the harness did not run.\n"
                                      "No scripts were given (ingest --scripts DIR): what ran is not known.\n",
                                      k_version));
    }
    if (!in.logs.empty()) {
        fs::create_directories(dir.logs());
        for (const TreeEntry& entry : in.log_files) {
            fs::create_directories((dir.logs() / entry.relative).parent_path());
            fs::copy_file(entry.path, dir.logs() / entry.relative);
        }
    }
    const std::size_t redacted = secrets.scrubber().scrub_tree(dir.rendered()) + secrets.scrubber().scrub_tree(dir.logs());
    RunRecord record;
    record.run_id = dir.id;
    record.card = card.name();
    record.executor = k_executor_ingested;
    record.state = RunState::completed;
    // No transitions: when the job started and ended is not known (status shows "-"); when it was
    // ingested is provenance's ingested.at.
    for (const Placed& item : in.placed) {
        record.traces.push_back(item.trace.name);
    }
    record.save(dir.path);
    write_file_atomic(dir.path / run_files::k_provenance,
                      secrets.scrubber().scrub_json(ingested_provenance(in, card, dir.id, now)).dump());
    return redacted;
}

/// The card, checked as `validate` checks it: its errors stop the ingest.
WorkloadCard checked_card(const fs::path& file, const fs::path& home) {
    ValidateOptions validate;
    validate.home = home;
    const ValidationResult result = validate_file(file, validate);
    if (result.unreadable || result.diagnostics.has_errors()) {
        std::vector<std::string> lines;
        for (const Diagnostic& diagnostic : result.diagnostics.items()) {
            if (diagnostic.severity == Severity::error) {
                lines.push_back("  " + diagnostic.text());
            }
        }
        throw input_error(fmt::format("{}: not a valid card; fix it first (ccl-harness validate {}):\n{}",
                                      terminal_text(file.string()), shell_quote(file.string()), join(lines, "\n")));
    }
    return WorkloadCard::load(file);
}

} // namespace

IngestOutcome ingest_run(const IngestOptions& options, std::ostream& out) {
    // 1. Everything checked before anything is written.
    Inputs in;
    in.card = absolute_path(options.card);
    in.traces = absolute_path(options.traces);
    const WorkloadCard card = checked_card(in.card, options.home);
    const long long world = std::max(card.total_count, 1LL);
    IngestOutcome outcome;
    std::optional<std::vector<long long>> listed;
    if (options.ranks) {
        listed = parse_rank_list(*options.ranks, world, "--ranks");
    }
    in.placed = place_traces(in.traces, world, outcome.warnings);
    check_rank_coverage(in.placed, in.traces, world, listed);
    if (listed && static_cast<long long>(listed->size()) < world) {
        in.ranks_present = *listed; // every rank listed is no partial archive
    }
    if (!options.scripts.empty()) {
        in.scripts = absolute_path(options.scripts);
        in.script_files = script_files(in.scripts);
    }
    if (!options.logs.empty()) {
        in.logs = absolute_path(options.logs);
        in.log_files = files_of(in.logs, "--logs");
    }

    // 2. The run directory, named as a run's is.
    RenderedRun naming;
    naming.plan.card_name = card.name();
    for (const Placed& item : in.placed) {
        naming.files.push_back({item.trace.name, item.entry.relative, false});
    }
    const fs::path results = absolute_path(options.results);
    std::error_code ec;
    fs::create_directories(results, ec);
    if (ec) {
        throw input_error(fmt::format("--results {}: cannot create: {}", terminal_text(results.string()), ec.message()));
    }
    RunDirectory dir;
    dir.id = make_run_id(naming);
    dir.path = results / dir.id;
    if (fs::exists(fs::symlink_status(dir.path, ec))) {
        throw HarnessError(fmt::format("{}: exists; run ingest again", terminal_text(dir.path.string())));
    }
    Undo undo;
    undo.add(dir.path);
    fs::create_directory(dir.path);
    const std::string now = utc_now();
    const std::size_t redacted = write_run_directory(in, card, dir, now);
    if (redacted > 0) {
        outcome.warnings.push_back(
            fmt::format("{} occurrence(s) of secret values in the --scripts and --logs files replaced by {}", redacted, k_redacted));
    }
    out << fmt::format("ingested {} trace{} into {}\n", in.placed.size(), in.placed.size() == 1 ? "" : "s",
                       terminal_text(dir.path.string()));

    // 3. Packed and verified, as a run's bundle is.
    const fs::path bundle = results / (dir.id + ".tar.zst");
    undo.add(bundle);
    const PackResult packed = pack_run(dir.path);
    const BundleReport report = verify_bundle(packed.bundle);
    if (!report.valid() || !report.ingested) {
        std::vector<std::string> lines;
        for (const BundleProblem& problem : report.problems) {
            lines.push_back(fmt::format("  {}{}", problem.path.empty() ? "" : problem.path + ": ", problem.message));
        }
        throw input_error(fmt::format("the ingested bundle does not verify; nothing kept:\n{}", join(lines, "\n")));
    }
    undo.keep();
    outcome.run_id = dir.id;
    outcome.run_dir = dir.path;
    outcome.bundle = packed.bundle;
    outcome.bundle_sha256 = packed.sha256;
    outcome.files = packed.files;
    outcome.steps = report.steps();
    for (const Placed& item : in.placed) {
        outcome.traces.push_back(item.trace);
    }
    outcome.ranks_present = in.ranks_present;
    outcome.total_count = world;
    return outcome;
}

Json ingest_outcome_to_json(const IngestOutcome& outcome) {
    Json json = Json::object();
    json["run_id"] = outcome.run_id;
    json["run_dir"] = outcome.run_dir.string();
    json["bundle"] = outcome.bundle.string();
    json["sha256"] = outcome.bundle_sha256;
    json["files"] = static_cast<long long>(outcome.files);
    json["steps"] = static_cast<long long>(outcome.steps);
    json["traces"] = Json::array();
    for (const IngestedTrace& trace : outcome.traces) {
        json["traces"].push_back(Json(Json::Object{{"source", trace.source},
                                                   {"name", trace.name},
                                                   {"rank", trace.rank >= 0 ? Json(trace.rank) : Json()},
                                                   {"rank_from", trace.rank_from.empty() ? Json() : Json(trace.rank_from)}}));
    }
    json["warnings"] = json_string_array(outcome.warnings);
    json["provenance"] = k_unpinned_ingested;
    json["partial"] = Json();
    if (!outcome.ranks_present.empty()) {
        Json ranks = Json::array();
        for (const long long rank : outcome.ranks_present) {
            ranks.push_back(Json(rank));
        }
        json["partial"] = Json(Json::Object{{"ranks_present", std::move(ranks)},
                                            {"total_count", outcome.total_count},
                                            {"summary", describe_partial_ranks(outcome.ranks_present, outcome.total_count)}});
    }
    return json;
}

} // namespace harness
