// straggler --reference against CCL-Bench's tools/straggler at
// 1d257f07b35b (git rev-parse HEAD of cornell-sysphotonics/ccl-bench: 1d257f07b35b262d0e36d4ee8d5345f8abe2e647),
// and the notes that say which files each tool reads. Expected values come from the tool itself,
// run on the same fixture written to a directory:
//   cd tools && /usr/bin/python3 -c "import sys; from straggler.straggler_metrics import metric_cal;
//       print(repr(metric_cal(sys.argv[1])))" DIR   (one line)
// and `python3 tools/main.py --trace DIR --metric straggler`, which prints element [0].
#include "metrics/metrics.hpp"
#include "test_context.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace harness;
using namespace harness::metrics;
using harness::test::TempDir;

namespace {

fs::path fixture(const std::string& name) { return fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/traces" / name; }

std::string kernel(const std::string& name, double ts, double dur, int pid = 0, const std::string& cat = "kernel") {
    return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": 7, "ts": {}, "dur": {}}})", cat, name, pid, ts,
                       dur);
}

std::string trace(const std::vector<std::string>& events) {
    std::string out = R"({"traceEvents": [)";
    for (std::size_t k = 0; k < events.size(); ++k) {
        out += (k == 0 ? "" : ", ") + events[k];
    }
    return out + "]}";
}

MetricsReport run(const fs::path& path, bool reference = true) {
    MetricsOptions options;
    options.reference = reference;
    return compute_metrics(path, options);
}

const MetricValue& metric(const MetricsReport& report, const std::string& name) {
    for (const auto& value : report.metrics) {
        if (value.metric == name) {
            return value;
        }
    }
    FAIL("no metric " << name);
    return report.metrics.front();
}

bool any_note(const std::vector<std::string>& notes, const std::string& part) {
    for (const auto& note : notes) {
        if (note.find(part) != std::string::npos) {
            return true;
        }
    }
    return false;
}

} // namespace

TEST_CASE("straggler --reference sums ncclDevKernel_* of rank*_trace.json files only", "[straggler_reference][metrics]") {
    TempDir dir;
    // rank0: 30.5 + 10 (the prefix is matched lowercased, _common.py:33-34); ncclKernel_*, DeepEP
    // and a cpu_op named like a kernel are not counted (_common.py:29, 34).
    dir.write("rank0_trace.json",
              trace({kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 30.5),
                     kernel("NCCLDEVKERNEL_SendRecv", 40, 10), kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWork*)", 60, 100),
                     kernel("void deep_ep::internode::combine<false, 8>(int4*, float*, int)", 200, 40),
                     kernel("ncclDevKernel_AllGather_RING_LL", 300, 5, 0, "cpu_op")}));
    dir.write("rank1_trace.json",
              trace({kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 50), kernel("ncclKernel_Broadcast", 60, 1)}));
    // Not matched by glob("rank*_trace.json") (_common.py:8, case-sensitive): a slow rank the
    // tool never sees.
    dir.write("Rank2_trace.json", trace({kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000)}));
    dir.write("kineto_trace_3.json", trace({kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000)}));
    // Tool output on this directory: (0.19, 1.2345679012345678); main.py prints 0.19.
    // (straggler_metrics.py:20-26: (max - min) / max = (50 - 40.5) / 50.)
    const MetricsReport report = run(dir.path());
    const MetricValue& value = metric(report, "straggler");
    REQUIRE(value.value.has_value());
    CHECK(*value.value == 0.19);
    // Before: the total_communication_time pattern over every .json: ncclKernel_ and the
    // uncounted files included: (1000 - 51) / 1000.
}

TEST_CASE("straggler --reference is 0.0 on canonical kineto_trace_N.json names, and says why", "[straggler_reference][metrics]") {
    // The tool prints "No trace files found under: DIR" and then 0.0 (straggler_metrics.py:8-10,
    // main.py:317-319); before, we reported 0.1 here.
    const MetricsReport report = run(fixture("two_ranks"));
    const MetricValue& value = metric(report, "straggler");
    REQUIRE(value.value.has_value());
    CHECK(*value.value == 0.0);
    CHECK(any_note(value.notes, "globs rank*_trace.json only (tools/straggler/_common.py:8)"));
    CHECK(any_note(value.notes, "kineto_trace_0.json"));
    // The default mode keeps our definition, and the table explains the disagreement.
    const MetricsReport standard = run(fixture("two_ranks"), false);
    CHECK(*metric(standard, "straggler").value == 0.5);
    CHECK_THAT(metrics_table(standard), Catch::Contains("reference: the tool globs rank*_trace.json only"));
}

