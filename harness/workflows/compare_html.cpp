#include "workflows/compare_html.hpp"

#include "util/strings.hpp"
#include "util/version.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace harness {

namespace {

// Horizontal bars, one row per run: run names are long (<card>-<UTC>-<hash>) and read best
// left of their bar.
constexpr double k_width = 960;
constexpr double k_label = 330; // run names
constexpr double k_plot = 480;  // bar area; the rest holds the value text
constexpr double k_row = 30;
constexpr double k_top = 30; // axis labels above the bars

const char* const k_style = R"(body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}td.run{white-space:nowrap}
.chart text{font-size:12px}.chart .axis{stroke:#999}.chart .grid{stroke:#e4e4e4}
.compute{fill:#4e79a7}.overlapped{fill:#59a14f}.exposed{fill:#e15759}.mfu{fill:#f28e2b}.implausible .mfu{fill:#bab0ac}.implausible{color:#b00}
.na text.why{fill:#a00;font-style:italic}.na rect{fill:none;stroke:#bbb;stroke-dasharray:4 3}
.point circle{fill:#4e79a7;stroke:#fff}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}
p.note{font-size:13px;color:#555}p.warn{color:#8a5300}
#missing{font-size:13px;color:#555}td.slowest{background:#fde2e2;font-weight:bold}td.id{font-size:11px;color:#777}
.spread .range{stroke:#4e79a7;stroke-width:2}.spread .box{fill:#a0cbe8}.spread .median{stroke:#222;stroke-width:2}
)";

std::string number(double value) { return fmt::format("{:.4g}", value); }

std::string optional_number(const std::optional<double>& value) { return value ? number(*value) : "n/a"; }

/// The axis end: the largest value rounded up to 1, 2, 2.5 or 5 times a power of ten, so the
/// quarter ticks read as round numbers.
double axis_top(double fallback, const std::vector<double>& values) {
    const double most = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
    if (!(most > 0)) {
        return fallback;
    }
    const double scale = std::pow(10.0, std::floor(std::log10(most)));
    for (const double step : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        if (most <= step * scale) {
            return step * scale;
        }
    }
    return 10 * scale;
}

/// Vertical grid lines with their values above, at quarters of [0, top].
std::string grid(double top, double x0, double width, double height, const std::string& unit) {
    std::string out;
    for (int i = 0; i <= 4; ++i) {
        const double x = x0 + width * i / 4.0;
        out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", x, k_top - 4, k_top + height);
        out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>", x, k_top - 8, number(top * i / 4.0),
                           i == 4 ? " " + unit : "");
    }
    return out;
}

/// The run's label ("bs=16 seq=64"); its id shows on hover.
std::string run_label(const ComparedRun& run, std::size_t place, double y) {
    return fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\"><title>{}</title>{}. {}</text>", k_label - 8,
                       y + k_row / 2 + 4, html_escape(run.name), place + 1, html_escape(run.label));
}

/// The frame both bar charts share: one row per run in ranking order, its label, and the bar
/// `bar(run, y)` draws on the axis [0, top].
template <typename Has, typename Bar>
std::string bar_chart(const Comparison& comparison, std::string_view id, std::string_view label, const std::string& unit, double top,
                      const Has& has, const Bar& bar) {
    const auto rows = static_cast<std::size_t>(std::count_if(comparison.runs.begin(), comparison.runs.end(), has));
    const double height = k_row * static_cast<double>(rows);
    std::string out = fmt::format("<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
                                  "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">",
                                  id, k_width, height + k_top + 10, label);
    out += grid(top, k_label, k_plot, height, unit);
    std::size_t row = 0;
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        if (!has(run)) {
            continue;
        }
        const double y = k_top + k_row * static_cast<double>(row++);
        out += run_label(run, place, y);
        out += bar(run, y);
    }
    return out + "</svg>";
}

std::string breakdown_chart(const Comparison& comparison) {
    std::vector<double> steps;
    for (const ComparedRun& run : comparison.runs) {
        if (run.breakdown.compute) {
            steps.push_back(std::max(*run.breakdown.step, *run.breakdown.compute + *run.breakdown.exposed));
        }
    }
    const double top = axis_top(1, steps);
    const auto has = [](const ComparedRun& run) { return run.breakdown.compute.has_value(); };
    return bar_chart(comparison, "chart-breakdown", "step time breakdown", "s", top, has, [top](const ComparedRun& run, double y) {
        const StepBreakdown& b = run.breakdown;
        // compute includes the overlapped communication; draw compute-only, then the overlapped
        // part, then the exposed part, so the bar's length is the step time.
        const double compute_only = std::max(0.0, *b.compute - *b.overlapped);
        const double segments[] = {compute_only, *b.overlapped, *b.exposed};
        const char* const classes[] = {"compute", "overlapped", "exposed"};
        std::string out = fmt::format("<g class=\"bar\" data-run=\"{}\"><title>{}: step {} s = compute only {} s + overlapped "
                                      "communication {} s + exposed communication {} s</title>",
                                      html_escape(run.name), html_escape(run.name), number(*b.step), number(compute_only),
                                      number(*b.overlapped), number(*b.exposed));
        double x = k_label;
        for (int i = 0; i < 3; ++i) {
            const double w = std::max(0.0, segments[i]) / top * k_plot;
            out += fmt::format("<rect class=\"seg {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", classes[i], x, y + 4, w,
                               k_row - 8);
            x += w;
        }
        return out + fmt::format("<text x=\"{}\" y=\"{}\">{} s</text></g>", x + 6, y + k_row / 2 + 4, number(*b.step));
    });
}

std::string mfu_chart(const Comparison& comparison) {
    std::vector<double> values;
    for (const ComparedRun& run : comparison.runs) {
        const auto found = run.metrics.find("mfu");
        if (found != run.metrics.end() && found->second.value) {
            values.push_back(*found->second.value);
        }
    }
    const double top = axis_top(1, values);
    const auto has = [](const ComparedRun& run) {
        const auto found = run.metrics.find("mfu");
        return found != run.metrics.end() && found->second.value.has_value();
    };
    return bar_chart(comparison, "chart-mfu", "model FLOPs utilization", "%", top, has, [top](const ComparedRun& run, double y) {
        const auto found = run.metrics.find("mfu");
        const double value = *found->second.value;
        const double w = std::max(0.0, value) / top * k_plot;
        // A value no run can have is drawn, never without its flag.
        const std::string& implausible = found->second.implausible;
        return fmt::format("<g class=\"bar{8}\" data-run=\"{0}\"><title>{0}: mfu {1} %{9}</title>"
                           "<rect class=\"mfu\" x=\"{2}\" y=\"{3}\" width=\"{4}\" height=\"{5}\"/>"
                           "<text x=\"{6}\" y=\"{7}\">{1} %{10}</text></g>",
                           html_escape(run.name), number(value), k_label, y + 4, w, k_row - 8, k_label + w + 6, y + k_row / 2 + 4,
                           implausible.empty() ? "" : " implausible",
                           implausible.empty() ? "" : " (implausible: " + html_escape(implausible) + ")",
                           implausible.empty() ? "" : " &#9888; implausible");
    });
}

std::string scatter_chart(const Comparison& comparison, std::vector<std::string>& left_out) {
    constexpr double x0 = 60, y0 = 20, w = 820, h = 360;
    std::vector<double> steps;
    for (const ComparedRun& run : comparison.runs) {
        if (run.breakdown.step) {
            steps.push_back(*run.breakdown.step);
        }
    }
    const double right = axis_top(1, steps);
    std::string out = fmt::format("<svg id=\"chart-scatter\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
                                  "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"overlap against step time\">",
                                  k_width, h + y0 + 50);
    for (int i = 0; i <= 4; ++i) {
        const double x = x0 + w * i / 4.0;
        const double y = y0 + h - h * i / 4.0;
        out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
                           "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
                           x, y0, y0 + h, y0 + h + 16, number(right * i / 4.0));
        out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
                           "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>",
                           x0, y, x0 + w, x0 - 6, y + 4, 25 * i);
    }
    out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
                       "<line class=\"axis\" x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\"/>",
                       x0, y0, y0 + h, x0 + w);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">avg_step_time (s)</text>", x0 + w / 2, y0 + h + 38);
    out += fmt::format("<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0})\">"
                       "compute_comm_overlap (%)</text>",
                       y0 + h / 2);
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        const auto overlap = run.metrics.find("compute_comm_overlap");
        if (!run.breakdown.step || overlap == run.metrics.end() || !overlap->second.value) {
            left_out.push_back(fmt::format("{}. {}", place + 1, run.label));
            continue;
        }
        const double x = x0 + *run.breakdown.step / right * w;
        const double y = y0 + h - std::clamp(*overlap->second.value, 0.0, 100.0) / 100.0 * h;
        out += fmt::format("<g class=\"point\" data-run=\"{0}\"><title>{0}: step {1} s, overlap {2} %</title>"
                           "<circle cx=\"{3}\" cy=\"{4}\" r=\"6\"/><text x=\"{5}\" y=\"{6}\">{7}</text></g>",
                           html_escape(run.name), number(*run.breakdown.step), number(*overlap->second.value), x, y, x + 9, y - 7,
                           place + 1);
    }
    return out + "</svg>";
}

