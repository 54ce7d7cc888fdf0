#include "bundle/bundle_manifest.hpp"
#include "test_context.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "workflows/compare.hpp"
#include "workflows/compare_html.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace harness;
using harness::test::TempDir;

namespace {

std::string card_text(const std::string& name, int steps, const std::string& extra = "") {
    return fmt::format("version: 1\ntrace_url: {}.tar.zst\ndescription: a card\nlaunch:\n  steps: {}\n"
                       "metric_source:\n  traces: [json]\n{}",
                       name, steps, extra);
}

std::string metrics_text(const std::string& step, const std::string& mfu_value = "null") {
    return R"({"format": 1, "mode": "default", "metrics": {)"
           R"("avg_step_time": {"value": )" +
           step +
           R"(, "unit": "s", "why": ""},)"
           R"("total_communication_time": {"value": 0.4, "unit": "s", "why": ""},)"
           R"("compute_comm_overlap": {"value": 25, "unit": "%", "why": ""},)"
           R"("mfu": {"value": )" +
           mfu_value + R"(, "unit": "%", "why": "no peak FLOP/s known for xpu_spec.model \"cpu\""}}})";
}

/// An unpacked bundle <dir>/<name>/ with a card, metrics.json, a run record and its manifest.
fs::path make_bundle(const TempDir& dir, const std::string& name, int steps, const std::string& step_time,
                     const std::string& extra_card = "") {
    const fs::path bundle = dir.path() / name;
    fs::create_directories(bundle);
    write_file_atomic(bundle / (name + ".yaml"), card_text(name, steps, extra_card));
    write_file_atomic(bundle / "metrics.json", metrics_text(step_time));
    write_file_atomic(bundle / "run.json", R"({"run_id": ")" + name + R"(", "state": "completed"})");
    write_file_atomic(bundle / k_manifest_name, make_manifest(bundle, "0.1.0").dump());
    return bundle;
}

} // namespace

TEST_CASE("flatten_card gives dotted paths with list indices", "[compare]") {
    const YAML::Node node = YAML::Load("a: 1\nb:\n  c: x\n  d: [p, q]\n  e: []\nf:\n");
    const auto flat = flatten_card(node);
    CHECK(flat.at("a") == "1");
    CHECK(flat.at("b.c") == "x");
    CHECK(flat.at("b.d.0") == "p");
    CHECK(flat.at("b.d.1") == "q");
    CHECK(flat.at("b.e") == "[]");
    CHECK(flat.at("f").empty());
    CHECK(flat.size() == 6);
}

TEST_CASE("step_breakdown derives compute, exposed and overlapped communication", "[compare]") {
    std::map<std::string, ComparedMetric> metrics;
    metrics["avg_step_time"] = {1.0, "s", "", ""};
    metrics["total_communication_time"] = {0.4, "s", "", ""};
    metrics["compute_comm_overlap"] = {25.0, "%", "", ""};
    StepBreakdown b = step_breakdown(metrics);
    REQUIRE(b.compute);
    CHECK(*b.overlapped == Approx(0.1));
    CHECK(*b.exposed == Approx(0.3));
    CHECK(*b.compute == Approx(0.7));
    CHECK(b.why.empty());

    SECTION("a missing input says which and why") {
        metrics["compute_comm_overlap"] = {std::nullopt, "%", "no communication inside the inner steps", ""};
        b = step_breakdown(metrics);
        CHECK_FALSE(b.compute);
        CHECK(*b.step == 1.0);
        CHECK(b.why == "compute_comm_overlap: no communication inside the inner steps");
    }
}

TEST_CASE("compare ranks bundles and keeps only the card fields that differ", "[compare]") {
    const TempDir dir;
    const fs::path slow = make_bundle(dir, "run-slow", 20, "2.0");
    const fs::path fast = make_bundle(dir, "run-fast", 12, "1.0", "extra: only here\n");
    const fs::path archive = dir.path() / "run-fast.tar.zst";
    write_tar_zst(fast, "run-fast", archive, 1);

    const Comparison comparison = compare_runs({slow, archive});
    REQUIRE(comparison.runs.size() == 2);
    CHECK(comparison.runs[0].kind == "bundle directory");
    CHECK(comparison.runs[1].kind == "bundle");
    CHECK(comparison.runs[1].name == "run-fast");
    CHECK(comparison.runs[1].metrics_source == "metrics.json");
    CHECK(comparison.ranking == std::vector<std::size_t>{1, 0});
    REQUIRE(comparison.differences.size() == 2);
    CHECK(comparison.differences[0].path == "extra");
    CHECK_FALSE(comparison.differences[0].values[0]);
    CHECK(*comparison.differences[0].values[1] == "only here");
    CHECK(comparison.differences[1].path == "launch.steps");
    CHECK(*comparison.differences[1].values[0] == "20");

    const Json json = comparison_to_json(comparison);
    CHECK(json.find("ranking")->as_array().front().as_string() == "run-fast");
    CHECK(json.find("runs")->as_array()[0].find("rank")->as_int() == 2);
    CHECK(comparison_table(comparison).find("launch.steps") != std::string::npos);
}

