#include "metrics/metrics_input.hpp"

#include "metrics/nsys_sqlite.hpp"
#include "metrics/reference_sampling.hpp"
#include "trace/trace_names.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <boost/process/search_path.hpp>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <set>

namespace harness::metrics {

namespace {

/// The rank of a torch trace: from its name (trace_names.hpp), else, for names that carry none
/// (torch's tensorboard handler), from the distributedInfo Kineto wrote into it.
std::optional<long long> torch_rank(const fs::path& file, const TraceName& name) {
    if (name.kind != TraceKind::kineto) {
        return std::nullopt;
    }
    if (name.rank) {
        return name.rank;
    }
    if (const auto info = read_distributed_info(file)) {
        return info->rank;
    }
    return std::nullopt;
}

/// JSON the harness writes beside traces: never a rank trace, though the tools list them too.
bool is_record(const std::string& name) {
    return name == "manifest.json" || name == "provenance.json" || name == "metrics.json" || name == "plan.json" || name == "run.json";
}

/// One input per device of an nsys export that ran kernels on several GPUs, else one input.
void add_nsys_export(const fs::path& file, long long rank, std::vector<TraceInput>& inputs, std::vector<std::string>& notes) {
    const std::vector<long long> devices = nsys_kernel_devices(file);
    TraceInput input{file, rank, true, false};
    input.kind = TraceKind::nsys_sqlite;
    if (devices.size() <= 1) {
        notes.push_back(fmt::format("{}: read from the Nsight Systems export (rank {}){}", file.filename().string(),
                                    rank >= 0 ? std::to_string(rank) : "by position",
                                    devices.empty() ? ", which holds no kernels" : ""));
        inputs.push_back(input);
        return;
    }
    std::vector<std::string> listed;
    for (const long long device : devices) {
        input.rank = -1;
        input.device = device;
        inputs.push_back(input);
        listed.push_back(std::to_string(device));
    }
    notes.push_back(fmt::format("{}: holds the kernels of {} GPUs (deviceId {}): read as one rank per device, numbered by position",
                                file.filename().string(), devices.size(), join(listed, ", ")));
}

/// What to do with an Nsight Systems report no export of which is here: only nsys reads it.
std::string nsys_rep_note(const fs::path& report) {
    const std::string name = report.filename().string();
    const std::string sqlite = report.stem().string() + ".sqlite";
    if (!boost::process::search_path("nsys").empty()) {
        return fmt::format("{}: an Nsight Systems report, not read: export it (nsys export --type=sqlite --output {} {}) and run "
                           "metrics again",
                           name, sqlite, name);
    }
    return fmt::format("{}: an Nsight Systems report, not read: only nsys reads it (not on PATH); export it where nsys is "
                       "installed (nsys export --type=sqlite --output {} {})",
                       name, sqlite, name);
}

/// The traces of `dir`; `reports` is set when an .nsys-rep was noted in place of a trace.
std::vector<TraceInput> list_traces(const fs::path& dir, std::vector<std::string>& notes, bool& reports) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        // A link to a regular file is read (a trace linked from scratch instead of copied) and
        // said; a FIFO or a device, linked or not, is never opened.
        if (entry.is_regular_file(ec)) {
            files.push_back(entry.path());
            if (entry.is_symlink(ec)) {
                notes.push_back(fmt::format("{}: a symbolic link to {}, read there", entry.path().filename().string(),
                                            fs::read_symlink(entry.path(), ec).string()));
            }
        }
    }
    if (ec) {
        throw input_error(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
    }
    std::sort(files.begin(), files.end());
    std::vector<TraceInput> named;
    std::vector<TraceInput> other_json;
    std::vector<std::pair<fs::path, long long>> exports;      ///< nsys_<rank>.sqlite
    std::vector<std::pair<fs::path, long long>> nsys_reports; ///< nsys_<rank>.nsys-rep, other *.nsys-rep (-1)
    for (const auto& file : files) {
        const std::string name = file.filename().string();
        const TraceName classified = classify_trace_name(name);
        if (classified.kind == TraceKind::nsys_sqlite) {
            exports.emplace_back(file, classified.rank.value_or(-1));
            continue;
        }
        if (classified.kind == TraceKind::nsys_rep) {
            nsys_reports.emplace_back(file, classified.rank.value_or(-1));
            continue;
        }
        const auto rank = torch_rank(file, classified);
        const bool json = ends_with(name, ".json");
        // A torch trace by any of its names, or an XLA JSON trace (trace_names decides).
        TraceInput input{file, rank.value_or(-1), classified.json, json};
        input.kind = classified.kind == TraceKind::not_a_trace ? TraceKind::kineto : classified.kind;
        if (input.standard) {
            named.push_back(input);
        } else if ((json || ends_with(name, ".json.gz")) && !is_record(name)) {
            input.standard = true; // taken only when no file is named like a rank trace
            other_json.push_back(input);
        } else if (json) {
            input.standard = false;
            named.push_back(input);
        }
    }
    // Kineto stays the source of a rank that has both: the exports are read for the other ranks.
    std::set<long long> json_ranks;
    bool unknown_json_rank = false;
    for (const TraceInput& input : named) {
        if (input.standard) {
            json_ranks.insert(input.rank);
            unknown_json_rank = unknown_json_rank || input.rank < 0;
        }
    }
    std::set<long long> export_ranks;
    for (const auto& [file, rank] : exports) {
        if (unknown_json_rank || json_ranks.count(rank) != 0) {
            notes.push_back(fmt::format("{}: not read: {} read from its Kineto trace", file.filename().string(),
                                        unknown_json_rank ? "the ranks are" : fmt::format("rank {} is", rank)));
            continue;
        }
        add_nsys_export(file, rank, named, notes);
        export_ranks.insert(rank);
    }
    for (const auto& [report, rank] : nsys_reports) {
        if (rank < 0 || (json_ranks.count(rank) == 0 && export_ranks.count(rank) == 0)) {
            notes.push_back(nsys_rep_note(report));
            reports = true;
        }
    }
    if (std::none_of(named.begin(), named.end(), [](const TraceInput& t) { return t.standard; })) {
        named.insert(named.end(), other_json.begin(), other_json.end());
    } else {
        for (auto& input : other_json) {
            input.standard = false;
            named.push_back(input);
        }
    }
    std::stable_sort(named.begin(), named.end(), [](const TraceInput& a, const TraceInput& b) { return a.file < b.file; });
    return named;
}

std::optional<fs::path> only_yaml(const fs::path& dir, std::vector<std::string>& notes) {
    std::vector<fs::path> cards;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.is_regular_file(ec) && entry.path().extension() == ".yaml") {
            cards.push_back(entry.path());
        }
    }
    std::sort(cards.begin(), cards.end());
    if (cards.size() > 1) {
        notes.push_back(fmt::format("{} cards in {}: using {} (the CCL-Bench tools take whichever os.listdir gives first)",
                                    cards.size(), dir.string(), cards.front().filename().string()));
    }
    return cards.empty() ? std::nullopt : std::optional<fs::path>(cards.front());
}

