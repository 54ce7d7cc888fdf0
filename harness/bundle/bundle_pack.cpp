#include "bundle/bundle_pack.hpp"

#include "bundle/bundle_card.hpp"
#include "bundle/bundle_manifest.hpp"
#include "bundle/bundle_metrics.hpp" // k_metrics_name
#include "run/run_directory.hpp"
#include "trace/trace_names.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <simdjson.h>

namespace harness {

namespace {

// Names the bundle's own files take at its top level; a trace may not take them.
const char* const k_run_json = run_files::k_record;
const char* const k_provenance = "provenance.json";
const char* const k_patch = "harness.patch";

/// One entry of the bundle: a directory, a file to read, or bytes made here.
struct Entry {
    bool directory = false;
    fs::path source;
    std::optional<std::string> content;
    std::string origin; ///< where it comes from, for messages
};

/// Entries keyed by their path inside <name>/ as the tar names them ("logs/", "logs/rank_0.log"),
/// so that the map's order is the archive's.
using Entries = std::map<std::string, Entry>;

struct RunFacts {
    std::string id;
    std::string state;
    std::string reason;
};

std::string quote_path(const fs::path& path) { return json_string(path.string()); }

std::optional<std::string> read_if_present(const fs::path& file) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(file, ec);
    if (!fs::exists(status)) {
        return std::nullopt;
    }
    if (!fs::is_regular_file(status)) {
        throw input_error(fmt::format("{}: not a regular file", file.string()));
    }
    return read_file(file);
}

/// simdjson's view of `text`, or an input error naming `file`.
simdjson::dom::element parse_json(simdjson::dom::parser& parser, const std::string& text, const fs::path& file) {
    simdjson::dom::element root;
    if (const auto error = parser.parse(text).get(root); error != simdjson::SUCCESS) {
        throw input_error(fmt::format("{}: not valid JSON: {}", file.string(), simdjson::error_message(error)));
    }
    if (!root.is_object()) {
        throw input_error(fmt::format("{}: expected a JSON object", file.string()));
    }
    return root;
}

bool is_run_id(std::string_view id) {
    return !id.empty() && id != "." && id != ".." && std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
}

RunFacts read_run_facts(const std::string& text, const fs::path& file) {
    simdjson::dom::parser parser;
    const simdjson::dom::element root = parse_json(parser, text, file);
    RunFacts facts;
    std::string_view value;
    if (root["run_id"].get_string().get(value) != simdjson::SUCCESS || !is_run_id(value)) {
        throw input_error(fmt::format("{}: run_id: expected the run's id (letters, digits, '.', '_', '-')", file.string()));
    }
    facts.id = std::string(value);
    if (root["state"].get_string().get(value) != simdjson::SUCCESS) {
        throw input_error(fmt::format("{}: state: expected a string", file.string()));
    }
    facts.state = std::string(value);
    if (root["reason"].get_string().get(value) == simdjson::SUCCESS) {
        facts.reason = std::string(value);
    }
    return facts;
}

/// The harness.patch that provenance.json names, or "" when it names none.
std::string named_patch(const std::string& text, const fs::path& file) {
    simdjson::dom::parser parser;
    const simdjson::dom::element root = parse_json(parser, text, file);
    std::string_view patch;
    if (root["harness"]["patch"].get_string().get(patch) != simdjson::SUCCESS) {
        return "";
    }
    return std::string(patch);
}

void add_entry(Entries& entries, const std::string& key, Entry entry) {
    if (!simdjson::validate_utf8(key.data(), key.size())) {
        throw input_error(
            fmt::format("{}: a file name that is not UTF-8 cannot be listed in manifest.json", quote_path(entry.origin)));
    }
    // The directory a file sits in, and a file where a directory must be, are the same path.
    const std::string other = entry.directory ? key.substr(0, key.size() - 1) : key + "/";
    for (const std::string& clash : {key, other}) {
        if (const auto found = entries.find(clash); found != entries.end() && !(entry.directory && clash == key)) {
            throw input_error(fmt::format("{} and {} would both be {} in the bundle", quote_path(found->second.origin),
                                          quote_path(entry.origin), json_string(key)));
        }
    }
    entries[key] = std::move(entry);
}

void add_file(Entries& entries, const std::string& key, const fs::path& source) {
    for (std::size_t slash = key.find('/'); slash != std::string::npos; slash = key.find('/', slash + 1)) {
        add_entry(entries, key.substr(0, slash + 1), Entry{true, {}, std::nullopt, source.parent_path().string()});
    }
    add_entry(entries, key, Entry{false, source, std::nullopt, source.string()});
}

void add_bytes(Entries& entries, const std::string& key, std::string content, const fs::path& origin) {
    add_entry(entries, key, Entry{false, {}, std::move(content), origin.string()});
}

/// Everything under `dir`, as `prefix`/..., links never followed.
void add_tree(Entries& entries, const fs::path& dir, const std::string& prefix) {
    add_entry(entries, prefix + "/", Entry{true, {}, std::nullopt, dir.string()});
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::file_status status = it->symlink_status(ec);
        if (ec) {
            break;
        }
        const std::string key = prefix + "/" + it->path().lexically_relative(dir).generic_string();
        if (fs::is_directory(status)) {
            add_entry(entries, key + "/", Entry{true, {}, std::nullopt, it->path().string()});
        } else if (fs::is_regular_file(status)) {
            add_file(entries, key, it->path());
        } else {
            throw input_error(fmt::format("{}: a {} cannot go into a bundle (only files and directories)", quote_path(it->path()),
                                          fs::is_symlink(status) ? "symbolic link" : "special file"));
        }
    }
    if (ec) {
        throw HarnessError(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
    }
}

/// scripts/: the files render wrote. They all sit at rendered/'s top level; its subdirectories
/// are what the job made beside them (logs/, traces/, probe/, a src/ checkout).
void add_scripts(Entries& entries, const fs::path& rendered) {
    add_entry(entries, "scripts/", Entry{true, {}, std::nullopt, rendered.string()});
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(rendered, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const fs::file_status status = it->symlink_status(ec);
        if (fs::is_regular_file(status)) {
            files.push_back(it->path());
        } else if (!fs::is_directory(status)) {
            throw input_error(fmt::format("{}: a {} cannot go into a bundle (only files and directories)", quote_path(it->path()),
                                          fs::is_symlink(status) ? "symbolic link" : "special file"));
        }
    }
    if (ec) {
        throw HarnessError(fmt::format("{}: cannot list: {}", rendered.string(), ec.message()));
    }
    for (const fs::path& file : files) {
        add_file(entries, "scripts/" + file.filename().string(), file);
    }
}

/// The traces at the bundle's top level, and the metric_source.traces kinds they make.
std::vector<std::string> add_traces(Entries& entries, const fs::path& traces) {
    Entries found;
    add_tree(found, traces, "traces");
    std::vector<std::string> kinds;
    for (auto& [key, entry] : found) {
        if (key == "traces/") {
            continue;
        }
        const std::string relative = key.substr(std::string("traces/").size());
        if (!entry.directory) {
            const std::string kind = trace_kind(fs::path(relative).filename().string());
            if (!kind.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
                kinds.push_back(kind);
            }
        }
        add_entry(entries, relative, std::move(entry));
    }
    if (kinds.empty()) {
        throw input_error(
            fmt::format("{}: no traces ({}): nothing for the CCL-Bench tools to read", traces.string(), expected_trace_names()));
    }
    // The order docs/bundle.md lists them in, whatever order the files sort in.
    std::vector<std::string> ordered;
    for (const char* kind : {"json", "nsys", "json_tpu"}) {
        if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) {
            ordered.emplace_back(kind);
        }
    }
    return ordered;
}

