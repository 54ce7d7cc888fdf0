#include "test_context.hpp"
#include "trace_collect.hpp"

#include <catch2/catch.hpp>

using namespace harness;
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

} // namespace

TEST_CASE("framework trace names are normalized to the CCL-Bench names") {
    TempDir dir;
    dir.write("produced/iteration_10/rank0_trace.json", k_legacy);   // TorchTitan
    dir.write("produced/iteration_10/rank1_trace.json", k_kineto);
    dir.write("produced/nsys_0.nsys-rep", "rep");
    dir.write("produced/nsys_0.sqlite", "db");
    dir.write("produced/nsys_1.nsys-rep", "rep");
    dir.write("produced/unrelated.txt", "x");
    const CollectedTraces traces =
        collect_traces(plan_for("torchtitan", 2, {"torch_profiler", "nsys"}), dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json", "kineto_trace_1.json", "nsys_0.nsys-rep",
                                                   "nsys_0.sqlite", "nsys_1.nsys-rep"});
    CHECK(traces.missing.empty());
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_0.json").find("\"distributedInfo\":{\"rank\":0,\"world_size\":2,\"backend\":\"nccl\"}") !=
          std::string::npos);
    CHECK(read_file(dir.path() / "traces" / "kineto_trace_1.json") == k_kineto);
}

TEST_CASE("Megatron's compressed traces keep their compression") {
    TempDir dir;
    dir.write("produced/rank-0.json.gz", "gz");
    const CollectedTraces traces = collect_traces(plan_for("megatron-lm", 1, {"torch_profiler"}), dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.files == std::vector<std::string>{"kineto_trace_0.json.gz"});
    CHECK(traces.missing_message.empty());
}

TEST_CASE("missing ranks are named") {
    TempDir dir;
    dir.write("produced/kineto_trace_0.json", k_kineto);
    dir.write("produced/nsys_2.nsys-rep", "rep");
    const CollectedTraces traces =
        collect_traces(plan_for("torch-ddp", 3, {"torch_profiler", "nsys"}), dir.path() / "produced", dir.path() / "traces");
    CHECK(traces.missing == std::vector<long long>{0, 1, 2});
    CHECK(traces.missing_message ==
          "no kineto_trace_1.json (rank 1); no kineto_trace_2.json (rank 2); no nsys_0.nsys-rep (rank 0); no nsys_1.nsys-rep (rank 1)");
}

TEST_CASE("no produced directory means every rank is missing, not a crash") {
    TempDir dir;
    const CollectedTraces traces = collect_traces(plan_for("torch-ddp", 2, {"torch_profiler"}), dir.path() / "absent", dir.path() / "traces");
    CHECK(traces.files.empty());
    CHECK(traces.missing == std::vector<long long>{0, 1});
}