/// The headline: highest throughput per device first, each run by its label (its id on hover and
/// in the last column), with its step time and the spread of its steps.
std::string throughput_table(const Comparison& comparison) {
    const bool sweep = std::any_of(comparison.runs.begin(), comparison.runs.end(),
                                   [](const ComparedRun& run) { return !run.overrides.empty(); });
    std::string out = "<table id=\"throughput\"><tr><th>#</th><th>run</th><th>throughput per device</th><th>step (s)</th>"
                      "<th>step min / median / max (s)</th>";
    out += sweep ? "<th>sweep point</th>" : "";
    out += "<th>id</th></tr>";
    for (std::size_t place = 0; place < comparison.throughput_ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.throughput_ranking[place]];
        const std::optional<StepSpread> spread = step_spread(run.detail);
        const std::string throughput = run.throughput.value
                                           ? fmt::format("<span title=\"{}\">{} {}</span>", html_escape(run.throughput.basis),
                                                         number(*run.throughput.value), html_escape(run.throughput.unit))
                                           : fmt::format("<i title=\"{}\">n/a</i>", html_escape(run.throughput.why));
        out += fmt::format("<tr class=\"run\" data-run=\"{0}\"><td class=\"num\">{1}</td><td class=\"label\" title=\"{0}\">{2}</td>"
                           "<td class=\"num throughput\">{3}</td><td class=\"num\">{4}</td><td class=\"num\">{5}</td>",
                           html_escape(run.name), place + 1, html_escape(run.label), throughput, optional_number(run.breakdown.step),
                           spread ? fmt::format("{} / {} / {} ({} steps)", number(spread->min), number(spread->median),
                                                number(spread->max), spread->count)
                                  : "n/a");
        if (sweep) {
            out += "<td>" + html_escape(run.sweep.empty() ? "" : run.sweep + ": " + join(run.overrides, " ")) + "</td>";
        }
        out += "<td class=\"id\">" + html_escape(run.name) + "</td></tr>";
    }
    return out + "</table>";
}

