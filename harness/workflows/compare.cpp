#include "workflows/compare.hpp"

#include "bundle/bundle_manifest.hpp"
#include "bundle/bundle_metrics.hpp"
#include "bundle/bundle_unpack.hpp"
#include "bundle/input_path.hpp"
#include "card/yaml_document.hpp"
#include "metrics/metric_bounds.hpp"
#include "metrics/metrics.hpp"
#include "provenance/provenance.hpp"
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "util/error.hpp"
#include "util/scratch_dir.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "workflows/sweep.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <type_traits>

namespace harness {

namespace {

/// A value as compared and shown: itself, or past k_max_compared_value_bytes its first bytes,
/// its size and its digest, so that two long values still compare equal only when they are.
std::string compared_value(std::string value) {
    if (value.size() <= k_max_compared_value_bytes) {
        return value;
    }
    const std::string digest = sha256_hex(value);
    const std::size_t size = value.size();
    value.resize(k_max_compared_value_bytes);
    while (!value.empty() && (static_cast<unsigned char>(value.back()) & 0xC0) == 0x80) {
        value.pop_back(); // not through a UTF-8 sequence
    }
    if (!value.empty() && static_cast<unsigned char>(value.back()) >= 0xC0) {
        value.pop_back();
    }
    return fmt::format("{}... ({} bytes, sha256 {})", value, size, digest.substr(0, 16));
}

struct Flattening {
    std::map<std::string, std::string>& out;
    std::size_t left_out = 0;

    void leaf(const std::string& path, std::string value) {
        if (out.size() >= k_max_compared_card_paths && out.count(path) == 0) {
            ++left_out;
        } else {
            out[path] = compared_value(std::move(value));
        }
    }