void apply_reference_sample(MetricsInput& input) {
    // The tools prefer kineto_trace_*.json over any other .json beside them (torch_et_*.json
    // execution traces), before they sample (tools/json_sampling.py:36-40 @1d257f07b35b).
    const auto kineto = [](const TraceInput& t) { return starts_with(t.file.filename().string(), "kineto_trace_"); };
    if (std::any_of(input.traces.begin(), input.traces.end(), [&](const TraceInput& t) { return t.reference && kineto(t); })) {
        for (auto& trace : input.traces) {
            trace.reference = trace.reference && kineto(trace);
        }
    }
    std::vector<std::size_t> json;
    for (std::size_t k = 0; k < input.traces.size(); ++k) {
        if (input.traces[k].reference) {
            json.push_back(k);
        }
    }
    const std::vector<std::size_t> kept = reference_file_sample(json.size());
    if (kept.size() == json.size()) {
        return;
    }
    for (const std::size_t k : json) {
        input.traces[k].reference = false;
        input.traces[k].outside_sample = true;
    }
    for (const std::size_t k : kept) {
        input.traces[json[k]].reference = true;
        input.traces[json[k]].outside_sample = false;
    }
    input.notes.push_back(fmt::format("--reference reads {} of the {} .json files, the sample the CCL-Bench tools draw "
                                      "(random.Random(42).sample)",
                                      kept.size(), json.size()));
}

/// float(value) as Python takes it, for the JSON values mfu.py's avg_latency may be.
std::optional<double> python_float(const Json& value) {
    if (value.is_bool()) {
        return value.as_bool() ? 1.0 : 0.0;
    }
    if (value.is_number()) {
        return value.as_double();
    }
    if (!value.is_string()) {
        return std::nullopt; // a list or an object: float() raises TypeError, the file is skipped
    }
    // float("1.5 ") strips whitespace and reads nan/inf; it never reads C's hexadecimal floats.
    const std::string text = trim(value.as_string());
    if (text.empty() || text.find_first_of("xX") != std::string::npos) {
        return std::nullopt;
    }
    char* end = nullptr;
    const double parsed = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
        return std::nullopt;
    }
    return parsed;
}

/// avg_latency of one candidate file, or nothing where mfu.py's loop goes on to the next one.
std::optional<double> avg_latency(const fs::path& file) {
    constexpr std::uintmax_t k_max_bytes = std::uintmax_t{16} << 20; // a latency record is a few KiB
    std::error_code ec;
    if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > k_max_bytes || ec) {
        return std::nullopt;
    }
    try {
        const Json data = Json::parse(read_file(file));
        const Json* latency = data.is_object() ? data.find("avg_latency") : nullptr;
        if (latency == nullptr || latency->is_null()) {
            return std::nullopt;
        }
        return python_float(*latency);
    } catch (const std::exception&) {
        return std::nullopt; // unreadable or not JSON: mfu.py catches OSError and JSONDecodeError
    }
}

} // namespace