TEST_CASE("straggler --reference: one group is 0.0, a zero group is the tool's ZeroDivisionError", "[straggler_reference][metrics]") {
    SECTION("one rank file: 0.0, not n/a (straggler_metrics.py:12-13)") {
        TempDir dir;
        dir.write("rank0_trace.json", trace({kernel("ncclDevKernel_AllReduce", 0, 30)}));
        // Tool: (0.0, 0.0). Before: n/a, "one rank: a straggler needs at least two".
        const MetricsReport report = run(dir.path());
        const MetricValue& value = metric(report, "straggler");
        REQUIRE(value.value.has_value());
        CHECK(*value.value == 0.0);
        CHECK(any_note(value.notes, "fewer than two (file, pid) groups"));
    }
    SECTION("a group with zero time: max / min raises (straggler_metrics.py:26)") {
        TempDir dir;
        dir.write("rank0_trace.json", trace({kernel("ncclDevKernel_AllReduce", 0, 0)}));
        dir.write("rank1_trace.json", trace({kernel("ncclDevKernel_AllReduce", 0, 25)}));
        // Tool: ZeroDivisionError: division by zero; main.py prints no value. Before: 1.0.
        const MetricsReport report = run(dir.path());
        const MetricValue& value = metric(report, "straggler");
        CHECK_FALSE(value.value.has_value());
        CHECK_THAT(value.why, Catch::Contains("ZeroDivisionError"));
    }
}

// The reader keeps each kernel's pid (Span::thread) for this. Tool: (0.25, 1.3333333333333333).
TEST_CASE("straggler --reference groups by (file, pid)", "[straggler_reference]") {
    TempDir dir;
    dir.write("rank0_trace.json", trace({kernel("ncclDevKernel_AllReduce", 0, 30, 0), kernel("ncclDevKernel_AllReduce", 0, 40, 1)}));
    const MetricsReport report = run(dir.path());
    const MetricValue& value = metric(report, "straggler");
    REQUIRE(value.value.has_value());
    CHECK(*value.value == 0.25);
}

TEST_CASE("a directory of .json.gz only: --reference says the tools read plain .json", "[straggler_reference][metrics]") {
    TempDir dir;
    const std::string events = trace(
        {R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 0, "tid": 1, "ts": 0, "dur": 100})",
         kernel("ncclDevKernel_AllReduce", 10, 30)});
    dir.write("kineto_trace_0.json.gz", harness::test::gzip(events));
    dir.write("kineto_trace_1.json.gz", harness::test::gzip(events));
    // json_sampling.py:34 keeps names ending in .json: _calc_json finds no file and returns -1
    // (avg_step_time.py:149-152). Before: "no ProfilerStep#N ... step markers".
    const MetricsReport report = run(dir.path());
    const MetricValue& step = metric(report, "avg_step_time");
    CHECK_FALSE(step.value.has_value());
    CHECK_THAT(step.why, Catch::Contains("read *.json only"));
    CHECK_THAT(step.why, Catch::Contains(".json.gz"));
    CHECK(any_note(report.notes, "read plain .json files only"));
    // straggler: glob("rank*_trace.json") finds nothing either, and the tool prints 0.0.
    CHECK(metric(report, "straggler").value.value_or(-1) == 0.0);
}

TEST_CASE("the note on extra .json files says what each tool does with them", "[straggler_reference][metrics]") {
    const std::string events = trace({kernel("ncclDevKernel_AllReduce", 10, 30)});
    SECTION("beside kineto_trace_*.json the tools ignore them (json_sampling.py:38-40)") {
        TempDir dir;
        dir.write("kineto_trace_0.json", events);
        dir.write("torch_et_0.json", R"({"nodes": []})");
        const MetricsReport report = run(dir.path());
        // Before: "torch_et_0.json: read as no events by --reference, as the CCL-Bench tools do".
        CHECK(any_note(report.notes, "torch_et_0.json: not a trace"));
        CHECK(any_note(report.notes, "the CCL-Bench tools ignore it"));
        CHECK_FALSE(any_note(report.notes, "read as no events"));
    }
    SECTION("with no kineto_trace_*.json, the tools that list every .json read them as no events") {
        TempDir dir;
        dir.write("rank0_trace.json", events);
        dir.write("notes.json", R"({"comment": "not a trace"})");
        const MetricsReport report = run(dir.path());
        CHECK(any_note(report.notes, "list every .json (tools/json_sampling.py:31-35) and read it as no events"));
        CHECK(any_note(report.notes, "straggler reads rank*_trace.json only"));
    }
}