    void into(const YAML::Node& node, const std::string& prefix) {
        const auto child = [&prefix](const std::string& key) { return prefix.empty() ? key : prefix + "." + key; };
        if (node.IsMap()) {
            if (node.size() == 0 && !prefix.empty()) {
                leaf(prefix, "{}");
            }
            for (const auto& item : node) {
                into(item.second, child(item.first.as<std::string>()));
            }
        } else if (node.IsSequence()) {
            if (node.size() == 0) {
                leaf(prefix, "[]");
            }
            for (std::size_t i = 0; i < node.size(); ++i) {
                into(node[i], child(std::to_string(i)));
            }
        } else {
            leaf(prefix, node.IsScalar() ? node.Scalar() : std::string());
        }
    }
};

/// metrics.json as `bundle_metrics` writes it, checked field by field: a hand-edited file must
/// not turn into a wrong bar on a chart.
std::map<std::string, ComparedMetric> parse_metrics(const Json& json, const std::string& where) {
    const Json* metrics = json.find("metrics");
    if (!json.is_object() || metrics == nullptr || !metrics->is_object()) {
        throw input_error(fmt::format("{}: metrics: expected an object of metric name -> {{value, unit, why}}", where));
    }
    std::map<std::string, ComparedMetric> out;
    for (const auto& [name, entry] : metrics->as_object()) {
        const Json* value = entry.is_object() ? entry.find("value") : nullptr;
        if (value == nullptr || !(value->is_null() || value->is_number())) {
            throw input_error(fmt::format("{}: metrics.{}.value: expected a number or null", where, name));
        }
        ComparedMetric metric;
        if (value->is_number()) {
            metric.value = value->as_double();
        }
        metric.unit = entry.string_or("unit");
        metric.why = entry.string_or("why");
        // A bundle packed before the bounds were checked has no flag: the same rule applies.
        metric.implausible = entry.string_or("implausible");
        if (metric.implausible.empty() && metric.value) {
            metric.implausible = metrics::implausible_value(name, *metric.value);
        }
        out[name] = std::move(metric);
    }
    return out;
}

const metrics::MetricValue* find_metric(const metrics::MetricsReport& report, const std::string& name) {
    const auto found = std::find_if(report.metrics.begin(), report.metrics.end(),
                                    [&name](const metrics::MetricValue& value) { return value.metric == name; });
    return found == report.metrics.end() ? nullptr : &*found;
}

/// The rank traces the default mode reads; per-rank values are aligned with report.ranks, which
/// also lists files only the CCL-Bench tools read.
RunDetail detail_of(const metrics::MetricsReport& report) {
    RunDetail out;
    std::vector<std::size_t> read;
    for (std::size_t r = 0; r < report.ranks.size(); ++r) {
        if (report.ranks[r].in_default && report.ranks[r].format != "not-a-trace") {
            read.push_back(r);
            out.ranks.push_back(report.ranks[r].rank);
        }
    }
    const auto pick = [&read](const auto& values) {
        std::decay_t<decltype(values)> picked;
        for (const std::size_t r : read) {
            if (r < values.size()) {
                picked.push_back(values[r]);
            }
        }
        return picked;
    };
    if (const metrics::MetricValue* step = find_metric(report, "avg_step_time")) {
        out.rank_step = pick(step->per_rank);
        out.steps = pick(step->per_step);
    }
    if (const metrics::MetricValue* comm = find_metric(report, "total_communication_time")) {
        out.rank_comm = pick(comm->per_rank);
        out.comm_by_collective = comm->time_by_collective;
    }
    if (const metrics::MetricValue* straggler = find_metric(report, "straggler")) {
        out.straggler = straggler->value;
    }
    return out;
}

/// The detail is extra: a bundle whose traces cannot be read still compares by its metrics.json.
RunDetail read_detail(const fs::path& dir) {
    try {
        return detail_of(metrics::compute_metrics(dir, metrics::MetricsOptions{}));
    } catch (const HarnessError& error) {
        if (error.code() == k_exit_interrupted) {
            throw;
        }
        RunDetail out;
        out.why = error.what();
        return out;
    }
}

/// metrics.json when the directory has one, else the same values bundle_metrics() would store,
/// computed from its traces.
void read_metrics(const fs::path& dir, const std::string& display, ComparedRun& run) {
    const fs::path file = dir / k_metrics_name;
    if (fs::is_regular_file(file)) {
        Json json;
        try {
            json = Json::parse(read_file(file));
        } catch (const std::exception& error) {
            throw input_error(fmt::format("{}: {}: {}", display, k_metrics_name, error.what()));
        }
        run.metrics = parse_metrics(json, display + ": " + k_metrics_name);
        run.metrics_source = k_metrics_name;
        run.detail = read_detail(dir);
    } else {
        const metrics::MetricsReport report = metrics::compute_metrics(dir, metrics::MetricsOptions{});
        for (const metrics::MetricValue& metric : report.metrics) {
            run.metrics[metric.metric] = ComparedMetric{metric.value, metric.unit, metric.why, metric.implausible};
        }
        run.metrics_source = "computed from the traces";
        run.detail = detail_of(report);
    }
    run.breakdown = step_breakdown(run.metrics);
}

/// The run id of the bundle `dir`'s run reproduces (provenance.json `reproduces.bundle`, less
/// .tar.zst), so the table says "reproduces <id>" rather than numbering a second copy. A record
/// without it, or one that cannot be read, reproduces nothing: verify judges provenance, not compare.
std::string read_reproduces(const fs::path& dir) {
    const fs::path file = dir / k_provenance_name;
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) {
        return {};
    }
    try {
        const Json provenance = Json::parse(read_file(file));
        const Json* reproduces = provenance.is_object() ? provenance.find("reproduces") : nullptr;
        std::string bundle = reproduces != nullptr && reproduces->is_object() ? reproduces->string_or("bundle") : std::string();
        constexpr std::string_view packed = ".tar.zst";
        if (ends_with(bundle, packed)) {
            bundle.resize(bundle.size() - packed.size());
        }
        return bundle;
    } catch (const std::exception&) {
        return {};
    }
}

void read_card(const fs::path& file, ComparedRun& run) {
    if (!fs::is_regular_file(file)) {
        throw input_error(fmt::format("{}: {} is missing", run.input, file.filename().string()));
    }
    run.card = flatten_card(YamlDocument::load(file).root(), &run.card_paths_left_out);
}

/// A bundle's numbers are only worth showing when its files are the ones it was packed with.
void load_bundle_dir(const fs::path& dir, ComparedRun& run) {
    const std::vector<ManifestProblem> problems = check_manifest(dir);
    if (!problems.empty()) {
        throw input_error(fmt::format("{}: the bundle does not match its manifest ({} problem{}, first: {}: {}); "
                                      "`ccl-harness verify {}` lists them all",
                                      run.input, problems.size(), problems.size() == 1 ? "" : "s", problems.front().path,
                                      problems.front().message, run.input));
    }
    run.name = dir.filename().string();
    read_card(dir / (run.name + ".yaml"), run);
    read_metrics(dir, run.input, run);
    run.reproduces = read_reproduces(dir);
}

void load_run_dir(const fs::path& dir, ComparedRun& run) {
    run.kind = "run directory";
    run.name = dir.filename().string();
    try {
        const RunRecord record = RunRecord::load(dir);
        if (!record.run_id.empty()) {
            run.name = record.run_id;
        }
    } catch (const HarnessError& error) {
        throw input_error(fmt::format("{}: {}", run.input, error.what()));
    }
    read_card(dir / run_files::k_card, run);
    read_metrics(dir, run.input, run);
    run.reproduces = read_reproduces(dir);
}

std::string metric_text(const ComparedRun& run, const std::string& name) {
    const auto found = run.metrics.find(name);
    if (found == run.metrics.end() || !found->second.value) {
        return "n/a";
    }
    return fmt::format("{:.6g}{}", *found->second.value, found->second.implausible.empty() ? "" : "!");
}

Json optional_json(const std::optional<double>& value) { return value ? Json(*value) : Json(); }

/// The run's label, sweep point, throughput and the detail from its traces.
void add_glance_json(const Comparison& comparison, std::size_t index, Json& entry) {
    const ComparedRun& run = comparison.runs[index];
    entry["label"] = run.label;
    entry["sweep"] = run.sweep;
    entry["overrides"] = json_string_array(run.overrides);
    entry["reproduces"] = run.reproduces;
    const auto place = std::find(comparison.throughput_ranking.begin(), comparison.throughput_ranking.end(), index);
    entry["throughput_rank"] = static_cast<long long>(place - comparison.throughput_ranking.begin()) + 1;
    Json throughput = Json::object();
    throughput["value"] = optional_json(run.throughput.value);
    throughput["unit"] = run.throughput.unit;
    throughput["basis"] = run.throughput.basis;
    throughput["why"] = run.throughput.why;
    entry["throughput"] = std::move(throughput);
    const std::optional<StepSpread> spread = step_spread(run.detail);
    Json spread_json;
    if (spread) {
        spread_json = Json::object();
        spread_json["steps"] = static_cast<long long>(spread->count);
        spread_json["min"] = spread->min;
        spread_json["median"] = spread->median;
        spread_json["max"] = spread->max;
    }
    entry["step_spread"] = std::move(spread_json);
    Json ranks = Json::array();
    for (std::size_t r = 0; r < run.detail.ranks.size(); ++r) {
        Json rank = Json::object();
        rank["rank"] = run.detail.ranks[r];
        rank["avg_step_time"] = r < run.detail.rank_step.size() ? optional_json(run.detail.rank_step[r]) : Json();
        rank["total_communication_time"] = r < run.detail.rank_comm.size() ? optional_json(run.detail.rank_comm[r]) : Json();
        Json steps = Json::array();
        if (r < run.detail.steps.size()) {
            for (const double step : run.detail.steps[r]) {
                steps.push_back(step);
            }
        }
        rank["steps"] = std::move(steps);
        ranks.push_back(std::move(rank));
    }
    entry["ranks"] = std::move(ranks);
    Json collectives = Json::object();
    for (const auto& [operation, seconds] : run.detail.comm_by_collective) {
        collectives[operation] = seconds;
    }
    entry["communication_by_collective"] = std::move(collectives);
    entry["detail_why"] = run.detail.why;
}

} // namespace