fs::path output_path(const fs::path& run_dir, const std::string& name, const PackOptions& options) {
    fs::path out = options.out_file;
    if (out.empty()) {
        out = run_dir.parent_path() / (name + ".tar.zst");
    }
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(out, ec);
    if (fs::is_directory(status)) {
        throw input_error(fmt::format("{}: is a directory; --out names the archive file", out.string()));
    }
    if (fs::exists(status) && !options.force) {
        throw input_error(fmt::format("{}: exists; pass --force to replace it", out.string()));
    }
    const fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
    if (!fs::is_directory(parent, ec)) {
        throw input_error(fmt::format("{}: no such directory to write the bundle into", parent.string()));
    }
    if (is_inside(out, run_dir)) {
        throw input_error(fmt::format("{}: the bundle cannot be written inside the run directory it packs", out.string()));
    }
    return out;
}

/// What pack reads from the run directory before it writes anything, each read once and checked.
struct RunInputs {
    fs::path run_dir;
    std::string run_json; ///< packed as read
    RunFacts run;
    std::string provenance; ///< packed as read
    std::string patch;      ///< provenance.json's harness.patch, empty when it names none
    std::string card;
};

/// Refuses (input error) a directory that is not a completed, recorded run with its card,
/// rendered/ and traces/.
RunInputs read_run_inputs(const fs::path& run_dir_argument) {
    RunInputs inputs;
    fs::path& run_dir = inputs.run_dir;
    run_dir = fs::absolute(run_dir_argument).lexically_normal();
    if (run_dir.filename().empty()) {
        run_dir = run_dir.parent_path(); // "results/x/" names "results/x"
    }
    std::error_code ec;
    if (!fs::is_directory(run_dir, ec)) {
        throw input_error(fmt::format("{}: not a run directory", run_dir_argument.string()));
    }
    // run.json and provenance.json are read once, checked, and packed as read.
    const std::optional<std::string> run_json = read_if_present(run_dir / k_run_json);
    if (!run_json) {
        throw input_error(fmt::format("{}: not a run directory (no run.json)", run_dir_argument.string()));
    }
    inputs.run_json = *run_json;
    inputs.run = read_run_facts(*run_json, run_dir / k_run_json);
    const RunFacts& run = inputs.run;
    if (run.state != "completed") {
        throw input_error(fmt::format("{}: run {} is {}{}; only a completed run is packed", run_dir_argument.string(), run.id,
                                      run.state, run.reason.empty() ? "" : " (" + run.reason + ")"));
    }
    const std::optional<std::string> provenance = read_if_present(run_dir / k_provenance);
    if (!provenance) {
        throw input_error(fmt::format("{}: no provenance.json: the run was made by an older harness or interrupted; rerun it",
                                      run_dir_argument.string()));
    }
    inputs.provenance = *provenance;
    inputs.patch = named_patch(*provenance, run_dir / k_provenance);
    const std::optional<std::string> card = read_if_present(run_dir / run_files::k_card);
    if (!card) {
        throw input_error(fmt::format("{}: no card.yaml", run_dir_argument.string()));
    }
    inputs.card = *card;
    for (const char* required : {"rendered", "traces"}) {
        if (!fs::is_directory(fs::symlink_status(run_dir / required, ec))) {
            throw input_error(
                fmt::format("{}: no {}/ directory{}", run_dir_argument.string(), required,
                            fs::is_symlink(fs::symlink_status(run_dir / required, ec)) ? " (a link is not followed)" : ""));
        }
    }
    return inputs;
}

