#include "metrics/json_scan.hpp"
#include "metrics/trace_events.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>
#include <charconv>
#include <cstring>
#include <random>
#include <zlib.h>

using namespace harness;
using namespace harness::metrics;
using harness::test::gzip;
using harness::test::TempDir;

namespace {

const char* const k_kineto = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}],
 "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4},
 "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "/device:TPU:0"}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 50.5},
  {"ph": "X", "cat": "kernel", "name": "nccl\u0044evKernel_AllReduce \"x\"", "pid": 0, "tid": 7, "ts": 110.25, "dur": 3e1,
   "args": {"In msg nelems": 1024, "dtype": "BFloat16", "Collective name": "allreduce", "grid": [1, 1, 1]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 101, "dur": 2, "args": {"External id": 3}},
  {"ph": "X", "cat": "cpu_op", "name": "Optimizer.step", "pid": 1, "tid": 1, "ts": 101, "dur": 2},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 105, "dur": 1},
  {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 105, "cat": "ac2g", "name": "ac2g"},
  {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Traces", "tid": "x", "ts": 100},
  {"ph": "X", "cat": "python_function", "name": "scheduler.py(10): run_batch", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#notanumber", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
 ],
 "traceName": "x"}
)";

std::string error_of(const fs::path& file, const ReadOptions& options = {}) {
    try {
        read_trace(file, options);
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        return e.what();
    }
    FAIL("no error for " << file);
    return "";
}

void check_kineto(const RankTrace& trace) {
    CHECK(trace.format == TraceFormat::kineto);
    CHECK(trace.events == 10);
    REQUIRE(trace.distributed_rank);
    CHECK(*trace.distributed_rank == 3);
    REQUIRE(trace.kernels.size() == 1);
    CHECK(trace.names.text(trace.kernels[0].name) == "ncclDevKernel_AllReduce \"x\"");
    CHECK(trace.kernels[0].ts == 110.25);
    CHECK(trace.kernels[0].dur == 30.0);
    REQUIRE(trace.collectives.size() == 1);
    CHECK(trace.collectives[0].on_kernel);
    CHECK(trace.collectives[0].nelems == 1024);
    CHECK(trace.names.text(trace.collectives[0].dtype) == "BFloat16");
    CHECK(trace.names.text(trace.collectives[0].collective) == "allreduce");
    REQUIRE(trace.host_ops.size() == 1); // aten::mm; Optimizer.step is not an operator the metrics use
    CHECK(trace.names.text(trace.host_ops[0].name) == "aten::mm");
    REQUIRE(trace.steps.size() == 2);
    CHECK(trace.steps[0].kind == StepKind::profiler_step);
    CHECK(trace.steps[0].number == 2);
    CHECK(trace.steps[0].dur == 50.5);
    CHECK(trace.steps[1].kind == StepKind::sglang_run_batch);
    CHECK(trace.process_names.at("7") == "/device:TPU:0");
}

} // namespace

TEST_CASE("a Kineto trace keeps kernels, steps, host operators and NCCL arguments", "[metrics]") {
    TempDir dir;
    check_kineto(read_trace(dir.write("t.json", k_kineto)));
}

TEST_CASE("a distributedInfo rank that is no small whole number names no rank", "[metrics]") {
    // fuzz_trace found 1e308 reaching a cast to long long (tests/fuzz/regressions/fuzz_trace/).
    TempDir dir;
    for (const char* rank : {"1e308", "2.5", "-1", "1e10"}) {
        const std::string text = std::string(R"({"distributedInfo": {"rank": )") + rank + R"(}, "traceEvents": []})";
        CHECK_FALSE(read_trace(dir.write("t.json", text)).distributed_rank);
    }
    CHECK(*read_trace(dir.write("t.json", R"({"distributedInfo": {"rank": 7.0}, "traceEvents": []})")).distributed_rank == 7);
}

TEST_CASE("a tiny read buffer gives the same tables as a large one", "[metrics]") {
    TempDir dir;
    const auto file = dir.write("t.json", k_kineto);
    for (const std::size_t size : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{100}}) {
        ReadOptions options;
        options.buffer_bytes = size;
        check_kineto(read_trace(file, options));
    }
}

TEST_CASE("a gzip trace is read like the plain one, whatever its name", "[metrics]") {
    TempDir dir;
    const auto file = dir.write("kineto_trace_0.json.gz", gzip(k_kineto));
    const RankTrace trace = read_trace(file);
    CHECK(trace.compressed);
    check_kineto(trace);
    // Two members back to back are one stream (what `cat a.gz b.gz` gives).
    const std::string text = k_kineto;
    const auto two = dir.write("two.gz", gzip(text.substr(0, 500)) + gzip(text.substr(500)));
    check_kineto(read_trace(two));
}