const std::vector<std::string>& ignored_card_paths() {
    static const std::vector<std::string> paths = {"trace_url"};
    return paths;
}

std::map<std::string, std::string> flatten_card(const YAML::Node& node, std::size_t* left_out) {
    std::map<std::string, std::string> out;
    Flattening flattening{out};
    flattening.into(node, "");
    if (left_out != nullptr) {
        *left_out = flattening.left_out;
    }
    return out;
}

StepBreakdown step_breakdown(const std::map<std::string, ComparedMetric>& metrics) {
    StepBreakdown out;
    const auto value = [&metrics](const char* name) -> std::optional<double> {
        const auto found = metrics.find(name);
        return found == metrics.end() ? std::nullopt : found->second.value;
    };
    const auto why = [&metrics](const char* name) {
        const auto found = metrics.find(name);
        return found == metrics.end() ? std::string(name) + " is missing" : name + std::string(": ") + found->second.why;
    };
    out.step = value("avg_step_time");
    const std::optional<double> comm = value("total_communication_time");
    const std::optional<double> overlap = value("compute_comm_overlap");
    if (!out.step) {
        out.why = why("avg_step_time");
    } else if (!comm) {
        out.why = why("total_communication_time");
    } else if (!overlap) {
        out.why = why("compute_comm_overlap");
    } else {
        out.overlapped = *comm * *overlap / 100.0;
        out.exposed = *comm - *out.overlapped;
        out.compute = *out.step - *out.exposed;
    }
    return out;
}

