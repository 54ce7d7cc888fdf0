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
.compute{fill:#4e79a7}.overlapped{fill:#59a14f}.exposed{fill:#e15759}.mfu{fill:#f28e2b}
.na text.why{fill:#a00;font-style:italic}.na rect{fill:none;stroke:#bbb;stroke-dasharray:4 3}
.point circle{fill:#4e79a7;stroke:#fff}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}
p.note{font-size:13px;color:#555}
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

std::string run_label(const ComparedRun& run, std::size_t place, double y) {
    return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}. {}</text>", k_label - 8, y + k_row / 2 + 4, place + 1,
                       html_escape(run.name));
}

/// A missing value keeps its row: a dashed outline and the reason, so a gap is never mistaken
/// for zero.
std::string missing_bar(const std::string& name, const std::string& why, double y) {
    return fmt::format("<g class=\"bar na\" data-run=\"{0}\"><rect x=\"{1}\" y=\"{2}\" width=\"{3}\" height=\"{4}\"/>"
                       "<text class=\"why\" x=\"{5}\" y=\"{6}\">n/a: {7}</text></g>",
                       html_escape(name), k_label, y + 4, k_plot, k_row - 8, k_label + 6, y + k_row / 2 + 4, html_escape(why));
}

/// The frame both bar charts share: one row per run in ranking order, its label, and the bar
/// `bar(run, y)` draws on the axis [0, top].
template <typename Bar>
std::string bar_chart(const Comparison& comparison, std::string_view id, std::string_view label, const std::string& unit, double top,
                      const Bar& bar) {
    const double height = k_row * static_cast<double>(comparison.runs.size());
    std::string out = fmt::format("<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
                                  "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">",
                                  id, k_width, height + k_top + 10, label);
    out += grid(top, k_label, k_plot, height, unit);
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        const double y = k_top + k_row * static_cast<double>(place);
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
    return bar_chart(comparison, "chart-breakdown", "step time breakdown", "s", top, [top](const ComparedRun& run, double y) {
        const StepBreakdown& b = run.breakdown;
        if (!b.compute) {
            return missing_bar(run.name, b.why, y);
        }
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
    return bar_chart(comparison, "chart-mfu", "model FLOPs utilization", "%", top, [top](const ComparedRun& run, double y) {
        const auto found = run.metrics.find("mfu");
        if (found == run.metrics.end() || !found->second.value) {
            return missing_bar(run.name, found == run.metrics.end() ? "not in the metrics" : found->second.why, y);
        }
        const double value = *found->second.value;
        const double w = std::max(0.0, value) / top * k_plot;
        return fmt::format("<g class=\"bar\" data-run=\"{0}\"><title>{0}: mfu {1} %</title>"
                           "<rect class=\"mfu\" x=\"{2}\" y=\"{3}\" width=\"{4}\" height=\"{5}\"/>"
                           "<text x=\"{6}\" y=\"{7}\">{1} %</text></g>",
                           html_escape(run.name), number(value), k_label, y + 4, w, k_row - 8, k_label + w + 6, y + k_row / 2 + 4);
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
            left_out.push_back(fmt::format("{}. {}", place + 1, run.name));
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

std::string ranking_table(const Comparison& comparison) {
    std::string out = "<table id=\"ranking\"><tr><th>#</th><th>run</th><th>input</th><th>step (s)</th><th>compute (s)</th>"
                      "<th>exposed comm (s)</th><th>overlapped comm (s)</th><th>overlap (%)</th><th>mfu (%)</th>"
                      "<th>metrics</th></tr>";
    for (std::size_t place = 0; place < comparison.ranking.size(); ++place) {
        const ComparedRun& run = comparison.runs[comparison.ranking[place]];
        const auto metric = [&run](const char* name) {
            const auto found = run.metrics.find(name);
            return found == run.metrics.end() ? std::string("n/a") : optional_number(found->second.value);
        };
        const StepBreakdown& b = run.breakdown;
        out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"run\">{}</td><td>{} ({})</td><td class=\"num\">{}</td>"
                           "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                           "<td class=\"num\">{}</td><td>{}</td></tr>",
                           place + 1, html_escape(run.name), html_escape(run.input), html_escape(run.kind), optional_number(b.step),
                           optional_number(b.compute), optional_number(b.exposed), optional_number(b.overlapped),
                           metric("compute_comm_overlap"), metric("mfu"), html_escape(run.metrics_source));
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
        out += "<th>" + html_escape(run.name) + "</th>";
    }
    out += "</tr>";
    for (const CardDifference& difference : comparison.differences) {
        out += "<tr><td>" + html_escape(difference.path) + "</td>";
        for (const auto& value : difference.values) {
            out += "<td>" + (value ? (value->empty() ? std::string("<i>empty</i>") : html_escape(*value)) : "<i>absent</i>") + "</td>";
        }
        out += "</tr>";
    }
    if (comparison.differences.empty()) {
        out += fmt::format("<tr><td colspan=\"{}\">the cards are the same</td></tr>", comparison.runs.size() + 1);
    }
    return out + "</table>";
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
    out += "<h2>Ranking by avg_step_time, fastest first</h2>" + ranking_table(comparison);
    out += "<h2>Where a step's time goes</h2><p class=\"note\">Derived per step from the metrics: overlapped "
           "communication = total_communication_time &times; compute_comm_overlap / 100; exposed communication = "
           "total_communication_time &minus; overlapped; compute = avg_step_time &minus; exposed, drawn as compute only "
           "(compute &minus; overlapped) followed by the overlapped part, so each bar is as long as the step.</p>"
           "<p class=\"legend\"><span class=\"compute\" style=\"background:#4e79a7\"></span>compute only"
           "<span style=\"background:#59a14f\"></span>overlapped communication"
           "<span style=\"background:#e15759\"></span>exposed communication</p>";
    out += breakdown_chart(comparison);
    out += "<h2>Model FLOPs utilization</h2>" + mfu_chart(comparison);
    out += "<h2>Overlap against step time</h2><p class=\"note\">Each point is numbered by its place in the ranking.</p>";
    out += scatter;
    if (!left_out.empty()) {
        out += "<p class=\"note missing\">Not plotted (no step time or no overlap): " + html_escape(join(left_out, "; ")) + "</p>";
    }
    out += "<h2>Card differences</h2>" + differences_table(comparison);
    out += fmt::format("<p class=\"note\">Made by ccl-harness {}.</p></body></html>\n", k_version);
    return out;
}

} // namespace harness
