#include "workflows/run_repeat.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace harness {

RepeatOutcome summarize_repeats(std::vector<RunOutcome> runs) {
    RepeatOutcome out;
    std::map<std::string, std::vector<double>> values;
    for (const RunOutcome& run : runs) {
        if (out.exit_code == 0 && run.exit_code != 0) {
            out.exit_code = run.exit_code;
        }
        if (run.state != RunState::completed) {
            continue;
        }
        ++out.completed;
        for (const auto& [name, value] : run.headline) {
            values[name].push_back(value);
        }
    }
    for (const auto& [name, list] : values) {
        RepeatSpread spread;
        spread.runs = list.size();
        double sum = 0;
        for (const double v : list) {
            sum += v;
        }
        spread.mean = sum / static_cast<double>(list.size());
        double squares = 0;
        for (const double v : list) {
            squares += (v - spread.mean) * (v - spread.mean);
        }
        spread.stdev = list.size() > 1 ? std::sqrt(squares / static_cast<double>(list.size() - 1)) : 0;
        spread.min = *std::min_element(list.begin(), list.end());
        spread.max = *std::max_element(list.begin(), list.end());
        out.spread[name] = spread;
    }
    out.runs = std::move(runs);
    return out;
}

std::string format_repeat_summary(const RepeatOutcome& outcome) {
    std::string text = fmt::format("repeat: {} runs, {} completed\n", outcome.runs.size(), outcome.completed);
    for (const auto& [name, s] : outcome.spread) {
        const bool seconds = name == "avg_step_time";
        const char* unit = seconds ? " s" : "%";
        text += fmt::format("  {} over {} runs: mean {:.6g}{}, stdev {:.3g}, min {:.6g}, max {:.6g}{}\n", name, s.runs, s.mean, unit,
                            s.stdev, s.min, s.max,
                            s.mean != 0 ? fmt::format(" (max - min: {:.1f}% of the mean)", 100.0 * (s.max - s.min) / std::fabs(s.mean))
                                        : std::string());
    }
    return text;
}

Json repeat_outcome_to_json(const RepeatOutcome& outcome) {
    Json json = Json::object();
    Json runs = Json::array();
    for (const RunOutcome& run : outcome.runs) {
        runs.push_back(run_outcome_to_json(run));
    }
    json["runs"] = std::move(runs);
    json["completed"] = static_cast<long long>(outcome.completed);
    Json spread = Json::object();
    for (const auto& [name, s] : outcome.spread) {
        spread[name] = Json(Json::Object{{"runs", Json(static_cast<long long>(s.runs))},
                                         {"mean", Json(s.mean)},
                                         {"stdev", Json(s.stdev)},
                                         {"min", Json(s.min)},
                                         {"max", Json(s.max)}});
    }
    json["spread"] = std::move(spread);
    json["exit_code"] = outcome.exit_code;
    return json;
}

} // namespace harness