ComparedRun load_compared_run(const fs::path& input, const CompareOptions& options) {
    ComparedRun run;
    run.input = input.string();
    const InputPath what = classify_input(input);
    switch (what.kind) {
    case InputKind::missing: throw input_error(fmt::format("{}: no such file or directory", run.input));
    case InputKind::special: throw input_error(fmt::format("{}: neither a file nor a directory", run.input));
    case InputKind::other_file:
        throw input_error(fmt::format("{}: not a bundle: expected <name>.tar.zst, a bundle directory or a run directory", run.input));
    case InputKind::packed_bundle: {
        run.kind = "bundle";
        const ScratchDir scratch(options.scratch_root, "compare");
        try {
            load_bundle_dir(unpack_bundle(input, scratch.path() / "bundle"), run);
        } catch (const ScratchSpaceError&) {
            throw; // a full $TMPDIR: the message names it, not the bundle
        } catch (const HarnessError& error) {
            throw HarnessError(with_scratch_paths_shown(error.what(), scratch.path() / "bundle", run.input + ":"), error.code());
        }
        return run;
    }
    case InputKind::bundle_dir:
        run.kind = "bundle directory";
        load_bundle_dir(what.dir, run);
        return run;
    case InputKind::run_dir: load_run_dir(what.dir, run); return run;
    case InputKind::other_dir: break;
    }
    throw input_error(fmt::format("{}: neither a bundle (<name>/ with <name>.yaml and manifest.json) "
                                  "nor a run directory (card.yaml and run.json)",
                                  run.input));
}

