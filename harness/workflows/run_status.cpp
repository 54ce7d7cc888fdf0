#include "workflows/run_status.hpp"
#include "util/quote.hpp"

#include "bundle/bundle_metrics.hpp"
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "util/error.hpp"
#include "util/own_file.hpp"
#include "util/strings.hpp"
#include "workflows/sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>

namespace harness {

std::optional<std::time_t> parse_utc(const std::string& text) {
    std::tm parts{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &parts.tm_year, &parts.tm_mon, &parts.tm_mday, &parts.tm_hour,
                    &parts.tm_min, &parts.tm_sec, &consumed) != 6 ||
        static_cast<std::size_t>(consumed) != text.size()) {
        return std::nullopt;
    }
    parts.tm_year -= 1900;
    parts.tm_mon -= 1;
    return timegm(&parts);
}

namespace {

// metrics.json is a few kilobytes to a few megabytes; past this a file is not one (run.json has
// its own, smaller bound: k_max_record_bytes, which attach and compare hold it to too).
constexpr std::uintmax_t k_max_metrics_bytes = std::uintmax_t{64} << 20;

/// A record's JSON, read as read_own_file reads it: a link, a FIFO or a device is a damaged run,
/// reported in `problem`, never followed or waited on.
std::optional<Json> read_json(const fs::path& file, std::uintmax_t max_bytes, std::string& problem) {
    std::string text;
    try {
        text = read_own_file(file, max_bytes);
    } catch (const HarnessError& error) {
        problem = error.what();
        return std::nullopt;
    }
    try {
        return Json::parse(text);
    } catch (const std::exception& error) {
        problem = fmt::format("{}: {}", file.filename().string(), error.what());
        return std::nullopt;
    }
}

std::optional<double> metric_value(const Json& metrics, const std::string& name) {
    const Json* all = metrics.find("metrics");
    const Json* metric = all != nullptr ? all->find(name) : nullptr;
    const Json* value = metric != nullptr ? metric->find("value") : nullptr;
    if (value == nullptr || !value->is_number()) {
        return std::nullopt;
    }
    return value->as_double();
}

} // namespace

RunSummary summarize_run(const fs::path& dir, const std::string& sweep) {
    RunSummary run;
    run.id = dir.filename().string();
    run.dir = dir.string();
    run.sweep = sweep;
    run.state = "unreadable";
    std::error_code ec;
    fs::path bundle = dir;
    bundle += ".tar.zst";
    if (fs::is_regular_file(bundle, ec)) {
        run.bundle = bundle.string();
    }
    const auto record = read_json(dir / run_files::k_record, k_max_record_bytes, run.problem);
    if (!record || !record->is_object()) {
        if (run.problem.empty()) {
            run.problem = "run.json: not a JSON object";
        }
        return run;
    }
    // Every field checked by the one reader of run.json's fields: a run directory is input, and
    // what status shows of it must be what attach and compare would accept.
    RunRecord typed;
    try {
        typed = RunRecord::from_json(*record);
    } catch (const HarnessError& error) {
        run.problem = error.what();
        return run;
    }
    run.state = to_string(typed.state);
    if (!is_final_state_name(run.state) && recorded_harness_gone(*record)) {
        // The record stopped where the harness did: its state is not the run's (Slurm's rule:
        // a job's state comes from what runs it, not from a stale record).
        const std::string& detached = typed.detached_job;
        run.problem = fmt::format(
            "recorded as {} by harness pid {}, which is gone{}", run.state, typed.harness_pid,
            detached.empty() ? "; its ranks died with it"
                             : fmt::format("; Slurm job {} was detached and may still run (squeue -j {})", detached, detached));
        run.state = k_harness_died;
    }
    run.card = typed.card;
    run.failure_class = typed.failure_class;
    run.failure_evidence = typed.failure_evidence;
    run.overrides = typed.overrides;
    run.target = typed.target;
    if (!typed.transitions.empty()) {
        run.start = typed.transitions.front().second;
        if (is_final_state_name(typed.transitions.back().first)) {
            run.end = typed.transitions.back().second;
            run.duration_s = seconds_between(run.start, run.end);
        }
    }
    if (fs::is_regular_file(fs::symlink_status(dir / k_metrics_name, ec))) {
        std::string problem;
        if (const auto metrics = read_json(dir / k_metrics_name, k_max_metrics_bytes, problem)) {
            run.avg_step_time = metric_value(*metrics, "avg_step_time");
            run.compute_comm_overlap = metric_value(*metrics, "compute_comm_overlap");
        } else {
            run.problem = problem;
        }
    }
    return run;
}