TEST_CASE("a legacy autograd array is read with steps and host operators told apart by name", "[metrics]") {
    TempDir dir;
    const auto file = dir.write("rank-0.json", R"([
{"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 9, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "gloo:all_reduce", "ph": "X", "ts": 3, "dur": 1, "tid": 2, "pid": "CPU functions", "args": {}}
])");
    const RankTrace trace = read_trace(file);
    CHECK(trace.format == TraceFormat::legacy_autograd);
    CHECK(trace.events == 3);
    REQUIRE(trace.steps.size() == 1);
    CHECK(trace.steps[0].number == 1);
    CHECK(trace.host_ops.size() == 2);
    CHECK(trace.kernels.empty());
}

TEST_CASE("XLA events without a category are kept with their thread", "[metrics]") {
    TempDir dir;
    const auto file = dir.write("h.trace.json", R"({"traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 2, "tid": 3, "args": {"name": "XLA Ops"}},
{"ph": "X", "name": "StepMarker", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
{"ph": "X", "name": "all-gather-start.1", "pid": 2, "tid": 3, "ts": 1, "dur": 1}]})");
    const RankTrace trace = read_trace(file);
    REQUIRE(trace.xla_ops.size() == 1);
    CHECK(trace.names.text(trace.xla_ops[0].thread) == "2\t3");
    CHECK(trace.thread_names.at("2\t3") == "XLA Ops");
    REQUIRE(trace.steps.size() == 1);
    CHECK(trace.steps[0].kind == StepKind::xla_step_marker);
}

TEST_CASE("malformed traces name the file and the byte offset", "[metrics]") {
    TempDir dir;
    const std::string text = k_kineto;

    SECTION("truncated inside an event, at any buffer size") {
        const auto file = dir.write("cut.json", text.substr(0, 400));
        for (const std::size_t size : {std::size_t{16}, std::size_t{1} << 20}) {
            ReadOptions options;
            options.buffer_bytes = size;
            const std::string error = error_of(file, options);
            CHECK_THAT(error, Catch::Contains("cut.json: byte 400: truncated"));
            CHECK_THAT(error, Catch::Contains("an event that starts at byte"));
        }
    }
    SECTION("truncated gzip stream") {
        const std::string packed = gzip(text);
        const auto file = dir.write("cut.json.gz", packed.substr(0, packed.size() / 2));
        CHECK_THAT(error_of(file), Catch::Contains("cut.json.gz: truncated gzip stream"));
    }
    SECTION("gzip that is not deflate data") {
        const auto file = dir.write("bad.json.gz", std::string("\x1f\x8b\x08\x00garbage that is not deflate at all", 38));
        CHECK_THAT(error_of(file), Catch::Contains("bad.json.gz: damaged gzip stream"));
    }
    SECTION("wrong top-level types") {
        CHECK_THAT(error_of(dir.write("n.json", "42")), Catch::Contains("n.json: byte 0: not a trace: expected a JSON object"));
        CHECK_THAT(error_of(dir.write("s.json", "  \"x\"")), Catch::Contains("s.json: byte 2: not a trace"));
        CHECK_THAT(error_of(dir.write("o.json", R"({"schemaVersion": 1})")),
                   Catch::Contains("a JSON object without a traceEvents array"));
        CHECK_THAT(error_of(dir.write("a.json", R"({"traceEvents": {"a": 1}})")),
                   Catch::Contains("a.json: byte 16: traceEvents is not an array"));
        CHECK_THAT(error_of(dir.write("e.json", R"({"traceEvents": [1, 2]})")),
                   Catch::Contains("e.json: byte 17: an event that is not a JSON object"));
    }
    SECTION("empty file") { CHECK_THAT(error_of(dir.write("empty.json", "")), Catch::Contains("empty.json: byte 0: truncated")); }
    SECTION("an X event without ts or dur, or with a string") {
        CHECK_THAT(error_of(dir.write("d.json", R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1}]})")),
                   Catch::Contains("d.json: byte 17: traceEvents[0] (\"k\", ph X) has no dur"));
        CHECK_THAT(error_of(dir.write("t.json", R"({"traceEvents": [{"ph": "M"}, {"ph": "X", "name": "k", "dur": 1}]})")),
                   Catch::Contains("traceEvents[1] (\"k\", ph X) has no ts"));
        CHECK_THAT(error_of(dir.write("q.json", R"({"traceEvents": [{"ph": "X", "name": "k", "ts": "1", "dur": 1}]})")),
                   Catch::Contains("q.json: byte 48: traceEvents[0] (\"k\"): ts is not a finite number"));
        CHECK_THAT(error_of(dir.write("nan.json", R"({"traceEvents": [{"ph": "X", "name": "k", "ts": NaN, "dur": 1}]})")),
                   Catch::Contains("ts is not a finite number"));
    }
    SECTION("syntax errors inside an event") {
        CHECK_THAT(error_of(dir.write("c.json", R"({"traceEvents": [{"ph": "X" "ts": 1}]})")),
                   Catch::Contains("c.json: byte 28: expected ',' or '}' in an event"));
        CHECK_THAT(error_of(dir.write("num.json", R"({"traceEvents": [{"ts": 1.}]})")),
                   Catch::Contains("num.json: byte 26: expected a digit after the decimal point"));
        CHECK_THAT(error_of(dir.write("esc.json", R"({"traceEvents": [{"name": "a\qb"}]})")),
                   Catch::Contains("esc.json: byte 28: invalid escape in a string"));
        CHECK_THAT(error_of(dir.write("lit.json", R"({"traceEvents": [{"x": tru}]})")),
                   Catch::Contains("lit.json: byte 23: expected a value"));
    }
    SECTION("data after the trace") {
        CHECK_THAT(error_of(dir.write("tail.json", R"({"traceEvents": []} x)")),
                   Catch::Contains("tail.json: byte 20: unexpected data after the end of the trace"));
    }
    SECTION("missing file and directory") {
        CHECK_THAT(error_of(dir.path() / "none.json"), Catch::Contains("none.json: cannot open trace"));
        CHECK_THAT(error_of(dir.path()), Catch::Contains("is a directory"));
    }
}