std::vector<CardDifference> card_differences(const std::vector<ComparedRun>& runs) {
    std::set<std::string> paths;
    for (const ComparedRun& run : runs) {
        for (const auto& [path, value] : run.card) {
            paths.insert(path);
        }
    }
    const auto ignored = [](const std::string& path) {
        return std::any_of(ignored_card_paths().begin(), ignored_card_paths().end(),
                           [&path](const std::string& prefix) { return path == prefix || starts_with(path, prefix + "."); });
    };
    std::vector<CardDifference> out;
    for (const std::string& path : paths) {
        if (ignored(path)) {
            continue;
        }
        CardDifference difference{path, {}};
        for (const ComparedRun& run : runs) {
            const auto found = run.card.find(path);
            difference.values.push_back(found == run.card.end() ? std::nullopt : std::optional<std::string>(found->second));
        }
        const bool same = std::all_of(difference.values.begin(), difference.values.end(),
                                      [&difference](const auto& value) { return value == difference.values.front(); });
        if (!same) {
            out.push_back(std::move(difference));
        }
    }
    return out;
}

namespace {

/// A sweep directory's points that have a run directory, each with its overrides; the others
/// go to `left_out` with their state and reason.
void load_sweep(const fs::path& dir, const CompareOptions& options, Comparison& out) {
    const SweepRecord record = SweepRecord::load(dir);
    const bool filtered = !options.query.query.empty();
    for (const SweepPoint& point : record.points) {
        fs::path run_dir = point.run_dir;
        // A moved sweep directory still holds its runs.
        if (!run_dir.empty() && !fs::is_directory(run_dir) && fs::is_directory(dir / run_dir.filename())) {
            run_dir = dir / run_dir.filename();
        }
        const bool has_run = !run_dir.empty() && fs::is_directory(run_dir);
        // A point without a run has no start or target for the query to match: a filter leaves it out.
        if (filtered && (!has_run || !run_matches(options.query, summarize_run(run_dir, record.id)))) {
            ++out.not_matching;
            continue;
        }
        if (!has_run) {
            out.left_out.push_back(fmt::format("{} point {}: {}{}", record.id, join(point.overrides, " "), to_string(point.state),
                                               point.reason.empty() ? "" : " (" + point.reason + ")"));
            continue;
        }
        ComparedRun run = load_compared_run(run_dir, options);
        run.sweep = record.id;
        run.overrides = point.overrides;
        out.runs.push_back(std::move(run));
    }
}

bool is_sweep_dir(const fs::path& input) {
    std::error_code ec;
    return fs::is_directory(input, ec) && fs::is_regular_file(input / k_sweep_file, ec);
}

/// A results directory (`run --results DIR`): neither a run nor a sweep itself, it holds them.
bool is_results_dir(const fs::path& input) {
    std::error_code ec;
    if (!fs::is_directory(input, ec) || fs::exists(input / run_files::k_record, ec) || is_sweep_dir(input)) {
        return false;
    }
    for (const auto& entry : fs::directory_iterator(input, ec)) {
        if (entry.is_directory(ec) && (fs::is_regular_file(entry.path() / run_files::k_record, ec) || is_sweep_dir(entry.path()))) {
            return true;
        }
    }
    return false;
}

/// Every run of a results directory, sorted by name, and its sweeps; a run that did not complete
/// goes to `left_out` with its state (its traces, if any, are not a result).
void load_results(const fs::path& dir, const CompareOptions& options, Comparison& out) {
    std::vector<fs::path> children;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.is_directory(ec)) {
            children.push_back(entry.path());
        }
    }
    std::sort(children.begin(), children.end());
    for (const fs::path& child : children) {
        if (is_sweep_dir(child)) {
            load_sweep(child, options, out);
        } else if (fs::is_regular_file(child / run_files::k_record, ec)) {
            if (!options.query.query.empty() && !run_matches(options.query, summarize_run(child, ""))) {
                ++out.not_matching;
                continue;
            }
            const RunRecord record = RunRecord::load(child);
            if (record.state != RunState::completed) {
                out.left_out.push_back(fmt::format("{}: {}", child.filename().string(), to_string(record.state)));
                continue;
            }
            out.runs.push_back(load_compared_run(child, options));
        }
    }
}

} // namespace

