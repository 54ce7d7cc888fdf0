// One answer per trace file name, whichever step asks: collection, pack, verify and the metrics'
// listing all take it from trace_names; and verify counts the steps the metrics use.
#include "bundle/bundle_card.hpp"
#include "bundle/trace_check.hpp"
#include "metrics/metrics_input.hpp"
#include "metrics/step_windows.hpp"
#include "metrics/trace_events.hpp"
#include "plan/trace_expectation.hpp"
#include "test_context.hpp"
#include "trace/trace_collect.hpp"
#include "trace/trace_names.hpp"
#include "util/strings.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::gzip;
using harness::test::TempDir;

namespace {

/// A Kineto trace of rank 3 (distributedInfo says so, for the names that carry no rank).
const char* k_rank3 = R"({"distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}, "traceEvents": [)"
                      R"({"name": "ProfilerStep#1", "ph": "X", "cat": "user_annotation", "ts": 0, "dur": 5},)"
                      R"({"name": "ProfilerStep#2", "ph": "X", "cat": "user_annotation", "ts": 6, "dur": 5}]})";

struct Expected {
    const char* name;
    long long rank;        ///< the rank every consumer finds, -1 for none
    const char* collected; ///< the name collection gives it; "" when collection ignores it
    const char* pack_kind; ///< metric_source.traces kind pack lists for it ("" none)
    bool verify_reads;     ///< verify parses it where it is (a trace the tools read)
    const char* misplaced; ///< in verify's message when it is a trace under the wrong name ("" none)
    bool metrics_named;    ///< the metrics' listing takes it as a named trace
};

// clang-format off
const Expected k_table[] = {
    {"kineto_trace_3.json",                    3,  "kineto_trace_3.json",    "json",     true,  "",                       true},
    {"kineto_trace_3.json.gz",                 3,  "kineto_trace_3.json.gz", "json",     true,  "",                       true},
    {"kineto_trace_03.json",                   3,  "kineto_trace_3.json",    "",         false, "expected kineto_trace_3.json", true},
    {"rank3_trace.json",                       3,  "kineto_trace_3.json",    "",         false, "expected kineto_trace_3.json", true},
    {"rank-3.json.gz",                         3,  "kineto_trace_3.json.gz", "",         false, "expected kineto_trace_3.json.gz", true},
    {"host.1234.pt.trace.json",                3,  "kineto_trace_3.json",    "",         false, "tensorboard handler",  true},
    {"worker.123.1700000000.pt.trace.json.gz", 3,  "kineto_trace_3.json.gz", "",         false, "tensorboard handler",  true},
    {"host0.trace.json.gz",                    -1, "host0.trace.json.gz",    "json_tpu", true,  "",                       true},
    {"torch_et_0.json",                        -1, "",                       "",         false, "",                       false},
    {"manifest.json",                          -1, "",                       "",         false, "",                       false},
    {"Rank0_trace.json",                       -1, "",                       "",         false, "expected kineto_trace_<rank>.json", false},
    {"kineto_trace_x.json",                    -1, "",                       "",         false, "expected kineto_trace_<rank>.json", false},
    {"kineto_trace_.json.gz",                  -1, "",                       "",         false, "expected kineto_trace_<rank>.json", false},
};
// clang-format on

Plan torchtitan_plan() {
    Plan plan;
    plan.framework = "torchtitan";
    plan.world_size = 8;
    plan.trace_kinds = {"torch_profiler"};
    return plan;
}

std::string content_for(const std::string& name) { return ends_with(name, ".gz") ? gzip(k_rank3) : std::string(k_rank3); }

} // namespace

