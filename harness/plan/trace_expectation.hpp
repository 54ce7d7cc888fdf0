#pragma once
// The traces a plan's run must leave, for collect_traces (trace/trace_collect.hpp): the
// frameworks' tracing habits live here, beside the framework plans, not in the collector.
#include "plan/plan.hpp"
#include "trace/trace_collect.hpp"

namespace harness {

TraceExpectation trace_expectation(const Plan& plan);

} // namespace harness