Comparison compare_runs(const std::vector<fs::path>& inputs, const CompareOptions& options) {
    const auto is_sweep = [](const fs::path& input) { return is_sweep_dir(input) || is_results_dir(input); };
    const bool sweeps = std::any_of(inputs.begin(), inputs.end(), is_sweep);
    // Without a sweep the count is known before anything is read.
    const std::string needed = options.min_runs == 1 ? "one or more" : "two or more";
    if (inputs.size() < options.min_runs && !sweeps) {
        throw input_error(
            fmt::format("compare needs {} runs or bundles, got {} (`ccl-harness metrics` shows one)", needed, inputs.size()));
    }
    Comparison out;
    for (const fs::path& input : inputs) {
        if (is_sweep_dir(input)) {
            load_sweep(input, options, out);
        } else if (is_results_dir(input)) {
            load_results(input, options, out);
        } else {
            out.runs.push_back(load_compared_run(input, options));
        }
    }
    if (out.runs.size() < options.min_runs) {
        throw input_error(fmt::format("compare needs {} runs or bundles, got {}{}{} (`ccl-harness metrics` shows one)", needed,
                                      out.runs.size(),
                                      sweeps ? " (counting each completed run of a results directory and each sweep point with a "
                                               "run directory)"
                                             : "",
                                      out.not_matching == 0 ? std::string()
                                                            : fmt::format("; {} run{} did not match the filters", out.not_matching,
                                                                          out.not_matching == 1 ? "" : "s")));
    }
    for (std::size_t i = 0; i < out.runs.size(); ++i) {
        out.ranking.push_back(i);
    }
    // Runs without a step time go last, in the order given.
    std::stable_sort(out.ranking.begin(), out.ranking.end(), [&out](std::size_t a, std::size_t b) {
        const std::optional<double>& x = out.runs[a].breakdown.step;
        const std::optional<double>& y = out.runs[b].breakdown.step;
        return x && (!y || *x < *y);
    });
    out.differences = card_differences(out.runs);
    const std::vector<std::string> labels = run_labels(out.runs, out.differences);
    for (std::size_t i = 0; i < out.runs.size(); ++i) {
        out.runs[i].label = labels[i];
        out.runs[i].throughput = throughput_per_device(out.runs[i].card, out.runs[i].breakdown.step);
    }
    out.throughput_ranking = rank_by_throughput(out.runs);
    out.ranking_note = step_ranking_note(out.runs);
    out.missing = collapse_missing(out.runs);
    return out;
}

