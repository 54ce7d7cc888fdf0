#include "metrics/metrics_input.hpp"
#include "test_context.hpp"
#include "trace/trace_names.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

using namespace harness;
using harness::test::gzip;
using harness::test::TempDir;

namespace {

struct Row {
    const char* name;
    TraceKind kind;
    TraceNameForm form;
    long long rank; ///< -1: the name carries none
    bool compressed;
    bool canonical;
    const char* canonical_name;
};

constexpr long long k_none = -1;

} // namespace

TEST_CASE("every trace name form is classified by the one table") {
    using K = TraceKind;
    using F = TraceNameForm;
    const Row rows[] = {
        // The names the CCL-Bench tools read.
        {"kineto_trace_0.json", K::kineto, F::ccl_bench, 0, false, true, "kineto_trace_0.json"},
        {"kineto_trace_12.json.gz", K::kineto, F::ccl_bench, 12, true, true, "kineto_trace_12.json.gz"},
        {"nsys_3.nsys-rep", K::nsys_rep, F::ccl_bench, 3, false, true, "nsys_3.nsys-rep"},
        {"nsys_3.sqlite", K::nsys_sqlite, F::ccl_bench, 3, false, true, "nsys_3.sqlite"},
        {"t1v-n-0.trace.json.gz", K::xla, F::ccl_bench, k_none, true, true, "t1v-n-0.trace.json.gz"},
        {"host.trace.json", K::xla, F::ccl_bench, k_none, false, true, "host.trace.json"},
        {"host.xplane.pb", K::xla, F::ccl_bench, k_none, false, true, "host.xplane.pb"},
        // What frameworks write.
        {"rank3_trace.json", K::kineto, F::torchtitan, 3, false, false, "kineto_trace_3.json"},
        {"rank-2.json", K::kineto, F::megatron, 2, false, false, "kineto_trace_2.json"},
        {"rank-2.json.gz", K::kineto, F::megatron, 2, true, false, "kineto_trace_2.json.gz"},
        {"node1_4242.1700000000123456789.pt.trace.json", K::kineto, F::tensorboard_handler, k_none, false, false, ""},
        {"node1_4242.1700000000123456789.pt.trace.json.gz", K::kineto, F::tensorboard_handler, k_none, true, false, ""},
        {"1767687660802231168-rank-0.1767687963353114465.pt.trace.json.gz", K::kineto, F::tensorboard_handler, k_none, true, false,
         ""}, // a vLLM GPU worker
        {"card_batch8_input1024_output128_decode.trace.json.gz", K::kineto, F::sglang_bench, k_none, true, false, ""},
        {"profile_batch1_input256_output16_prefill.trace.json.gz", K::kineto, F::sglang_bench, k_none, true, false, ""},
        // Not SGLang's: a stage it does not write, or a length that is not a number (an XLA host trace).
        {"card_batch8_input1024_output128_verify.trace.json.gz", K::xla, F::ccl_bench, k_none, true, true,
         "card_batch8_input1024_output128_verify.trace.json.gz"},
        {"card_batchX_input1024_output128_decode.trace.json.gz", K::xla, F::ccl_bench, k_none, true, true,
         "card_batchX_input1024_output128_decode.trace.json.gz"},
        {"kineto_trace_01.json", K::kineto, F::ccl_bench, 1, false, false, "kineto_trace_1.json"},
        {"profile.nsys-rep", K::nsys_rep, F::other_nsys, k_none, false, false, ""},
        // Look-alikes that are not traces.
        {"run.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"metrics.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"plan.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"manifest.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"provenance.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"kineto_trace_x.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"kineto_trace_-1.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"kineto_trace_.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"kineto_trace_1234567890123456789.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"kineto_trace_0.json.zst", K::not_a_trace, F::none, k_none, false, false, ""},
        {"rank-.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"rank_trace.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"my_trace.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {".trace.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {".pt.trace.json", K::not_a_trace, F::none, k_none, false, false, ""},
        {"nsys_x.sqlite", K::not_a_trace, F::none, k_none, false, false, ""},
        {"results.sqlite", K::not_a_trace, F::none, k_none, false, false, ""},
        {"notes.txt", K::not_a_trace, F::none, k_none, false, false, ""},
    };
    for (const Row& row : rows) {
        INFO(row.name);
        const TraceName name = classify_trace_name(row.name);
        CHECK(name.kind == row.kind);
        CHECK(name.form == row.form);
        CHECK(name.rank.value_or(k_none) == row.rank);
        CHECK(name.rank.has_value() == (row.rank != k_none));
        CHECK(name.compressed == row.compressed);
        CHECK(name.canonical == row.canonical);
        CHECK(name.canonical_name == row.canonical_name);
    }
}

TEST_CASE("canonical names and the expected-names text") {
    CHECK(canonical_trace_name(TraceKind::kineto, 7, false) == "kineto_trace_7.json");
    CHECK(canonical_trace_name(TraceKind::kineto, 7, true) == "kineto_trace_7.json.gz");
    CHECK(canonical_trace_name(TraceKind::nsys_rep, 7, false) == "nsys_7.nsys-rep");
    CHECK(canonical_trace_name(TraceKind::xla, 7, false).empty());
    CHECK(expected_trace_names().find("kineto_trace_<rank>.json(.gz)") != std::string::npos);
    CHECK(describe_trace_name_form(TraceNameForm::megatron).find("rank-<r>.json") != std::string::npos);
    CHECK(describe_trace_name_form(TraceNameForm::ccl_bench).empty());
}

TEST_CASE("the rank comes from the trace's distributedInfo") {
    TempDir dir;
    const std::string head = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU {x}"}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4, "pg_config": [{"desc": "a } brace"}]},
  "traceEvents": [{"name": "ProfilerStep#1", "ph": "X"}]})";

    SECTION("plain") {
        const auto info = read_distributed_info(dir.write("a.pt.trace.json", head));
        REQUIRE(info);
        CHECK(info->rank == 3);
        CHECK(info->world_size == 4);
        CHECK(info->backend == "nccl");
    }
    SECTION("gzip, recognised by its bytes") {
        const auto info = read_distributed_info(dir.write("a.pt.trace.json.gz", gzip(head)));
        REQUIRE(info);
        CHECK(info->rank == 3);
    }
    SECTION("missing: torch.distributed was not initialized") {
        CHECK_FALSE(read_distributed_info(dir.write("a.json", R"({"traceEvents": []})")));
    }
    SECTION("malformed") {
        CHECK_FALSE(read_distributed_info(dir.write("a.json", R"({"distributedInfo": 3, "traceEvents": []})")));
        CHECK_FALSE(read_distributed_info(dir.write("b.json", R"({"distributedInfo": {"rank": "3"}})")));
        CHECK_FALSE(read_distributed_info(dir.write("c.json", R"({"distributedInfo": {"rank": -1}})")));
        CHECK_FALSE(read_distributed_info(dir.write("d.json", R"({"distributedInfo": {"rank": 1,)")));
        CHECK_FALSE(read_distributed_info(dir.write("e.json.gz", "\x1f\x8b not deflate")));
        CHECK_FALSE(read_distributed_info(dir.path() / "absent.json"));
    }
    SECTION("the word as a value is not the key") {
        const auto info = read_distributed_info(
            dir.write("a.json", R"({"note": "distributedInfo", "x": ["distributedInfo"], "distributedInfo": {"rank": 5}})"));
        REQUIRE(info);
        CHECK(info->rank == 5);
        CHECK(info->world_size == -1);
    }
    SECTION("a very large first event") {
        const std::string big(std::size_t{5} << 20, 'x');
        // Kineto writes the metadata first: found without reading what follows.
        const std::string before = R"({"distributedInfo": {"rank": 2, "world_size": 8}, "traceEvents": [{"name": ")" + big + "\"}]}";
        const auto info = read_distributed_info(dir.write("before.json.gz", gzip(before)));
        REQUIRE(info);
        CHECK(info->rank == 2);
        // Past the window it is not looked for: the rank is unknown, not a whole-file read.
        const std::string after = R"({"traceEvents": [{"name": ")" + big + R"("}], "distributedInfo": {"rank": 2}})";
        CHECK_FALSE(read_distributed_info(dir.write("after.json", after)));
        CHECK(read_distributed_info(dir.write("after2.json", after), std::size_t{6} << 20));
    }
}

TEST_CASE("metrics ranks traces by the same names, and handler traces by their distributedInfo", "[metrics]") {
    TempDir dir;
    dir.write("t/node0_1.1700000000000000001.pt.trace.json.gz",
              gzip(R"({"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": []})"));
    dir.write("t/rank-0.json", R"({"traceEvents": []})");
    dir.write("t/metrics.json", "{}");
    const metrics::MetricsInput input = metrics::resolve_metrics_input(dir.path() / "t");
    std::vector<std::pair<std::string, long long>> ranks;
    for (const metrics::TraceInput& trace : input.traces) {
        if (trace.standard) {
            ranks.emplace_back(trace.file.filename().string(), trace.rank);
        }
    }
    CHECK(ranks ==
          std::vector<std::pair<std::string, long long>>{{"node0_1.1700000000000000001.pt.trace.json.gz", 1}, {"rank-0.json", 0}});
}
