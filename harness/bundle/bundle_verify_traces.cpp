#include "bundle/bundle_verify_checks.hpp"

#include "trace/trace_names.hpp"

#include <fmt/format.h>
#include <map>

namespace harness::verify_checks {

// ---- traces ----

void check_traces(const fs::path& dir, const std::vector<std::string>& files, BundleReport& report) {
    std::map<long long, std::string> rank_files; // kineto_trace_<r>.json and .json.gz share a rank
    for (const std::string& relative : files) {
        const std::string first = relative.substr(0, relative.find('/'));
        if (relative.find('/') == std::string::npos && is_trace_file_name(relative)) {
            check_interrupt();
            if (const long long rank = kineto_trace_rank(relative); rank >= 0) {
                if (const auto [at, fresh] = rank_files.emplace(rank, relative); !fresh) {
                    report.problems.push_back(
                        {relative, fmt::format("a second trace of rank {} (also {}): keep one", rank, at->second)});
                }
            }
            BundleTrace trace{relative, check_trace(dir / relative)};
            if (!trace.check.problem.empty()) {
                report.problems.push_back({relative, trace.check.problem});
            } else if (trace.check.form == "legacy-array") {
                report.problems.push_back({relative, "torch's legacy autograd array; the CCL-Bench tools read Kineto's "
                                                     "{\"traceEvents\": [...]} form (pack converts it)"});
            }
            report.traces.push_back(std::move(trace));
        } else if (first != "scripts" && first != "logs" && first != "accounting" && first != "container") {
            if (const std::string why = misplaced_trace_problem(relative); !why.empty()) {
                report.problems.push_back({relative, why});
            }
        }
    }
}

PlannedTraces read_planned_traces(const fs::path& dir) {
    PlannedTraces planned;
    if (!fs::is_regular_file(fs::symlink_status(dir / "scripts" / "plan.json"))) {
        return planned;
    }
    JsonRecord plan;
    Problems ignored; // a malformed plan.json is not a trace problem; the manifest vouches for it
    load_record(dir, "scripts/plan.json", "", plan, ignored);
    if (!plan.ok) {
        return planned;
    }
    if (plan.root["profile"]["traced_steps"].get_int64().get(planned.steps) != simdjson::SUCCESS || planned.steps < 0) {
        planned.steps = 0;
    }
    std::string_view ranks;
    planned.rank0_only = plan.root["framework_config"]["torch_profiler_ranks"].get_string().get(ranks) == simdjson::SUCCESS &&
                         ranks == "0";
    return planned;
}

/// The window the run was planned with against the ProfilerStep markers each Kineto trace holds:
/// a framework that traces one step more or less than the card says (an off-by-one schedule)
/// makes every per-step metric describe another run.
void check_window(const PlannedTraces& planned, BundleReport& report) {
    if (planned.steps <= 0) {
        return;
    }
    for (const BundleTrace& trace : report.traces) {
        if (trace.check.step_marker == "ProfilerStep#N" && static_cast<std::int64_t>(trace.check.steps) != planned.steps) {
            report.problems.push_back(
                {trace.path, fmt::format("{} ProfilerStep markers, but the run was planned to trace {} (scripts/plan.json "
                                         "profile.traced_steps, from the card's launch.profile.active)",
                                         trace.check.steps, planned.steps)});
        }
    }
}

} // namespace harness::verify_checks