std::optional<VllmLatency> find_vllm_latency(const fs::path& dir) {
    // glob(dir/**/*.latency.json, recursive=True): hidden directories and files never match.
    std::vector<std::string> candidates;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (starts_with(name, ".")) {
            std::error_code kind_ec; // an entry that cannot be stat'ed is skipped, not the walk
            if (it->is_directory(kind_ec)) {
                it.disable_recursion_pending();
            }
            continue;
        }
        if (ends_with(name, ".latency.json")) {
            candidates.push_back(it->path().string());
        }
    }
    // sorted() on path strings: byte order, not fs::path's component order.
    std::sort(candidates.begin(), candidates.end());
    for (const std::string& candidate : candidates) {
        if (const auto seconds = avg_latency(candidate)) {
            return VllmLatency{candidate, *seconds};
        }
    }
    return std::nullopt;
}

std::optional<ServingResult> find_serving_result(const fs::path& dir) {
    constexpr std::uintmax_t k_max_result_bytes = std::uintmax_t{64} << 20;
    const fs::path file = dir / "logs" / (std::string(k_serving_result_stem) + ".json");
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec)) || fs::file_size(file, ec) > k_max_result_bytes || ec) {
        return std::nullopt;
    }
    try {
        const Json data = Json::parse(read_file(file));
        if (!data.is_object()) {
            return std::nullopt;
        }
        ServingResult out;
        out.file = file;
        for (const auto& [key, slot] : {std::pair<const char*, std::optional<double>*>{"mean_ttft_ms", &out.mean_ttft_ms},
                                        std::pair<const char*, std::optional<double>*>{"mean_tpot_ms", &out.mean_tpot_ms}}) {
            const Json* value = data.find(key);
            if (value != nullptr && value->is_number()) {
                *slot = value->as_double();
            }
        }
        return out;
    } catch (const std::exception&) {
        return std::nullopt; // not JSON: the metrics come from the traces all the same
    }
}

MetricsInput resolve_metrics_input(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        throw input_error(fmt::format("{}: no such file or directory", path.string()));
    }
    MetricsInput input;
    const std::string name = path.filename().string();
    if (!fs::is_directory(path, ec)) {
        if (ends_with(name, ".tar.zst")) {
            throw input_error(
                fmt::format("{}: a packed bundle: unpack it first (tar --zstd -xf {}) and pass the directory", path.string(), name));
        }
        if (ends_with(name, ".yaml") || ends_with(name, ".yml")) {
            throw input_error(
                fmt::format("{}: a card, not a trace: pass the directory that holds the card and its traces", path.string()));
        }
        // Reading a FIFO or a device would block for ever or never end (the YAML readers refuse
        // them the same way).
        if (!fs::is_regular_file(fs::status(path, ec))) {
            throw input_error(fmt::format("{}: not a regular file (a FIFO, a device or a socket); a trace is a file", path.string()));
        }
        input.layout = "trace file";
        input.trace_dir = path.parent_path();
        const TraceName classified = classify_trace_name(name);
        if (classified.kind == TraceKind::nsys_sqlite || ends_with(name, ".sqlite")) {
            add_nsys_export(path, classified.rank.value_or(-1), input.traces, input.notes);
            return input;
        }
        if (classified.kind == TraceKind::nsys_rep) {
            input.notes.push_back(nsys_rep_note(path));
            return input;
        }
        input.traces.push_back(TraceInput{path, torch_rank(path, classified).value_or(-1), true, true});
        return input;
    }
    fs::path dir = path;
    if (fs::is_directory(path / "traces", ec) && fs::is_regular_file(path / "card.yaml", ec)) {
        input.layout = "run directory";
        input.card = path / "card.yaml";
        dir = path / "traces";
    } else {
        // "b-1/" has an empty filename(): name the directory by its last non-empty component.
        fs::path normal = fs::absolute(path).lexically_normal();
        if (normal.filename().empty()) {
            normal = normal.parent_path();
        }
        const fs::path bundle_card = path / (normal.filename().string() + ".yaml");
        if (fs::is_regular_file(bundle_card, ec)) {
            input.layout = "bundle directory";
            input.card = bundle_card;
        } else {
            input.layout = "trace directory";
            input.card = only_yaml(path, input.notes);
        }
    }
    input.trace_dir = dir;
    bool reports = false;
    input.traces = list_traces(dir, input.notes, reports);
    // Reports alone are a note on what to do, not an error: the metrics then say n/a.
    if (!reports && std::none_of(input.traces.begin(), input.traces.end(), [](const TraceInput& t) { return t.standard; })) {
        throw input_error(fmt::format("{}: no trace files (looked for {}, rank<rank>_trace.json, rank-<rank>.json(.gz), "
                                      "<worker>.<ns>.pt.trace.json(.gz) and other .json/.json.gz files)",
                                      dir.string(), expected_trace_names()));
    }
    apply_reference_sample(input);
    return input;
}

} // namespace harness::metrics