Json comparison_to_json(const Comparison& comparison) {
    Json runs = Json::array();
    Json ranking = Json::array();
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        ranking.push_back(comparison.runs[comparison.ranking[place]].name);
    }
    for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
        const ComparedRun& run = comparison.runs[i];
        Json entry = Json::object();
        entry["input"] = run.input;
        entry["kind"] = run.kind;
        entry["name"] = run.name;
        const auto place = std::find(comparison.ranking.begin(), comparison.ranking.end(), i);
        entry["rank"] = static_cast<long long>(place - comparison.ranking.begin()) + 1;
        entry["metrics_source"] = run.metrics_source;
        Json metrics = Json::object();
        for (const auto& [name, metric] : run.metrics) {
            Json value = Json::object();
            value["value"] = optional_json(metric.value);
            value["unit"] = metric.unit;
            value["why"] = metric.why;
            value["implausible"] = metric.implausible.empty() ? Json() : Json(metric.implausible);
            metrics[name] = std::move(value);
        }
        entry["metrics"] = std::move(metrics);
        Json breakdown = Json::object();
        breakdown["step"] = optional_json(run.breakdown.step);
        breakdown["compute"] = optional_json(run.breakdown.compute);
        breakdown["exposed"] = optional_json(run.breakdown.exposed);
        breakdown["overlapped"] = optional_json(run.breakdown.overlapped);
        breakdown["why"] = run.breakdown.why;
        entry["breakdown"] = std::move(breakdown);
        entry["card_paths_left_out"] = static_cast<long long>(run.card_paths_left_out);
        add_glance_json(comparison, i, entry);
        runs.push_back(std::move(entry));
    }
    Json differences = Json::array();
    for (const CardDifference& difference : comparison.differences) {
        Json values = Json::array();
        for (const auto& value : difference.values) {
            values.push_back(value ? Json(*value) : Json());
        }
        Json entry = Json::object();
        entry["path"] = difference.path;
        entry["values"] = std::move(values);
        differences.push_back(std::move(entry));
    }
    Json out = Json::object();
    out["runs"] = std::move(runs);
    out["ranking"] = std::move(ranking);
    out["differences"] = std::move(differences);
    out["ignored_paths"] = json_string_array(ignored_card_paths());
    Json by_throughput = Json::array();
    for (const std::size_t index : comparison.throughput_ranking) {
        by_throughput.push_back(comparison.runs[index].name);
    }
    out["throughput_ranking"] = std::move(by_throughput);
    out["ranking_note"] = comparison.ranking_note;
    Json missing = Json::array();
    for (const MissingNote& note : comparison.missing) {
        Json entry = Json::object();
        entry["metric"] = note.metric;
        entry["why"] = note.why;
        Json names = Json::array();
        for (const std::size_t index : note.runs) {
            names.push_back(comparison.runs[index].name);
        }
        entry["runs"] = std::move(names);
        entry["text"] = missing_note_text(note, comparison.runs.size());
        missing.push_back(std::move(entry));
    }
    out["missing"] = std::move(missing);
    out["left_out"] = json_string_array(comparison.left_out);
    out["not_matching"] = static_cast<long long>(comparison.not_matching);
    return out;
}

std::string card_bounds_note(const Comparison& comparison) {
    std::string out;
    if (comparison.differences.size() > k_max_shown_differences) {
        out += fmt::format("  ... and {} more differing path(s) (compare --json lists every one)\n",
                           comparison.differences.size() - k_max_shown_differences);
    }
    for (const ComparedRun& run : comparison.runs) {
        if (run.card_paths_left_out > 0) {
            out += fmt::format("  note: {}'s card has more than {} paths; {} were not compared\n", run.name, k_max_compared_card_paths,
                               run.card_paths_left_out);
        }
    }
    return out;
}