namespace {

SweepSummary summarize_sweep(const fs::path& dir) {
    SweepSummary sweep;
    sweep.id = dir.filename().string();
    sweep.dir = dir.string();
    try {
        const SweepRecord record = SweepRecord::load(dir);
        sweep.card = fs::path(record.card).filename().string();
        sweep.points = record.points.size();
        for (const auto& point : record.points) {
            ++sweep.states[to_string(point.state)];
            if (!point.run_dir.empty()) {
                sweep.overrides[fs::path(point.run_dir).filename().string()] = point.overrides;
            }
        }
    } catch (const HarnessError& error) {
        sweep.problem = error.what();
    }
    return sweep;
}

std::vector<fs::path> subdirectories(const fs::path& dir) {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::error_code kind;
        if (entry.is_directory(kind) && !entry.is_symlink(kind)) {
            dirs.push_back(entry.path());
        }
    }
    // Run and sweep ids carry their UTC start after the card name; sort by that.
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

/// Runs of a sweep live in its directory: `<sweep>/<run>`.
std::string run_label(const RunSummary& run) { return run.sweep.empty() ? run.id : run.sweep + "/" + run.id; }

std::string number_or_dash(const std::optional<double>& value, const char* format) {
    return value ? fmt::format(format, *value) : std::string("-");
}

} // namespace

std::optional<double> seconds_between(const std::string& start, const std::string& end) {
    const auto from = parse_utc(start);
    const auto to = parse_utc(end);
    if (!from || !to) {
        return std::nullopt;
    }
    return std::difftime(*to, *from);
}

ResultsStatus scan_results(const fs::path& results) {
    std::error_code ec;
    if (!fs::is_directory(results, ec)) {
        // Said the way a user looks for runs: what was looked at, and how to point elsewhere.
        throw input_error(
            fmt::format("{}: {}; runs go to ./results unless `run --results DIR` or `results:` in defaults.yaml put them elsewhere: "
                        "ccl-harness status DIR",
                        results.string(), fs::exists(results, ec) ? "not a directory" : "no such directory"));
    }
    ResultsStatus status;
    const auto add_sweep = [&status, &ec](const fs::path& dir) {
        status.sweeps.push_back(summarize_sweep(dir));
        const SweepSummary& sweep = status.sweeps.back();
        for (const auto& run : subdirectories(dir)) {
            if (fs::exists(run / run_files::k_record, ec)) {
                RunSummary summary = summarize_run(run, dir.filename().string());
                const auto found = sweep.overrides.find(run.filename().string());
                if (found != sweep.overrides.end()) {
                    summary.overrides = found->second;
                }
                status.runs.push_back(std::move(summary));
            }
        }
    };
    if (fs::exists(results / k_sweep_file, ec)) {
        add_sweep(results);
    } else {
        for (const auto& dir : subdirectories(results)) {
            if (fs::exists(dir / run_files::k_record, ec)) {
                status.runs.push_back(summarize_run(dir, ""));
            } else if (fs::exists(dir / k_sweep_file, ec)) {
                add_sweep(dir);
            }
        }
    }
    std::stable_sort(status.runs.begin(), status.runs.end(),
                     [](const RunSummary& a, const RunSummary& b) { return a.start < b.start; });
    return status;
}