TEST_CASE("every consumer gives a trace file name the same answer", "[trace_authority]") {
    for (const Expected& row : k_table) {
        const std::string name = row.name;
        INFO(name);
        TempDir dir;
        dir.write("produced/" + name, content_for(name));
        const TraceName classified = classify_trace_name(name);
        CHECK(classified.rank.value_or(-1) == (classified.form == TraceNameForm::tensorboard_handler ? -1 : row.rank));

        // Collection: the name it gives the file (none when it is not a trace).
        const CollectedTraces collected = collect_traces(trace_expectation(torchtitan_plan()), dir.path() / "produced",
                                                         dir.path() / "traces");
        CHECK(collected.files == (*row.collected != '\0' ? std::vector<std::string>{row.collected} : std::vector<std::string>{}));

        // Pack: which metric_source.traces kind the name makes.
        CHECK(trace_kind(name) == row.pack_kind);

        // Verify: parsed where it is, or named as a trace in the wrong place or under the wrong name.
        CHECK(is_trace_file_name(name) == row.verify_reads);
        CHECK(kineto_trace_rank(name) == (row.verify_reads && classified.kind == TraceKind::kineto ? row.rank : -1));
        const std::string misplaced = misplaced_trace_problem(name);
        if (*row.misplaced == '\0') {
            CHECK(misplaced.empty());
        } else {
            CHECK_THAT(misplaced, Catch::Matchers::Contains(row.misplaced));
        }

        // Metrics: the file alone in a directory, as a rank trace with its rank or as other JSON.
        const fs::path listed_dir = dir.path() / "produced";
        if (row.metrics_named || ends_with(name, ".json")) {
            dir.write("produced/kineto_trace_7.json", k_rank3); // a named trace beside it
            const metrics::MetricsInput input = metrics::resolve_metrics_input(listed_dir);
            bool seen = false;
            for (const metrics::TraceInput& trace : input.traces) {
                if (trace.file.filename() == name) {
                    seen = true;
                    CHECK(trace.standard == row.metrics_named);
                    CHECK(trace.rank == (row.metrics_named ? row.rank : -1));
                }
            }
            CHECK(seen); // the harness's own records too: --reference lists every .json, as the tools do
        }

        // What collection writes, every consumer reads under that name, with the same rank.
        if (*row.collected != '\0' && classified.kind == TraceKind::kineto) {
            const std::string out = row.collected;
            CHECK(trace_kind(out) == "json");
            CHECK(is_trace_file_name(out));
            CHECK(misplaced_trace_problem(out).empty());
            CHECK(kineto_trace_rank(out) == row.rank);
            const TraceCheck check = check_trace(dir.path() / "traces" / out);
            CHECK(check.problem.empty());
            CHECK(check.steps == 2);
        }
    }
}

namespace {

/// check_trace's steps and marker against the metrics' own selection on the same file.
void expect_same_steps(const fs::path& file, std::size_t steps, const std::string& marker) {
    INFO(file.filename().string());
    const TraceCheck check = check_trace(file);
    metrics::ReadOptions options;
    options.collective_args = false;
    const metrics::StepSelection selection = metrics::standard_steps(metrics::read_trace(file, options));
    CHECK(check.steps == selection.steps.size());
    CHECK(check.step_marker == selection.source);
    CHECK(check.steps == steps);
    CHECK(check.step_marker == marker);
}

} // namespace

