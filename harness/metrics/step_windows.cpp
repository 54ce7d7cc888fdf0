#include "metrics/step_windows.hpp"

#include "metrics/reference_patterns.hpp"

#include <algorithm>

namespace harness::metrics {

namespace {

StepSelection by_ts(std::vector<StepMarker> steps, std::string source) {
    std::stable_sort(steps.begin(), steps.end(), [](const StepMarker& a, const StepMarker& b) { return a.ts < b.ts; });
    const bool found = !steps.empty();
    return StepSelection{std::move(steps), found ? std::move(source) : std::string()};
}

std::vector<StepMarker> of_kind(const RankTrace& trace, StepKind kind) {
    std::vector<StepMarker> out;
    for (const StepMarker& step : trace.steps) {
        if (step.kind == kind) {
            out.push_back(step);
        }
    }
    return out;
}

} // namespace

std::vector<StepMarker> StepSelection::inner() const {
    if (steps.size() > 2) {
        return std::vector<StepMarker>(steps.begin() + 1, steps.end() - 1);
    }
    return steps;
}

StepSelection profiler_steps(const RankTrace& trace) {
    std::vector<StepMarker> steps = of_kind(trace, StepKind::profiler_step);
    std::stable_sort(steps.begin(), steps.end(), [](const StepMarker& a, const StepMarker& b) { return a.number < b.number; });
    const bool found = !steps.empty();
    return StepSelection{std::move(steps), found ? "ProfilerStep#N" : ""};
}

StepSelection vllm_steps(const RankTrace& trace) { return by_ts(of_kind(trace, StepKind::vllm_execute_context), "execute_context_*"); }

StepSelection sglang_steps(const RankTrace& trace, bool (*matches)(std::string_view)) {
    std::vector<StepMarker> steps;
    for (const StepMarker& step : of_kind(trace, StepKind::sglang_run_batch)) {
        if (matches(trace.names.text(step.name))) {
            steps.push_back(step);
        }
    }
    return by_ts(std::move(steps), "run_batch");
}

StepSelection sglang_bench_steps(const RankTrace& trace) {
    return by_ts(of_kind(trace, StepKind::sglang_bench_forward), "bench_one_batch decode/extend");
}

StepSelection xla_steps(const RankTrace& trace) {
    StepSelection core = by_ts(of_kind(trace, StepKind::xla_core_step), "$core.py:331 step");
    if (!core.empty()) {
        return core;
    }
    std::vector<StepMarker> markers = of_kind(trace, StepKind::xla_step_marker);
    double longest = 0;
    for (const StepMarker& marker : markers) {
        longest = std::max(longest, marker.dur);
    }
    // Short StepMarkers are bookkeeping around the real ones.
    markers.erase(std::remove_if(markers.begin(), markers.end(), [&](const StepMarker& m) { return !(m.dur > longest * 0.1); }),
                  markers.end());
    return by_ts(std::move(markers), "StepMarker");
}

StepSelection standard_xla_steps(const RankTrace& trace) {
    // The tools know one frame, "$core.py:331 step"; other JAX and MaxText versions put the
    // step function elsewhere, and the default mode takes any "$<file>:<line> step" then.
    if (StepSelection selection = xla_steps(trace); !selection.empty() && selection.source != "StepMarker") {
        return selection;
    }
    if (StepSelection frames = by_ts(of_kind(trace, StepKind::xla_python_step), "$<file>:<line> step"); !frames.empty()) {
        return frames;
    }
    return xla_steps(trace);
}

StepSelection standard_steps(const RankTrace& trace) {
    for (StepSelection selection : {profiler_steps(trace), vllm_steps(trace), sglang_steps(trace, reference_sglang_step_for_overlap),
                                    sglang_bench_steps(trace), standard_xla_steps(trace)}) {
        if (!selection.empty()) {
            return selection;
        }
    }
    return StepSelection{};
}

} // namespace harness::metrics
