#include "plan/trace_expectation.hpp"
#include "test_context.hpp"
#include "trace/trace_collect.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::gzip;
using harness::test::TempDir;

namespace {

Plan plan_for(const std::string& framework, long long world, std::vector<std::string> kinds) {
    Plan plan;
    plan.framework = framework;
    plan.world_size = world;
    plan.trace_kinds = std::move(kinds);
    return plan;
}

const char* k_legacy = R"([{"name": "ProfilerStep#4", "ph": "X", "ts": 0, "dur": 5, "tid": 1, "pid": "CPU functions", "args": {}}])";
const char* k_kineto = R"({"traceEvents": [{"name": "ProfilerStep#5", "ph": "X", "cat": "user_annotation", "ts": 0, "dur": 5}]})";

/// What torch's tensorboard handler writes for `rank` of `world`: the rank only inside.
std::string handler_trace(long long rank, long long world) {
    return "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
           ", \"world_size\": " + std::to_string(world) + "}, \"traceEvents\": []}";
}

} // namespace

TEST_CASE("framework trace names are normalized to the CCL-Bench names") {
    TempDir dir;
    dir.write("produced/iteration_10/rank0_trace.json", k_legacy); // TorchTitan
    dir.write("produced/iteration_10/rank1_trace.json", k_kineto);
    dir.write("produced/nsys_0.nsys-rep", "rep");
    dir.write("produced/nsys_0.sqlite", "db");
    dir.write("produced/nsys_1.nsys-rep", "rep");
    dir.write("produced/unrelated.txt", "x");
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("torchtitan", 2, {"torch_profiler", "nsys"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json", "kineto_trace_1.json", "nsys_0.nsys-rep", "nsys_0.sqlite",
                                                   "nsys_1.nsys-rep"});
    CHECK(traces.missing.empty());
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_0.json")
              .find("\"distributedInfo\":{\"rank\":0,\"world_size\":2,\"backend\":\"nccl\"}") != std::string::npos);
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_1.json") == k_kineto);
}

TEST_CASE("Megatron's compressed traces keep their compression") {
    TempDir dir;
    dir.write("produced/rank-0.json.gz", "gz");
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("megatron-lm", 1, {"torch_profiler"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json.gz"});
    CHECK(traces.missing_message.empty());
}

TEST_CASE("missing ranks are named") {
    TempDir dir;
    dir.write("produced/kineto_trace_0.json", k_kineto);
    dir.write("produced/nsys_2.nsys-rep", "rep");
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("torch-ddp", 3, {"torch_profiler", "nsys"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.missing == std::vector<long long>{0, 1, 2});
    CHECK(
        traces.missing_message ==
        "no kineto_trace_1.json (rank 1); no kineto_trace_2.json (rank 2); no nsys_0.nsys-rep (rank 0); no nsys_1.nsys-rep (rank 1)");
}

TEST_CASE("no produced directory means every rank is missing, not a crash") {
    TempDir dir;
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("torch-ddp", 2, {"torch_profiler"})),
                                                  dir.path() / "absent", dir.path() / "traces");
    CHECK(traces.files.empty());
    CHECK(traces.missing == std::vector<long long>{0, 1});
}

TEST_CASE("tensorboard-handler traces are named by the rank inside them") {
    TempDir dir;
    dir.write("produced/node1_4242.1700000000000000001.pt.trace.json", handler_trace(1, 2));
    const std::string packed = gzip(handler_trace(0, 2));
    dir.write("produced/node0_4241.1700000000000000002.pt.trace.json.gz", packed);
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("megatron-lm", 2, {"torch_profiler"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json.gz", "kineto_trace_1.json"});
    CHECK(traces.missing_message.empty());
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_0.json.gz") == packed); // still compressed, byte for byte
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_1.json") == handler_trace(1, 2));
}

TEST_CASE("a handler trace without distributedInfo keeps its name, and its rank is missing") {
    TempDir dir;
    dir.write("produced/w/node0_1.1700000000000000001.pt.trace.json", k_kineto);
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("megatron-lm", 1, {"torch_profiler"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"w/node0_1.1700000000000000001.pt.trace.json"});
    CHECK(traces.missing == std::vector<long long>{0});
}

TEST_CASE("two files claiming one rank, or a rank past the world size, are collection problems") {
    TempDir dir;
    dir.write("produced/a/node0_1.1700000000000000001.pt.trace.json", handler_trace(0, 2));
    dir.write("produced/b/rank0_trace.json", k_kineto);
    dir.write("produced/c/node1_2.1700000000000000003.pt.trace.json", handler_trace(1, 2));
    dir.write("produced/d/node9_9.1700000000000000004.pt.trace.json", handler_trace(5, 4)); // beyond its own world
    dir.write("produced/rank-7.json", k_kineto);                                            // beyond the plan's
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("torchtitan", 2, {"torch_profiler"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json", "kineto_trace_1.json"});
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_0.json") == handler_trace(0, 2)); // the first, by path
    CHECK(traces.missing.empty());
    CHECK(traces.missing_message == "a/node0_1.1700000000000000001.pt.trace.json and b/rank0_trace.json both claim rank 0; "
                                    "d/node9_9.1700000000000000004.pt.trace.json is rank 5, but the world size is 4; "
                                    "rank-7.json is rank 7, but the world size is 2");
}

TEST_CASE("a .json and a .json.gz of one rank are a duplicate, not two files") {
    TempDir dir;
    dir.write("produced/kineto_trace_0.json", k_kineto);
    dir.write("produced/kineto_trace_0.json.gz", gzip(k_kineto));
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("torch-ddp", 1, {"torch_profiler"})),
                                                  dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json"});
    CHECK(traces.missing_message == "kineto_trace_0.json and kineto_trace_0.json.gz both claim rank 0");
}

TEST_CASE("a serving engine's handler traces are named by their distributedInfo rank") {
    TempDir dir;
    dir.write("produced/vllm/abc-rank-0.1700000000000000001.pt.trace.json.gz", gzip(handler_trace(0, 2)));
    dir.write("produced/vllm/abc-rank-1.1700000000000000002.pt.trace.json.gz", gzip(handler_trace(1, 2)));
    const CollectedTraces traces = collect_traces(trace_expectation(plan_for("vllm", 2, {"torch_profiler"})), dir.path() / "produced",
                                                  dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json.gz", "kineto_trace_1.json.gz"});
    CHECK(traces.missing_message.empty());
    SECTION("two profiled windows of one worker claim one rank twice") {
        dir.write("produced/vllm/abc-rank-0.1700000000000000003.pt.trace.json.gz", gzip(handler_trace(0, 2)));
        const CollectedTraces again = collect_traces(trace_expectation(plan_for("vllm", 2, {"torch_profiler"})),
                                                     dir.path() / "produced", dir.path() / "traces2");
        CHECK(again.missing_message.find("both claim rank 0") != std::string::npos);
    }
}
