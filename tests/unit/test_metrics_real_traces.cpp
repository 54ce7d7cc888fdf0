// `metrics --reference` against the CCL-Bench tools on real public traces nobody here wrote
// (tests/fixtures/real_traces/README.md: sources, licence, how the cut set was cut). Every
// expected reference number is what the tool printed at ccl-bench 1d257f07b35b for the same
// files gunzipped beside `metric_source: {traces: [json]}`:
//   cd ccl-bench && python3 tools/main.py --trace DIR --metric M
// (`tests/fixtures/real_traces/check_upstream.sh CCL_BENCH_CHECKOUT [BINARY]` re-runs them all).
// main.py prints the float with repr(), so the recorded digits round-trip exactly.
#include "metrics/metrics.hpp"
#include "test_context.hpp"
#include "util/byte_source.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

using namespace harness;
using namespace harness::metrics;
using harness::test::TempDir;

namespace {

constexpr double k_relative = 1e-12;

fs::path real_set(const std::string& name) { return fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/real_traces" / name; }

// The tools read plain rank*_trace.json only, so a set is inflated into a scratch directory with
// its card, as check_upstream.sh does before running them.
void unpack_set(const std::string& name, const TempDir& dir) {
    for (const auto& entry : fs::directory_iterator(real_set(name))) {
        const fs::path& from = entry.path();
        if (from.extension() == ".yaml") {
            fs::copy_file(from, dir.path() / from.filename());
            continue;
        }
        if (from.extension() != ".gz") {
            continue;
        }
        auto source = ByteSource::open(from);
        std::ofstream out(dir.path() / from.stem(), std::ios::binary);
        std::vector<char> buffer(1 << 16);
        for (std::size_t got = source->read(buffer.data(), buffer.size()); got > 0; got = source->read(buffer.data(), buffer.size())) {
            out.write(buffer.data(), static_cast<std::streamsize>(got));
        }
        REQUIRE(out.good());
    }
}

MetricsReport run_set(const std::string& name, bool reference) {
    TempDir dir;
    unpack_set(name, dir);
    MetricsOptions options;
    options.reference = reference;
    return compute_metrics(dir.path(), options);
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

// The tool's value to 1e-12 relative; a tool value of exactly 0 must be ours exactly.
void check_equal(const MetricsReport& report, const std::string& name, double tool) {
    const MetricValue& ours = metric(report, name);
    INFO(name << " (tool printed " << tool << ")");
    REQUIRE(ours.value.has_value());
    if (tool == 0.0) {
        CHECK(*ours.value == 0.0);
    } else {
        CHECK(std::abs(*ours.value - tool) <= k_relative * std::abs(tool));
    }
}

bool any_note(const std::vector<std::string>& notes, const std::string& part) {
    for (const auto& note : notes) {
        if (note.find(part) != std::string::npos) {
            return true;
        }
    }
    return false;
}

double part(const MetricValue& value, const std::string& name) {
    for (const auto& [collective, bytes] : value.parts) {
        if (collective == name) {
            return bytes;
        }
    }
    FAIL("no part " << name);
    return 0;
}

} // namespace

TEST_CASE("real 2-rank NCCL trace (HTA sampled ranks): --reference equals the tools", "[real_traces][metrics]") {
    const MetricsReport report = run_set("hta_sampled_nccl2", true);
    REQUIRE(report.ranks.size() == 2);
    // Two ProfilerSteps per rank: both are the inner steps (compute_comm_overlap.py:229).
    check_equal(report, "avg_step_time", 0.61719575);
    check_equal(report, "compute_comm_overlap", 17.435999005719303);
    check_equal(report, "communication_fraction", 61.68140614826878);
    check_equal(report, "total_communication_time", 0.193813);
    // NCCL 2.x before 2.19 names its kernels ncclKernel_*, which the straggler tool does not count
    // (ncclDevKernel_* only): no (file, pid) group, so 0.0 (straggler_metrics.py:12-13).
    check_equal(report, "straggler", 0.0);
    CHECK(any_note(metric(report, "straggler").notes, "straggler_metrics.py:12-13"));
    // The tool prints 0.0 GB (collective_vol_total_gb) and -1.0 (mfu: no model_arch); those are its
    // "nothing" values, ours say why instead of printing a number.
    CHECK_FALSE(metric(report, "collective_volume").value.has_value());
    CHECK_FALSE(metric(report, "mfu").value.has_value());
}

TEST_CASE("real 2-rank NCCL trace (HTA sampled ranks): the default mode's own values", "[real_traces][metrics]") {
    const MetricsReport report = run_set("hta_sampled_nccl2", false);
    // The classifier and the tools' patterns agree on every kernel of this trace (ncclKernel_SendRecv,
    // ncclKernel_AllReduce, ...), so the four time metrics are the reference ones.
    check_equal(report, "avg_step_time", 0.61719575);
    check_equal(report, "compute_comm_overlap", 17.435999005719303);
    check_equal(report, "communication_fraction", 61.68140614826878);
    check_equal(report, "total_communication_time", 0.193813);
    // Ours (DESIGN.md): (max - min) / max of every communication kernel's time per rank,
    // 0.396199 s and 0.379053 s; the tool counts none of them, and the report says the modes differ.
    check_equal(report, "straggler", (0.396199 - 0.379053) / 0.396199);
    // And coll_call_num: the tool reads kineto_trace_0.json only, absent here, so it counts 0.
    REQUIRE(report.disagreements.size() == 2);
    CHECK(report.disagreements[0].metric == "straggler");
    CHECK(report.disagreements[1].metric == "coll_call_num");
}

TEST_CASE("real NCCL rank cut to one ProfilerStep window: --reference equals the tools", "[real_traces][metrics]") {
    const MetricsReport report = run_set("hta_nccl_cut", true);
    REQUIRE(report.ranks.size() == 1);
    check_equal(report, "avg_step_time", 0.219726905);
    check_equal(report, "compute_comm_overlap", 14.312315058954859);
    check_equal(report, "communication_fraction", 24.246327838241353);
    check_equal(report, "total_communication_time", 0.012300029296875);
    check_equal(report, "straggler", 0.0);
    // collective_volume is ours, labelled so: the tool (collective_data_volume.py:56) counts four
    // kinds and prints collective_vol_total_gb = 0.102228128 = the all-reduce bytes alone; ours adds
    // the broadcasts (53120 Float + 53 Long = 212904 bytes).
    const MetricValue& volume = metric(report, "collective_volume");
    check_equal(report, "collective_volume", 102441032.0);
    CHECK(any_note(volume.notes, "collective_data_volume tool"));
    CHECK(std::abs(part(volume, "allreduce") - 0.102228128e9) <= k_relative * 0.102228128e9);
    CHECK(part(volume, "broadcast") == 212904.0);
}

TEST_CASE("real NCCL rank cut to one ProfilerStep window: the default mode's own values", "[real_traces][metrics]") {
    const MetricsReport report = run_set("hta_nccl_cut", false);
    check_equal(report, "compute_comm_overlap", 14.312315058954859);
    check_equal(report, "communication_fraction", 24.246327838241353);
    check_equal(report, "total_communication_time", 0.012300029296875);
    check_equal(report, "collective_volume", 102441032.0);
    // One rank: ours declines (the tool's 0.0 would read as "perfectly balanced").
    CHECK_FALSE(metric(report, "straggler").value.has_value());
    CHECK_THAT(metric(report, "straggler").why, Catch::Contains("one rank"));
}

TEST_CASE("real ROCm trace without collectives (HTA MI250): --reference equals the tools", "[real_traces][metrics]") {
    const MetricsReport report = run_set("hta_mi250_rocm", true);
    REQUIRE(report.ranks.size() == 1);
    // ProfilerStep#1 appears twice, as user_annotation and as gpu_user_annotation: only the first
    // is a step, so two steps, both inner.
    REQUIRE(report.ranks.front().steps == 2);
    check_equal(report, "avg_step_time", 0.0046686819999999995);
    check_equal(report, "communication_fraction", 0.0);
    check_equal(report, "total_communication_time", 0.0);
    check_equal(report, "straggler", 0.0);
    // The tool prints -1.0 when no rank has communication in its steps
    // (compute_comm_overlap.py:264-269); ours is n/a with the reason.
    const MetricValue& overlap = metric(report, "compute_comm_overlap");
    CHECK_FALSE(overlap.value.has_value());
    CHECK_THAT(overlap.why, Catch::Contains("no communication inside the inner steps"));
}

TEST_CASE("the whole-trace totals equal tools/total_kernel_time, total_trace_time and coll_call_num", "[real_traces][metrics]") {
    // Printed by the tools at 1d257f07b35b (check_upstream.sh). coll_call_num reads
    // kineto_trace_0.json only, which these sets (rank*_trace.json) do not have: 0.
    struct Row {
        const char* set;
        double kernel_time, trace_time;
    };
    for (const Row& row : {Row{"hta_sampled_nccl2", 1.257545, 1.231335}, Row{"hta_nccl_cut", 0.05072945099999998, 0.21353275},
                           Row{"hta_mi250_rocm", 0.00011088099999999997, 0.00859444482421875}}) {
        INFO(row.set);
        const MetricsReport report = run_set(row.set, true);
        check_equal(report, "total_kernel_time", row.kernel_time);
        check_equal(report, "total_trace_time", row.trace_time);
        check_equal(report, "coll_call_num", 0.0);
        // The default mode sums the same kernels; it counts rank 0's collectives whatever the file name.
        const MetricsReport standard = run_set(row.set, false);
        check_equal(standard, "total_kernel_time", row.kernel_time);
        check_equal(standard, "total_trace_time", row.trace_time);
    }
}

TEST_CASE("coll_call_num counts rank 0's ncclDevKernel_ collectives as the tool does, and every collective by default", "[metrics]") {
    // tests/fixtures/traces/two_ranks: tools/main.py printed total_kernel_time 0.00049,
    // total_trace_time 0.0012 and coll_call_num 3 at 1d257f07b35b; the default classifier also
    // counts rank 0's fourth communication kernel, whose name no ncclDevKernel_ prefix matches.
    const fs::path dir = fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/traces/two_ranks";
    MetricsOptions options;
    options.reference = true;
    const MetricsReport reference = compute_metrics(dir, options);
    check_equal(reference, "total_kernel_time", 0.00049);
    check_equal(reference, "total_trace_time", 0.0012);
    check_equal(reference, "coll_call_num", 3);
    const MetricsReport standard = compute_metrics(dir, {});
    check_equal(standard, "coll_call_num", 4);
    // A CPU-only gloo trace has no GPU kernels: n/a, saying why.
    const MetricsReport cpu = compute_metrics(fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/traces/cpu_gloo", {});
    const MetricValue& total = metric(cpu, "total_kernel_time");
    CHECK_FALSE(total.value.has_value());
    CHECK(total.why.find("not GPU kernels: the trace is host-side") == 0);
}