TEST_CASE("a run directory without metrics.json is measured from its traces", "[compare]") {
    const TempDir dir;
    const fs::path run = dir.path() / "run-a";
    const fs::path traces = fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/traces/two_ranks";
    fs::create_directories(run / "traces");
    fs::copy_file(traces / "kineto_trace_0.json", run / "traces/kineto_trace_0.json");
    fs::copy_file(traces / "kineto_trace_1.json", run / "traces/kineto_trace_1.json");
    fs::copy_file(traces / "card.yaml", run / "card.yaml");
    write_file_atomic(run / "run.json", R"({"run_id": "the-run-id"})");
    const fs::path other = make_bundle(dir, "run-b", 12, "1.0");

    const Comparison comparison = compare_runs({run, other});
    CHECK(comparison.runs[0].kind == "run directory");
    CHECK(comparison.runs[0].name == "the-run-id");
    CHECK(comparison.runs[0].metrics_source == "computed from the traces");
    CHECK(comparison.runs[0].metrics.at("avg_step_time").value);
}

TEST_CASE("compare refuses bad input with one clear error", "[compare]") {
    const TempDir dir;
    const fs::path a = make_bundle(dir, "run-a", 12, "1.0");
    const fs::path b = make_bundle(dir, "run-b", 20, "2.0");
    const auto message = [](const std::vector<fs::path>& inputs) -> std::string {
        try {
            compare_runs(inputs);
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            return error.what();
        }
        return "no error";
    };

    SECTION("one input") { CHECK_THAT(message({a}), Catch::Contains("two or more")); }
    SECTION("a missing path") { CHECK_THAT(message({a, dir.path() / "nope"}), Catch::Contains("nope: no such file or directory")); }
    SECTION("a directory that is neither bundle nor run") {
        fs::create_directories(dir.path() / "empty");
        CHECK_THAT(message({a, dir.path() / "empty"}), Catch::Contains("neither a bundle"));
    }
    SECTION("a file that is not a bundle") { CHECK_THAT(message({a, dir.write("notes.txt", "hi")}), Catch::Contains("not a bundle")); }
    SECTION("a tampered bundle") {
        write_file_atomic(b / "metrics.json", metrics_text("0.001"));
        CHECK_THAT(message({a, b}), Catch::Contains("does not match its manifest"));
    }
    SECTION("a malformed metrics.json") {
        write_file_atomic(b / "metrics.json", R"({"metrics": {"avg_step_time": {"value": "fast"}}})");
        write_file_atomic(b / k_manifest_name, make_manifest(b, "0.1.0").dump());
        CHECK_THAT(message({a, b}), Catch::Contains("metrics.avg_step_time.value: expected a number or null"));
    }
    SECTION("a corrupt archive") {
        CHECK_THAT(message({a, dir.write("broken.tar.zst", "not zstd")}), Catch::Contains("broken.tar.zst"));
    }
}

TEST_CASE("the page escapes card strings and draws one bar per run", "[compare]") {
    const TempDir dir;
    const fs::path a = make_bundle(dir, "run-a", 12, "1.0", "description2: \"<script>alert('x')</script>\"\n");
    const fs::path b = make_bundle(dir, "run-b", 20, "2.0");
    const std::string page = comparison_html(compare_runs({a, b}));
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") != std::string::npos);
    CHECK(page.find("id=\"chart-breakdown\"") != std::string::npos);
    CHECK(page.find("id=\"chart-scatter\"") != std::string::npos);
    // mfu is n/a in both: one note with the reason, no row of gaps.
    CHECK(page.find("class=\"bar na\"") == std::string::npos);
    CHECK(page.find("mfu: n/a for 2 of 2 runs: no peak FLOP/s known") != std::string::npos);
    CHECK(html_escape("a&b<\"'>") == "a&amp;b&lt;&quot;&#39;&gt;");
}