/// One note per metric and reason for the values that are n/a, instead of a row of gaps.
std::string missing_notes(const Comparison& comparison) {
    if (comparison.missing.empty()) {
        return {};
    }
    std::string out = "<ul id=\"missing\">";
    for (const MissingNote& note : comparison.missing) {
        std::vector<std::string> labels;
        for (const std::size_t index : note.runs) {
            labels.push_back(comparison.runs[index].label);
        }
        out += fmt::format("<li class=\"missing-note\" data-metric=\"{}\" title=\"{}\">{}</li>", html_escape(note.metric),
                           html_escape(join(labels, "; ")), html_escape(missing_note_text(note, comparison.runs.size())));
    }
    return out + "</ul>";
}

/// A bar from the fastest to the slowest step with a tick at the median, on one axis for all
/// runs, so noise reads as the bar's length.
std::string spread_chart(const Comparison& comparison) {
    std::vector<double> maxima;
    for (const ComparedRun& run : comparison.runs) {
        if (const std::optional<StepSpread> spread = step_spread(run.detail)) {
            maxima.push_back(spread->max);
        }
    }
    const double top = axis_top(1, maxima);
    const auto has = [](const ComparedRun& run) { return step_spread(run.detail).has_value(); };
    return bar_chart(comparison, "chart-spread", "step time spread", "s", top, has, [top](const ComparedRun& run, double y) {
        const StepSpread spread = *step_spread(run.detail);
        const double x0 = k_label + spread.min / top * k_plot;
        const double x1 = k_label + spread.max / top * k_plot;
        const double xm = k_label + spread.median / top * k_plot;
        return fmt::format("<g class=\"spread\" data-run=\"{0}\"><title>{0}: {1} steps, min {2} s, median {3} s, max {4} s</title>"
                           "<line class=\"range\" x1=\"{5}\" y1=\"{8}\" x2=\"{6}\" y2=\"{8}\"/>"
                           "<rect class=\"box\" x=\"{5}\" y=\"{9}\" width=\"{10}\" height=\"{11}\"/>"
                           "<line class=\"median\" x1=\"{7}\" y1=\"{9}\" x2=\"{7}\" y2=\"{12}\"/>"
                           "<text x=\"{13}\" y=\"{14}\">{3} s ({2}&#8211;{4})</text></g>",
                           html_escape(run.name), spread.count, number(spread.min), number(spread.median), number(spread.max), x0, x1,
                           xm, y + k_row / 2, y + 6, std::max(1.0, x1 - x0), k_row - 12, y + k_row - 6, x1 + 6, y + k_row / 2 + 4);
    });
}