std::string format_status(const ResultsStatus& status) {
    std::string text;
    if (status.runs.empty() && status.sweeps.empty()) {
        return "no runs or sweeps\n";
    }
    if (!status.runs.empty()) {
        std::size_t width = 3;
        // Names come from directory names and run.json: escaped one line each, so that none can
        // draw a fake row (a newline in a directory name) or move the cursor.
        for (const auto& run : status.runs) {
            width = std::max(width, terminal_text(run_label(run)).size());
        }
        text += fmt::format("{:<{}} {:<10} {:<14} {:<20} {:>9} {:>11} {:>9}  {}\n", "RUN", width, "STATE", "TARGET", "STARTED (UTC)",
                            "DURATION", "STEP (s)", "OVERLAP", "BUNDLE");
        for (const auto& run : status.runs) {
            text += fmt::format("{:<{}} {:<10} {:<14} {:<20} {:>9} {:>11} {:>9}  {}\n", terminal_text(run_label(run)), width,
                                terminal_text(run.state), run.target.empty() ? "-" : terminal_text(run.target),
                                run.start.empty() ? "-" : terminal_text(run.start), number_or_dash(run.duration_s, "{:.0f}s"),
                                number_or_dash(run.avg_step_time, "{:.6f}"), number_or_dash(run.compute_comm_overlap, "{:.1f}%"),
                                run.bundle.empty() ? "-" : terminal_text(fs::path(run.bundle).filename().string()));
            if (!run.problem.empty()) {
                text += fmt::format("  {}\n", terminal_text(run.problem));
            }
            if (!run.failure_class.empty()) {
                text += fmt::format("  failure class {}: {}\n", terminal_text(run.failure_class), terminal_text(run.failure_evidence));
            }
            if (!run.overrides.empty()) {
                text += fmt::format("  {}: {}\n", run.sweep.empty() ? "set" : "point", terminal_text(join(run.overrides, " ")));
            }
        }
    }
    if (!status.sweeps.empty()) {
        std::size_t width = 5;
        for (const auto& sweep : status.sweeps) {
            width = std::max(width, terminal_text(sweep.id).size());
        }
        text += fmt::format("{}{:<{}} {:>6}  {}\n", status.runs.empty() ? "" : "\n", "SWEEP", width, "POINTS", "STATES");
        for (const auto& sweep : status.sweeps) {
            std::string states;
            for (const auto& [state, count] : sweep.states) {
                states += fmt::format("{}{} {}", states.empty() ? "" : ", ", count, state);
            }
            text += fmt::format("{:<{}} {:>6}  {}\n", terminal_text(sweep.id), width, sweep.points,
                                terminal_text(sweep.problem.empty() ? states : sweep.problem));
        }
    }
    return text;
}

Json status_to_json(const ResultsStatus& status) {
    auto optional = [](const std::optional<double>& value) { return value ? Json(*value) : Json(); };
    Json json = Json::object();
    json["runs"] = Json::array();
    for (const auto& run : status.runs) {
        Json entry = Json::object();
        entry["id"] = run.id;
        entry["dir"] = run.dir;
        entry["sweep"] = run.sweep;
        entry["state"] = run.state;
        entry["card"] = run.card;
        entry["target"] = run.target;
        entry["start"] = run.start;
        entry["end"] = run.end;
        entry["duration_s"] = optional(run.duration_s);
        entry["bundle"] = run.bundle;
        entry["avg_step_time"] = optional(run.avg_step_time);
        entry["compute_comm_overlap"] = optional(run.compute_comm_overlap);
        entry["problem"] = run.problem;
        entry["failure_class"] = run.failure_class.empty() ? Json() : Json(run.failure_class);
        entry["failure_evidence"] = run.failure_class.empty() ? Json() : Json(run.failure_evidence);
        entry["overrides"] = json_string_array(run.overrides);
        json["runs"].push_back(entry);
    }
    json["sweeps"] = Json::array();
    for (const auto& sweep : status.sweeps) {
        Json entry = Json::object();
        entry["id"] = sweep.id;
        entry["dir"] = sweep.dir;
        entry["card"] = sweep.card;
        entry["points"] = static_cast<long long>(sweep.points);
        Json states = Json::object();
        for (const auto& [state, count] : sweep.states) {
            states[state] = static_cast<long long>(count);
        }
        entry["states"] = states;
        entry["problem"] = sweep.problem;
        json["sweeps"].push_back(entry);
    }
    return json;
}

} // namespace harness