/// harness.patch, when provenance.json names it or the run directory has one: both must agree.
void add_patch(Entries& entries, const RunInputs& inputs) {
    const fs::path& run_dir = inputs.run_dir;
    const std::string& patch = inputs.patch;
    std::error_code ec;
    if (!patch.empty() || fs::exists(fs::symlink_status(run_dir / k_patch, ec))) {
        if (!patch.empty() && patch != k_patch) {
            throw input_error(fmt::format("{}: harness.patch: expected \"{}\", got {}", (run_dir / k_provenance).string(), k_patch,
                                          json_string(patch)));
        }
        const std::optional<std::string> diff = read_if_present(run_dir / k_patch);
        if (!diff) {
            throw input_error(
                fmt::format("{}: names harness.patch, which the run directory lacks", (run_dir / k_provenance).string()));
        }
        add_bytes(entries, k_patch, *diff, run_dir / k_patch);
    }
}

/// logs/, accounting/ and container/ (the image record and the runtime's reports), packed whole
/// when present.
void add_optional_trees(Entries& entries, const fs::path& run_dir) {
    std::error_code ec;
    for (const char* optional : {"logs", "accounting", "container"}) {
        const fs::file_status status = fs::symlink_status(run_dir / optional, ec);
        if (fs::is_directory(status)) {
            add_tree(entries, run_dir / optional, optional);
        } else if (fs::exists(status)) {
            throw input_error(fmt::format("{}: not a directory (a bundle never follows links)", (run_dir / optional).string()));
        }
    }
}