TEST_CASE("every truncation is an error and no corruption crashes the reader", "[metrics]") {
    TempDir dir;
    const std::string text = k_kineto;
    ReadOptions small;
    small.buffer_bytes = 32;
    const std::size_t end = text.find_last_not_of(" \n") + 1;
    for (std::size_t length = 0; length < end; ++length) {
        const auto file = dir.write("cut.json", text.substr(0, length));
        CAPTURE(length);
        CHECK_THROWS_AS(read_trace(file, small), HarnessError);
    }
    std::size_t errors = 0;
    for (std::size_t at = 0; at < text.size(); at += 3) {
        for (const char c : {'{', '}', '"', '\\', '0', ']', ',', 'x'}) {
            std::string bad = text;
            bad[at] = c;
            const auto file = dir.write("bad.json", bad);
            try {
                read_trace(file, small);
            } catch (const HarnessError& e) {
                CHECK(e.code() == k_exit_usage);
                ++errors;
            }
        }
    }
    CHECK(errors > 0);
}

TEST_CASE("the fast number conversion gives from_chars' double for every token", "[metrics]") {
    // to_double takes a shortcut for short decimals (Clinger's fast path); it must agree with a
    // correctly rounded conversion bit for bit, or timestamps would move by an ulp.
    const auto slow = [](const std::string& token) {
        double value = 0;
        const auto result = std::from_chars(token.data(), token.data() + token.size(), value);
        REQUIRE(result.ec == std::errc());
        return value;
    };
    std::vector<std::string> tokens = {"0",
                                       "-0",
                                       "0.0",
                                       "1",
                                       "-1",
                                       "0.1",
                                       "0.3",
                                       "1700000000005.000",
                                       "5960845123456.789",
                                       "999999999999999",
                                       "9999999999999999",
                                       "123456789012345.6",
                                       "0.000000000000000000001",
                                       "0.0000000000000000000001",
                                       "1234567.1234567890123",
                                       "00.5",
                                       "-123.456",
                                       "4.2",
                                       "1e5",
                                       "1.5E-3",
                                       "17976931348623157e292",
                                       "3.141592653589793"};
    std::mt19937_64 random(7);
    for (int k = 0; k < 20000; ++k) {
        const std::uint64_t whole = random() % 10000000000000000ULL;
        const std::uint64_t fraction = random() % 1000;
        const int width = static_cast<int>(random() % 4);
        std::string token = std::to_string(whole);
        if (width > 0) {
            std::string digits = std::to_string(fraction);
            digits.resize(static_cast<std::size_t>(width), '0');
            token += "." + digits;
        }
        tokens.push_back((random() % 5 == 0 ? "-" : "") + token);
    }
    for (const std::string& token : tokens) {
        double fast = 0;
        REQUIRE(json_scan::to_double(token, fast));
        const double expected = slow(token);
        INFO(token);
        REQUIRE(std::memcmp(&fast, &expected, sizeof fast) == 0);
    }
    double out = 0;
    CHECK_FALSE(json_scan::to_double("1e999", out));
    CHECK_FALSE(json_scan::to_double("NaN", out));
    CHECK_FALSE(json_scan::to_double("-Infinity", out));
}