const char* const k_palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"};

/// Each run's step durations in order (the mean over ranks of the i-th inner step), one line each.
std::string timeline_chart(const Comparison& comparison) {
    constexpr double x0 = 60, y0 = 20, w = 820, h = 240;
    std::vector<std::vector<double>> lines(comparison.runs.size());
    std::vector<double> all;
    std::size_t longest = 0;
    for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
        const RunDetail& detail = comparison.runs[i].detail;
        for (std::size_t step = 0;; ++step) {
            double sum = 0;
            std::size_t ranks = 0;
            for (const std::vector<double>& rank : detail.steps) {
                if (step < rank.size()) {
                    sum += rank[step];
                    ++ranks;
                }
            }
            if (ranks == 0) {
                break;
            }
            lines[i].push_back(sum / static_cast<double>(ranks));
        }
        all.insert(all.end(), lines[i].begin(), lines[i].end());
        longest = std::max(longest, lines[i].size());
    }
    if (longest == 0) {
        return "<p class=\"note\" id=\"chart-timeline\">No per-step times: the traces could not be read.</p>";
    }
    const double top = axis_top(1, all);
    const double span = longest > 1 ? static_cast<double>(longest - 1) : 1.0;
    std::string out = fmt::format("<svg id=\"chart-timeline\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
                                  "height=\"{}\" role=\"img\" aria-label=\"step time per step\">",
                                  k_width, h + y0 + 44);
    for (int i = 0; i <= 4; ++i) {
        const double y = y0 + h - h * i / 4.0;
        out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
                           "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>",
                           x0, y, x0 + w, x0 - 6, y + 4, number(top * i / 4.0));
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">inner step (1 to {}); step time (s) up</text>", x0 + w / 2,
                       y0 + h + 30, longest);
    for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
        if (lines[i].empty()) {
            continue;
        }
        std::string points;
        for (std::size_t step = 0; step < lines[i].size(); ++step) {
            points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x0 + w * static_cast<double>(step) / span,
                                  y0 + h - lines[i][step] / top * h);
        }
        const char* colour = k_palette[i % std::size(k_palette)];
        out += fmt::format("<g class=\"line\" data-run=\"{0}\"><title>{1} ({0})</title><polyline points=\"{2}\" fill=\"none\" "
                           "stroke=\"{3}\" stroke-width=\"2\"/></g>",
                           html_escape(comparison.runs[i].name), html_escape(comparison.runs[i].label), points, colour);
    }
    out += "</svg><p class=\"legend\">";
    for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
        out += fmt::format("<span style=\"background:{}\"></span>{}", k_palette[i % std::size(k_palette)],
                           html_escape(comparison.runs[i].label));
    }
    return out + "</p>";
}

/// Each rank's average step, the slowest marked: a straggler stands out.
std::string per_rank_table(const Comparison& comparison) {
    std::size_t ranks = 0;
    for (const ComparedRun& run : comparison.runs) {
        ranks = std::max(ranks, run.detail.ranks.size());
    }
    std::string out = "<table id=\"per-rank\"><tr><th>run</th>";
    for (std::size_t r = 0; r < ranks; ++r) {
        out += fmt::format("<th>rank {} step (s)</th>", r);
    }
    out += "<th>straggler</th></tr>";
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        const RunDetail& d = run.detail;
        out += fmt::format("<tr data-run=\"{0}\"><td class=\"label\" title=\"{0}\">{1}</td>", html_escape(run.name),
                           html_escape(run.label));
        std::optional<double> slowest;
        for (const auto& value : d.rank_step) {
            if (value && (!slowest || *value > *slowest)) {
                slowest = value;
            }
        }
        for (std::size_t r = 0; r < ranks; ++r) {
            const std::optional<double> value = r < d.rank_step.size() ? d.rank_step[r] : std::nullopt;
            const bool mark = value && slowest && *value == *slowest && d.rank_step.size() > 1;
            out += fmt::format("<td class=\"num{}\">{}</td>", mark ? " slowest" : "", optional_number(value));
        }
        out += fmt::format("<td class=\"num\">{}</td></tr>",
                           d.why.empty() ? optional_number(d.straggler) : html_escape("n/a: " + d.why));
    }
    return out + "</table>";
}