/// Every entry of the bundle but manifest.json, keyed as the tar names them; `trace_kinds`
/// receives metric_source.traces as written into <name>.yaml.
Entries collect_entries(const RunInputs& inputs, std::vector<std::string>& trace_kinds) {
    const fs::path& run_dir = inputs.run_dir;
    const std::string& name = inputs.run.id;
    Entries entries;
    add_entry(entries, "", Entry{true, {}, std::nullopt, run_dir.string()});
    add_bytes(entries, k_run_json, inputs.run_json, run_dir / k_run_json);
    add_bytes(entries, k_provenance, inputs.provenance, run_dir / k_provenance);
    add_patch(entries, inputs);
    add_scripts(entries, run_dir / "rendered");
    add_optional_trees(entries, run_dir);
    trace_kinds = add_traces(entries, run_dir / "traces");
    add_bytes(entries, name + ".yaml",
              set_bundle_fields(inputs.card, trace_kinds, name + ".tar.zst", (run_dir / run_files::k_card).string()),
              run_dir / run_files::k_card);
    // `run` computes the metrics when the traces arrive; they travel with them, and verify
    // recomputes them. Packing never computes them itself: it must stay as fast as tar | zstd.
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(run_dir / k_metrics_name, ec))) {
        add_file(entries, k_metrics_name, run_dir / k_metrics_name);
    }
    if (entries.count(k_manifest_name) != 0) {
        throw input_error(
            fmt::format("{}: would take the place of the bundle's manifest.json", quote_path(entries[k_manifest_name].origin)));
    }
    return entries;
}

/// Writes `entries` under <name>/ into result.bundle, then manifest.json from the hashes taken
/// while they were compressed; fills in the rest of `result`.
void write_bundle(const Entries& entries, const PackOptions& options, PackResult& result) {
    const std::string& name = result.name;
    TarZstWriter writer(result.bundle, options.threads);
    std::vector<ManifestFile> files;
    for (const auto& [key, entry] : entries) {
        if (options.on_entry) {
            options.on_entry(key);
        }
        const std::string path = key.empty() ? name : name + "/" + key;
        if (entry.directory) {
            writer.add_directory(path.substr(0, key.empty() ? path.size() : path.size() - 1));
            continue;
        }
        const ArchivedContent content = entry.content ? writer.add_bytes(path, *entry.content) : writer.add_file(path, entry.source);
        files.push_back({key, content.size, content.sha256});
    }
    // Last, from the hashes just taken: a reader checks every file against what was compressed.
    const std::string manifest = manifest_json(std::move(files), k_version).dump();
    if (options.on_entry) {
        options.on_entry(k_manifest_name);
    }
    result.manifest_sha256 = writer.add_bytes(name + "/" + k_manifest_name, manifest).sha256;
    result.files = static_cast<std::size_t>(
                       std::count_if(entries.begin(), entries.end(), [](const auto& item) { return !item.second.directory; })) +
                   1;
    const ArchivedContent archive = writer.finish(options.force);
    result.size = archive.size;
    result.sha256 = archive.sha256;
}

} // namespace

PackResult pack_run(const fs::path& run_dir_argument, const PackOptions& options) {
    const RunInputs inputs = read_run_inputs(run_dir_argument);
    PackResult result;
    result.name = inputs.run.id;
    result.bundle = output_path(inputs.run_dir, result.name, options);
    const Entries entries = collect_entries(inputs, result.trace_kinds);
    write_bundle(entries, options, result);
    return result;
}

} // namespace harness