std::string comparison_table(const Comparison& comparison) {
    std::size_t width = 3;
    std::size_t label_width = 5;
    for (const ComparedRun& run : comparison.runs) {
        width = std::max(width, run.name.size());
        label_width = std::max(label_width, run.label.size());
    }
    const auto text = [](const std::optional<double>& value) { return value ? fmt::format("{:.6g}", *value) : std::string("n/a"); };
    std::string out;
    const bool any_throughput = std::any_of(comparison.runs.begin(), comparison.runs.end(),
                                            [](const ComparedRun& run) { return run.throughput.value.has_value(); });
    if (any_throughput) {
        out += "Ranking by throughput per device, highest first (work per step / avg_step_time / devices):\n";
        out += fmt::format("  {:>2}  {:<{}}  {:>14}  {:<16}  {:>12}  {}\n", "#", "label", label_width, "throughput", "unit",
                           "step (s)", "step spread min / median / max (s)");
        for (std::size_t place = 0; place < comparison.throughput_ranking.size(); ++place) {
            const ComparedRun& run = comparison.runs[comparison.throughput_ranking[place]];
            const std::optional<StepSpread> spread = step_spread(run.detail);
            out += fmt::format(
                "  {:>2}  {:<{}}  {:>14}  {:<16}  {:>12}  {}\n", place + 1, run.label, label_width, text(run.throughput.value),
                run.throughput.unit, text(run.breakdown.step),
                spread ? fmt::format("{:.4g} / {:.4g} / {:.4g} ({} steps)", spread->min, spread->median, spread->max, spread->count)
                       : "n/a");
        }
        out += "\n";
    }
    out += "Ranking by avg_step_time, fastest first (per step; n/a: see --json for why):\n";
    if (!comparison.ranking_note.empty()) {
        out += "  note: " + comparison.ranking_note + "\n";
    }
    out += fmt::format("  {:>2}  {:<{}}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>10}  {:<{}}  {}\n", "#", "run", width, "step (s)",
                       "comm (s)", "compute (s)", "exposed (s)", "overlap (%)", "mfu (%)", "label", label_width, "metrics");
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        out += fmt::format("  {:>2}  {:<{}}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>10}  {:<{}}  {}\n", place + 1, run.name, width,
                           text(run.breakdown.step), metric_text(run, "total_communication_time"), text(run.breakdown.compute),
                           text(run.breakdown.exposed), metric_text(run, "compute_comm_overlap"), metric_text(run, "mfu"), run.label,
                           label_width, run.metrics_source);
    }
    for (const MissingNote& note : comparison.missing) {
        out += "  " + missing_note_text(note, comparison.runs.size()) + "\n";
    }
    for (const ComparedRun& run : comparison.runs) {
        for (const auto& [name, metric] : run.metrics) {
            if (!metric.implausible.empty()) {
                out += fmt::format("  implausible (!): {} {}: {}\n", run.label, name, metric.implausible);
            }
        }
    }
    for (const ComparedRun& run : comparison.runs) {
        if (!run.overrides.empty()) {
            out += fmt::format("  sweep {} point {}: {}\n", run.sweep, run.name, join(run.overrides, " "));
        }
    }
    for (const std::string& left : comparison.left_out) {
        out += "  not compared: " + left + "\n";
    }
    if (comparison.not_matching != 0) {
        out += fmt::format("  not compared: {} run{} that did not match the filters\n", comparison.not_matching,
                           comparison.not_matching == 1 ? "" : "s");
    }
    const bool any_collective = std::any_of(comparison.runs.begin(), comparison.runs.end(),
                                            [](const ComparedRun& run) { return !run.detail.comm_by_collective.empty(); });
    if (any_collective) {
        out += "\nCommunication per step by collective (ms; each merged on its own, so parts may overlap):\n";
        for (const std::size_t index : comparison.ranking) {
            const ComparedRun& run = comparison.runs[index];
            std::vector<std::string> parts;
            for (const auto& [operation, seconds] : run.detail.comm_by_collective) {
                parts.push_back(fmt::format("{} {:.4g}", operation, seconds * 1e3));
            }
            out += fmt::format("  {:<{}}  {}\n", run.label, label_width, parts.empty() ? std::string("-") : join(parts, "  "));
        }
    }
    if (comparison.differences.empty()) {
        out += fmt::format("\nThe cards are the same (apart from {}).\n", join(ignored_card_paths(), ", "));
        return out + card_bounds_note(comparison);
    }
    out += fmt::format("\nCard differences ({} path{}; {} not compared):\n", comparison.differences.size(),
                       comparison.differences.size() == 1 ? "" : "s", join(ignored_card_paths(), ", "));
    const std::size_t shown = std::min(comparison.differences.size(), k_max_shown_differences);
    for (std::size_t d = 0; d < shown; ++d) {
        const CardDifference& difference = comparison.differences[d];
        out += "  " + difference.path + "\n";
        for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
            const auto& value = difference.values[i];
            out += fmt::format("    {:<{}}  {}\n", comparison.runs[i].name, width,
                               value ? (value->empty() ? std::string("(empty)") : *value) : std::string("(absent)"));
        }
    }
    out += card_bounds_note(comparison);
    return out;
}

} // namespace harness
