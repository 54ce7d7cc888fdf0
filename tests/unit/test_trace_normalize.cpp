#include "test_context.hpp"
#include "trace/trace_normalize.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>
#include <simdjson.h>

using namespace harness;
using harness::test::TempDir;

namespace {

simdjson::dom::element parse(simdjson::dom::parser& parser, const fs::path& file) {
    simdjson::dom::element root;
    REQUIRE(parser.load(file.string()).get(root) == simdjson::SUCCESS);
    return root;
}

} // namespace

TEST_CASE("a legacy autograd trace becomes Kineto's object form without losing an event") {
    TempDir dir;
    const auto source = dir.write("legacy.json",
                                  R"([{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "ProfilerStep#2", "ph": "X", "ts": 0, "dur": 9, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "gloo:all_reduce", "ph": "X", "ts": 3, "dur": 1, "tid": 2, "pid": "CPU functions", "args": {}, "cat": "custom"}])");
    const auto target = dir.path() / "kineto_trace_1.json";
    const NormalizeResult result = normalize_trace(source, target, TraceIdentity{1, 2, "gloo"});
    CHECK(result.format == "legacy-autograd");
    CHECK(result.events == 3);
    CHECK(result.steps == 1);

    simdjson::dom::parser parser;
    const auto root = parse(parser, target);
    CHECK(int64_t(root["distributedInfo"]["rank"]) == 1);
    CHECK(int64_t(root["distributedInfo"]["world_size"]) == 2);
    CHECK(std::string_view(root["distributedInfo"]["backend"]) == "gloo");
    simdjson::dom::array events = root["traceEvents"];
    REQUIRE(events.size() == 3);
    CHECK(std::string_view(events.at(0)["cat"]) == "cpu_op");
    CHECK(std::string_view(events.at(1)["name"]) == "ProfilerStep#3");
    CHECK(std::string_view(events.at(1)["cat"]) == "user_annotation");
    CHECK(std::string_view(events.at(2)["cat"]) == "custom"); // an existing cat is kept
    CHECK(int64_t(events.at(0)["dur"]) == 2);
    CHECK(std::string_view(events.at(0)["pid"]) == "CPU functions");
}

TEST_CASE("a Kineto trace is copied byte for byte") {
    TempDir dir;
    const std::string text = R"({"traceEvents": [{"name": "ProfilerStep#5", "ph": "X", "cat": "user_annotation"}], "x": 1})";
    const auto source = dir.write("rank0_trace.json", text);
    const auto target = dir.path() / "kineto_trace_0.json";
    const NormalizeResult result = normalize_trace(source, target, TraceIdentity{0, 1, "nccl"});
    CHECK(result.format == "kineto");
    CHECK(result.steps == 1);
    CHECK(read_file(target) == text);
}

TEST_CASE("a broken trace is an error naming the file, never a partial output") {
    TempDir dir;
    const auto target = dir.path() / "out.json";
    SECTION("truncated") {
        const auto source = dir.write("cut.json", R"([{"name": "aten::mm", "ph": "X", "ts": 1,)");
        CHECK_THROWS_WITH(normalize_trace(source, target, {}), Catch::Contains("cut.json"));
    }
    SECTION("not a trace") {
        const auto source = dir.write("other.json", R"({"something": 1})");
        CHECK_THROWS_WITH(normalize_trace(source, target, {}), Catch::Contains("without a traceEvents array"));
    }
    SECTION("missing") { CHECK_THROWS_AS(normalize_trace(dir.path() / "absent.json", target, {}), HarnessError); }
    CHECK_FALSE(fs::exists(target));
}