TEST_CASE("verify counts the steps the metrics use", "[trace_authority]") {
    TempDir dir;
    SECTION("Kineto: the GPU-side copy of a step is not a step, nor a step name outside user_annotation") {
        const fs::path file = dir.write(
            "kineto_trace_0.json",
            R"({"traceEvents": [{"name": "ProfilerStep#3", "ph": "X", "cat": "user_annotation", "ts": 1, "dur": 5},)"
            R"({"name": "ProfilerStep#3", "ph": "X", "cat": "gpu_user_annotation", "ts": 2, "dur": 5},)"
            R"({"name": "ProfilerStep#4", "ph": "X", "cat": "cpu_op", "ts": 7, "dur": 5},)"
            R"({"name": "ProfilerStep#5", "ph": "X", "cat": "user_annotation", "ts": 13, "dur": 5}]})");
        expect_same_steps(file, 2, "ProfilerStep#N");
    }
    SECTION("gzip, the same steps") {
        const fs::path file = dir.write(
            "kineto_trace_1.json.gz",
            gzip(R"({"traceEvents": [{"name": "ProfilerStep#1", "ph": "X", "cat": "user_annotation", "ts": 1, "dur": 5}]})"));
        expect_same_steps(file, 1, "ProfilerStep#N");
        CHECK(check_trace(file).compressed);
    }
    SECTION("vLLM and SGLang") {
        expect_same_steps(
            dir.write("kineto_trace_2.json",
                      R"x({"traceEvents": [{"name": "execute_context_0(1)", "ph": "X", "cat": "user_annotation", "ts": 1, "dur": 1},)x"
                      R"x({"name": "execute_context_1(1)", "ph": "X", "cat": "cpu_op", "ts": 2, "dur": 1}]})x"),
            1, "execute_context_*");
        expect_same_steps(
            dir.write("kineto_trace_3.json",
                      R"({"traceEvents": [{"name": "run_batch", "ph": "X", "cat": "python_function", "ts": 1, "dur": 1}]})"),
            1, "run_batch");
        expect_same_steps(dir.write("kineto_trace_4.json",
                                    R"x({"traceEvents": [{"name": "/x/sglang/bench_one_batch.py(310): extend", "ph": "X",)x"
                                    R"( "cat": "python_function", "ts": 1, "dur": 4},)"
                                    R"x({"name": "/x/sglang/bench_one_batch.py(330): decode", "ph": "X", "cat": "python_function",)x"
                                    R"( "ts": 6, "dur": 1}]})"),
                          2, "bench_one_batch decode/extend");
        // Later SGLang runs `python -m sglang.bench_one_batch` from sglang/benchmark/one_batch.py.
        expect_same_steps(dir.write("kineto_trace_6.json",
                                    R"x({"traceEvents": [{"name": "/x/sglang/benchmark/one_batch.py(512): decode", "ph": "X",)x"
                                    R"( "cat": "python_function", "ts": 1, "dur": 4},)"
                                    R"x({"name": "/x/sglang/other_batch.py(330): decode", "ph": "X", "cat": "python_function",)x"
                                    R"( "ts": 6, "dur": 1}]})"),
                          1, "bench_one_batch decode/extend");
    }
    SECTION("XLA: StepMarkers shorter than a tenth of the longest are bookkeeping, not steps") {
        const fs::path file = dir.write("host0.trace.json",
                                        R"({"traceEvents": [{"name": "StepMarker", "ph": "X", "ts": 0, "dur": 100},)"
                                        R"({"name": "StepMarker", "ph": "X", "ts": 110, "dur": 1},)"
                                        R"({"name": "StepMarker", "ph": "X", "ts": 120, "dur": 100}]})");
        expect_same_steps(file, 2, "StepMarker");
        CHECK(check_trace(file).form == "xla");
    }
    SECTION("no steps for the metrics is no steps for verify") {
        const fs::path file = dir.write(
            "kineto_trace_5.json", R"({"traceEvents": [{"name": "ProfilerStep#1", "ph": "i", "cat": "user_annotation", "ts": 1}]})");
        const TraceCheck check = check_trace(file);
        CHECK(check.steps == 0);
        CHECK_THAT(check.problem, Catch::Matchers::StartsWith("no step markers"));
    }
}

TEST_CASE("verify refuses what the metrics' reader refuses, in its own words", "[trace_authority]") {
    TempDir dir;
    const auto problem = [&](const std::string& name, const std::string& text) { return check_trace(dir.write(name, text)).problem; };
    CHECK(problem("kineto_trace_0.json", "") == "empty file");
    CHECK(problem("kineto_trace_0.json", "  \n") == "no JSON in the file (only white space)");
    CHECK_THAT(problem("kineto_trace_0.json", R"({"traceEvents": [{"name": "a", "ph": "X", "ts": 1)"),
               Catch::Matchers::StartsWith("truncated at byte 49: the JSON ends inside an event"));
    CHECK_THAT(problem("kineto_trace_0.json", "42"), Catch::Matchers::StartsWith("the top level is a number, not a trace"));
    CHECK(problem("kineto_trace_0.json", R"({"events": []})") == "a JSON object without a \"traceEvents\" array");
    CHECK_THAT(problem("kineto_trace_0.json", R"({"traceEvents": [{"name": "a" "ts": 1}]})"),
               Catch::Matchers::StartsWith("not valid JSON at byte 30: "));
    CHECK_THAT(problem("kineto_trace_0.json", R"({"traceEvents": [{"name": "ProfilerStep#1", "ph": "X", "cat": "user_annotation"}]})"),
               Catch::Matchers::StartsWith("traceEvents[0] (\"ProfilerStep#1\", ph X) has no ts (at byte "));
    CHECK_THAT(
        problem("kineto_trace_0.json", "{\"traceEvents\": [{\"args\": " + std::string(5000, '[') + std::string(5000, ']') + "}]}"),
        Catch::Matchers::StartsWith("nested deeper than "));
    CHECK_THAT(problem("kineto_trace_0.json.gz", gzip(R"({"traceEvents": [)")),
               Catch::Matchers::StartsWith("truncated at byte 17: the JSON ends inside the traceEvents array") &&
                   Catch::Matchers::EndsWith("(of the uncompressed stream)"));
}