/// Communication time per step by collective operation (each merged on its own, so they may overlap).
std::string collective_table(const Comparison& comparison) {
    std::vector<std::string> operations;
    for (const ComparedRun& run : comparison.runs) {
        for (const auto& [operation, seconds] : run.detail.comm_by_collective) {
            if (std::find(operations.begin(), operations.end(), operation) == operations.end()) {
                operations.push_back(operation);
            }
        }
    }
    std::sort(operations.begin(), operations.end());
    if (operations.empty()) {
        return "<p class=\"note\" id=\"comm-collective\">No communication per collective: no communication inside the steps, or "
               "the traces could not be read.</p>";
    }
    std::string out = "<table id=\"comm-collective\"><tr><th>run</th>";
    for (const std::string& operation : operations) {
        out += "<th>" + html_escape(operation) + " (ms/step)</th>";
    }
    out += "</tr>";
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        out += fmt::format("<tr data-run=\"{0}\"><td class=\"label\" title=\"{0}\">{1}</td>", html_escape(run.name),
                           html_escape(run.label));
        for (const std::string& operation : operations) {
            const auto found = std::find_if(run.detail.comm_by_collective.begin(), run.detail.comm_by_collective.end(),
                                            [&operation](const auto& part) { return part.first == operation; });
            out += fmt::format("<td class=\"num\">{}</td>",
                               found == run.detail.comm_by_collective.end() ? std::string("-") : number(found->second * 1e3));
        }
        out += "</tr>";
    }
    return out + "</table>";
}

std::string ranking_table(const Comparison& comparison) {
    std::string out =
        "<table id=\"ranking\"><tr><th>#</th><th>run</th><th>label</th><th>input</th><th>step (s)</th><th>compute (s)</th>"
        "<th>exposed comm (s)</th><th>overlapped comm (s)</th><th>overlap (%)</th><th>mfu (%)</th>"
        "<th>metrics</th></tr>";
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        const auto metric = [&run](const char* name) {
            const auto found = run.metrics.find(name);
            if (found == run.metrics.end()) {
                return std::string("n/a");
            }
            return optional_number(found->second.value) +
                   (found->second.implausible.empty()
                        ? std::string()
                        : " <span class=\"implausible\" title=\"" + html_escape(found->second.implausible) + "\">&#9888;</span>");
        };
        const StepBreakdown& b = run.breakdown;
        out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"run\">{}</td><td class=\"label\">{}</td><td>{} ({})</td><td "
                           "class=\"num\">{}</td>"
                           "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                           "<td class=\"num\">{}</td><td>{}</td></tr>",
                           place + 1, html_escape(run.name), html_escape(run.label), html_escape(run.input), html_escape(run.kind),
                           optional_number(b.step), optional_number(b.compute), optional_number(b.exposed),
                           optional_number(b.overlapped), metric("compute_comm_overlap"), metric("mfu"),
                           html_escape(run.metrics_source));
    }
    return out + "</table>";
}

std::string differences_table(const Comparison& comparison) {
    std::string out = fmt::format("<p class=\"note\">Only card fields whose values differ are shown ({} not compared: it "
                                  "names the bundle itself). Empty: the field is in the card without a value; absent: "
                                  "not in the card.</p>",
                                  html_escape(join(ignored_card_paths(), ", ")));
    out += "<table id=\"differences\"><tr><th>card field</th>";
    for (const ComparedRun& run : comparison.runs) {
        out += "<th title=\"" + html_escape(run.name) + "\">" + html_escape(run.label) + "</th>";
    }
    out += "</tr>";
    const std::size_t shown = std::min(comparison.differences.size(), k_max_shown_differences);
    for (std::size_t d = 0; d < shown; ++d) {
        const CardDifference& difference = comparison.differences[d];
        out += "<tr><td>" + html_escape(difference.path) + "</td>";
        for (const auto& value : difference.values) {
            out += "<td>" + (value ? (value->empty() ? std::string("<i>empty</i>") : html_escape(*value)) : "<i>absent</i>") + "</td>";
        }
        out += "</tr>";
    }
    if (comparison.differences.empty()) {
        out += fmt::format("<tr><td colspan=\"{}\">the cards are the same</td></tr>", comparison.runs.size() + 1);
    }
    out += "</table>";
    if (const std::string note = card_bounds_note(comparison); !note.empty()) {
        out += "<p class=\"note\">" + html_escape(note) + "</p>";
    }
    return out;
}

} // namespace

