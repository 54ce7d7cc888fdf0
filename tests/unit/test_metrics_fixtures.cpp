// The fixture traces of tests/fixtures/traces/, whose expected values are worked out by hand in
// the README beside them; checked to 1e-9 relative.
#include "metrics/metrics.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>

using namespace harness;
using namespace harness::metrics;
using harness::test::TempDir;

namespace {

fs::path fixture(const std::string& name) { return fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/traces" / name; }

fs::path shared_dir() {
    const char* env = std::getenv("CCL_SHARED_DIR");
    return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(CCL_HARNESS_SOURCE_DIR) / "../shared";
}

MetricsReport run(const fs::path& path, bool reference = false) {
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

bool near(double got, double want) { return got == want || std::fabs(got - want) <= 1e-9 * std::max(std::fabs(got), std::fabs(want)); }

void check_value(const MetricsReport& report, const std::string& name, double want) {
    const MetricValue& value = metric(report, name);
    INFO(name << ": " << value.why);
    REQUIRE(value.value.has_value());
    CAPTURE(*value.value, want);
    CHECK(near(*value.value, want));
}

void check_why(const MetricsReport& report, const std::string& name, const std::string& part) {
    const MetricValue& value = metric(report, name);
    CHECK_FALSE(value.value.has_value());
    CHECK_THAT(value.why, Catch::Contains(part));
}

const Disagreement* disagreement(const MetricsReport& report, const std::string& name) {
    for (const auto& d : report.disagreements) {
        if (d.metric == name) {
            return &d;
        }
    }
    return nullptr;
}

} // namespace

TEST_CASE("two GPU ranks: steps out of order, kernels crossing steps, several streams", "[metrics]") {
    const MetricsReport report = run(fixture("two_ranks"));
    REQUIRE(report.ranks.size() == 2);
    CHECK(report.card);
    check_value(report, "avg_step_time", 107.5e-6);
    check_value(report, "compute_comm_overlap", (50.0 + 100.0 / 7.0) / 2);
    check_value(report, "communication_fraction", ((50.0 + 400.0 / 9.0) / 2 + (300.0 / 11.0 + 100.0) / 2) / 2);
    check_value(report, "total_communication_time", 47.5e-6);
    check_value(report, "straggler", 0.5);
    check_value(report, "collective_volume", 5405);
    const MetricValue& volume = metric(report, "collective_volume");
    REQUIRE(volume.parts.size() == 4);
    CHECK(volume.parts[0] == std::make_pair(std::string("all_to_allv"), 5.0));
    CHECK(volume.parts[2] == std::make_pair(std::string("allreduce"), 2900.0));
    check_value(report, "mfu", 12006144.0 * (16 / 107.5e-6) / (989e12 * 2) * 100);
    const MetricValue& overlap = metric(report, "compute_comm_overlap");
    REQUIRE(overlap.per_rank.size() == 2);
    CHECK(near(*overlap.per_rank[0], 50.0));
    CHECK(near(*overlap.per_rank[1], 100.0 / 7.0));

    // The disagreement names the kernels: FlashAttention and CUTLASS counted as communication by
    // the reference, DeepEP missed by it.
    const Disagreement* d = disagreement(report, "compute_comm_overlap");
    REQUIRE(d != nullptr);
    REQUIRE(d->kernels.size() == 3);
    std::size_t flash = 0;
    std::size_t deepep = 0;
    for (const auto& k : d->kernels) {
        flash += k.name.find("CollectiveMainloopBwd") != std::string::npos && k.reference == "communication" ? 1U : 0U;
        deepep += k.standard == "DeepEP" && k.reference == "compute" ? 1U : 0U;
    }
    CHECK(flash == 1);
    CHECK(deepep == 1);
    CHECK(disagreement(report, "avg_step_time") == nullptr);
}

TEST_CASE("two GPU ranks in reference mode reproduce the tools' per-metric patterns", "[metrics]") {
    const MetricsReport report = run(fixture("two_ranks"), true);
    check_value(report, "avg_step_time", 107.5e-6);
    check_value(report, "compute_comm_overlap", (40.0 / 140.0 * 100 + 100.0 / 7.0) / 2);
    check_value(report, "communication_fraction", ((50.0 + 200.0 / 9.0) / 2 + (300.0 / 11.0 + 100.0) / 2) / 2);
    check_value(report, "total_communication_time", 37.5e-6);
    check_value(report, "straggler", 0);            // the tool globs rank*_trace.json: it never sees kineto_trace_N.json
    check_value(report, "collective_volume", 5400); // Float8 is not in the tool's dtype table
    check_value(report, "mfu", 0.0903);             // rounded to 4 decimals, as mfu.py does
}

TEST_CASE("a CPU-only gloo trace in legacy form is measured host-side", "[metrics]") {
    const MetricsReport report = run(fixture("cpu_gloo"));
    REQUIRE(report.ranks.size() == 1);
    CHECK(report.ranks[0].format == "legacy-autograd");
    CHECK(report.ranks[0].basis == "host-side (CPU operators)");
    check_value(report, "avg_step_time", 100e-6);
    check_value(report, "compute_comm_overlap", 60.0);
    check_value(report, "communication_fraction", 50.0 / 85.0 * 100);
    check_value(report, "total_communication_time", 50e-6);
    CHECK(metric(report, "compute_comm_overlap").basis == "host-side (CPU operators)");
    check_why(report, "straggler", "one rank");
    check_why(report, "mfu", "no workload card");
    check_why(report, "collective_volume", "no event carries collective arguments");

    // The tools read nothing from a bare array.
    const MetricsReport reference = run(fixture("cpu_gloo"), true);
    check_why(reference, "avg_step_time", "no ProfilerStep#N");
    check_why(reference, "compute_comm_overlap", "no rank trace to read");
}

TEST_CASE("zero communication is 0 where defined and a reason where not", "[metrics]") {
    for (const bool reference : {false, true}) {
        const MetricsReport report = run(fixture("zero_comm/kineto_trace_0.json"), reference);
        CHECK(report.layout == "trace file");
        check_value(report, "avg_step_time", 100e-6);
        check_why(report, "compute_comm_overlap", "no communication inside the inner steps");
        check_value(report, "communication_fraction", 0);
        check_value(report, "total_communication_time", 0);
    }
}

TEST_CASE("a step marker with no events inside", "[metrics]") {
    const MetricsReport report = run(fixture("empty_step"));
    check_value(report, "avg_step_time", 100e-6);
    check_why(report, "compute_comm_overlap", "no communication inside the inner steps");
    check_why(report, "communication_fraction", "no kernel time inside any inner step");
    check_value(report, "total_communication_time", 0);
    const MetricsReport reference = run(fixture("empty_step"), true);
    check_why(reference, "communication_fraction", "no kernel time inside any inner step");
    check_value(reference, "total_communication_time", 0);
}

TEST_CASE("an XLA trace: device ops only, async collectives paired start to done", "[metrics]") {
    const MetricsReport report = run(fixture("xla"));
    REQUIRE(report.ranks.size() == 1);
    CHECK(report.ranks[0].basis == "XLA ops");
    CHECK(report.ranks[0].step_source == "StepMarker");
    check_value(report, "avg_step_time", 100e-6);
    check_value(report, "compute_comm_overlap", 80.0);
    check_value(report, "communication_fraction", 95.0 / 175.0 * 100);
    check_value(report, "total_communication_time", 75e-6);
    const MetricsReport reference = run(fixture("xla"), true);
    check_value(reference, "compute_comm_overlap", 25.0);
    check_why(reference, "avg_step_time", "no ProfilerStep#N");
    check_why(reference, "communication_fraction", "not reproduced for XLA traces");
}

TEST_CASE("the DeepSeek-V3 trace: reference matches the CCL-Bench tools, default finds DeepEP", "[metrics]") {
    const fs::path trace = shared_dir() / "traces/deepseek-v3-dualpipe-train-rank0.json";
    if (!fs::exists(trace)) {
        WARN("skipped: " << trace << " is missing");
        return;
    }
    const MetricsReport reference = run(trace, true);
    // The README's values: 0.112202 s; 99.83 %; 0.0; 0.0.
    check_value(reference, "avg_step_time", 0.112202);
    const MetricValue& overlap = metric(reference, "compute_comm_overlap");
    REQUIRE(overlap.value);
    CHECK(std::round(*overlap.value * 100) / 100 == 99.83);
    check_value(reference, "communication_fraction", 0);
    check_value(reference, "total_communication_time", 0);

    const MetricsReport report = run(trace);
    REQUIRE(metric(report, "total_communication_time").value);
    CHECK(*metric(report, "total_communication_time").value > 0.05);
    const Disagreement* d = disagreement(report, "total_communication_time");
    REQUIRE(d != nullptr);
    bool dispatch = false;
    bool combine = false;
    for (const auto& k : d->kernels) {
        CHECK(k.standard == "DeepEP");
        dispatch = dispatch || k.name.find("dpsk::ep::internode::dispatch") != std::string::npos;
        combine = combine || k.name.find("dpsk::ep::internode::combine") != std::string::npos;
    }
    CHECK(dispatch);
    CHECK(combine);
    const Disagreement* o = disagreement(report, "compute_comm_overlap");
    REQUIRE(o != nullptr);
    for (const auto& k : o->kernels) {
        if (k.name.find("flash::") != std::string::npos) {
            CHECK(k.standard == "compute");
            CHECK(k.reference == "communication");
        }
    }
}

TEST_CASE("metrics inputs: run directories, bundles, one file; bad inputs say what to do", "[metrics]") {
    TempDir dir;
    const std::string trace = R"({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";
    SECTION("run directory: traces/ and card.yaml") {
        dir.write("run/traces/kineto_trace_0.json", trace);
        dir.write("run/traces/kineto_trace_1.json", trace);
        dir.write("run/card.yaml", "workload: {model: {phase: training}}\n");
        const MetricsReport report = run(dir.path() / "run");
        CHECK(report.layout == "run directory");
        CHECK(report.ranks.size() == 2);
        check_why(report, "mfu", "model_arch is missing");
        check_value(report, "total_communication_time", 2e-6);
    }
    SECTION("unpacked bundle: <name>/<name>.yaml, manifest.json beside the traces") {
        dir.write("b-1/b-1.yaml", "workload: {model: {phase: training}}\n");
        dir.write("b-1/kineto_trace_0.json", trace);
        dir.write("b-1/manifest.json", R"({"files": [], "format": 1})");
        const MetricsReport report = run(dir.path() / "b-1");
        CHECK(report.layout == "bundle directory");
        CHECK(report.ranks.size() == 2); // the manifest is listed: --reference reads it, as the tools do
        const MetricsReport reference = run(dir.path() / "b-1", true);
        check_value(reference, "total_communication_time", 2e-6);
    }
    SECTION("ranks sort numerically and a rank number comes from the name") {
        dir.write("t/kineto_trace_10.json", trace);
        dir.write("t/kineto_trace_2.json", trace);
        const MetricsReport report = run(dir.path() / "t");
        REQUIRE(report.ranks.size() == 2);
        CHECK(report.ranks[0].rank == 2);
        CHECK(report.ranks[1].rank == 10);
    }
    SECTION("a card that is not YAML leaves the other metrics alone") {
        dir.write("y/kineto_trace_0.json", trace);
        dir.write("y/card.yaml", "workload: [unclosed\n");
        const MetricsReport report = run(dir.path() / "y");
        check_why(report, "mfu", "invalid YAML");
        check_value(report, "avg_step_time", 10e-6);
    }
    auto error_of = [](const fs::path& path, std::vector<std::string> metrics = {}) -> std::string {
        MetricsOptions options;
        options.metrics = std::move(metrics);
        try {
            compute_metrics(path, options);
        } catch (const HarnessError& e) {
            CHECK(e.code() == k_exit_usage);
            return e.what();
        }
        FAIL("no error for " << path);
        return "";
    };
    SECTION("bad inputs") {
        CHECK_THAT(error_of(dir.write("x.tar.zst", "zz")), Catch::Contains("a packed bundle: unpack it first"));
        CHECK_THAT(error_of(dir.write("c.yaml", "a: 1")), Catch::Contains("a card, not a trace"));
        CHECK_THAT(error_of(dir.path() / "missing"), Catch::Contains("no such file or directory"));
        dir.write("empty/readme.txt", "x");
        CHECK_THAT(error_of(dir.path() / "empty"), Catch::Contains("no trace files"));
        CHECK_THAT(error_of(fixture("two_ranks"), {"overlap_ratio"}), Catch::Contains("unknown metric \"overlap_ratio\""));
        CHECK_THAT(error_of(fixture("two_ranks"), {"avg_step_tme"}), Catch::Contains("did you mean \"avg_step_time\""));
        dir.write("bad/kineto_trace_0.json", trace.substr(0, 60));
        CHECK_THAT(error_of(dir.path() / "bad"), Catch::Contains("kineto_trace_0.json: byte 60: truncated"));
    }
}

TEST_CASE("only the metrics asked for, in the order asked", "[metrics]") {
    MetricsOptions options;
    options.metrics = {"straggler", "avg_step_time", "straggler"};
    const MetricsReport report = compute_metrics(fixture("two_ranks"), options);
    REQUIRE(report.metrics.size() == 2);
    CHECK(report.metrics[0].metric == "straggler");
    CHECK(report.metrics[1].metric == "avg_step_time");
    const Json json = metrics_to_json(report);
    CHECK(json.find("metrics")->find("straggler")->find("value")->as_double() == 0.5);
    CHECK_THAT(metrics_table(report), Catch::Contains("straggler"));
}