std::string html_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string comparison_html(const Comparison& comparison) {
    std::vector<std::string> left_out;
    const std::string scatter = scatter_chart(comparison, left_out);
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
                      "<title>ccl-harness compare</title><style>";
    out += k_style;
    out += fmt::format("</style></head><body><h1>ccl-harness compare: {} runs</h1>", comparison.runs.size());
    out += "<h2>Ranking by throughput per device, highest first</h2><p class=\"note\">Throughput per device = "
           "workload.data.batch_size &times; seq_len (tokens; samples without seq_len) / avg_step_time / "
           "xpu_spec.total_count, batch_size being the global batch. Runs are labelled by the card values that differ "
           "between them; hover a label for the run's id.</p>" +
           throughput_table(comparison);
    out += missing_notes(comparison);
    out += "<h2>Ranking by avg_step_time, fastest first</h2>";
    if (!comparison.ranking_note.empty()) {
        out += "<p class=\"note warn\" id=\"ranking-note\">Note: " + html_escape(comparison.ranking_note) + ".</p>";
    }
    out += ranking_table(comparison);
    out += "<h2>Step time spread</h2><p class=\"note\">Every inner step of every rank: the bar runs from the fastest to the "
           "slowest step, the tick is the median.</p>" +
           spread_chart(comparison);
    out += "<h2>Step time per step</h2>" + timeline_chart(comparison);
    out += "<h2>Where a step's time goes</h2><p class=\"note\">Derived per step from the metrics: overlapped "
           "communication = total_communication_time &times; compute_comm_overlap / 100; exposed communication = "
           "total_communication_time &minus; overlapped; compute = avg_step_time &minus; exposed, drawn as compute only "
           "(compute &minus; overlapped) followed by the overlapped part, so each bar is as long as the step.</p>"
           "<p class=\"legend\"><span class=\"compute\" style=\"background:#4e79a7\"></span>compute only"
           "<span style=\"background:#59a14f\"></span>overlapped communication"
           "<span style=\"background:#e15759\"></span>exposed communication</p>";
    out += breakdown_chart(comparison);
    out += "<h2>Communication by collective</h2><p class=\"note\">Seconds per step spent in each collective operation (the "
           "kernel or host operator name, as the metrics classify it), each merged on its own: parts may overlap.</p>" +
           collective_table(comparison);
    out += "<h2>Per rank</h2><p class=\"note\">Each rank's average step; the slowest is marked. straggler is the metric "
           "(slowest rank / mean).</p>" +
           per_rank_table(comparison);
    const bool any_mfu = std::any_of(comparison.runs.begin(), comparison.runs.end(), [](const ComparedRun& run) {
        const auto found = run.metrics.find("mfu");
        return found != run.metrics.end() && found->second.value.has_value();
    });
    // All n/a: the note above says why once; an empty chart would say nothing more.
    if (any_mfu) {
        out += "<h2>Model FLOPs utilization</h2>" + mfu_chart(comparison);
    }
    out += "<h2>Overlap against step time</h2><p class=\"note\">Each point is numbered by its place in the ranking.</p>";
    out += scatter;
    if (!left_out.empty()) {
        out += "<p class=\"note missing\">Not plotted (no step time or no overlap): " + html_escape(join(left_out, "; ")) + "</p>";
    }
    if (!comparison.left_out.empty()) {
        out += "<p class=\"note\" id=\"left-out\">Sweep points not compared: " + html_escape(join(comparison.left_out, "; ")) + "</p>";
    }
    out += "<h2>Card differences</h2>" + differences_table(comparison);
    out += fmt::format("<p class=\"note\">Made by ccl-harness {}.</p></body></html>\n", k_version);
    return out;
}

} // namespace harness
