// The parts of `compare` that make a comparison readable at a glance: labels, throughput per
// device, the rankings, collapsed n/a notes, step spread, sweep directories, and the metrics'
// per-step and per-collective detail they are drawn from.
#include "metrics/kernel_classifier.hpp"
#include "metrics/metrics.hpp"
#include "test_context.hpp"
#include "util/fs.hpp"
#include "workflows/compare.hpp"
#include "workflows/compare_html.hpp"
#include "workflows/run_status.hpp"
#include "workflows/sweep.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace harness;
using harness::test::TempDir;

namespace {

ComparedRun run_with(const std::string& name, std::map<std::string, std::string> card, std::optional<double> step = 1.0) {
    ComparedRun run;
    run.name = name;
    run.card = std::move(card);
    run.breakdown.step = step;
    return run;
}

/// A run directory as `run` leaves it: the effective card, run.json and metrics.json.
fs::path make_run_dir(const fs::path& dir, const std::string& id, int batch, const std::string& step) {
    fs::path run = dir / id;
    fs::create_directories(run / "traces");
    write_file_atomic(run / "card.yaml", fmt::format("version: 1\nworkload:\n  data:\n    batch_size: {}\n    seq_len: 64\n"
                                                     "  hardware:\n    xpu_spec:\n      model: cpu\n      total_count: 2\n",
                                                     batch));
    write_file_atomic(run / "run.json", R"({"run_id": ")" + id + R"(", "state": "completed"})");
    write_file_atomic(run / "metrics.json",
                      R"({"format": 1, "mode": "default", "metrics": {"avg_step_time": {"value": )" + step +
                          R"(, "unit": "s", "why": ""}, "mfu": {"value": null, "unit": "%", "why": "no peak FLOPs for cpu"}}})");
    return run;
}

} // namespace

TEST_CASE("runs are labelled by the card values that differ", "[compare][glance]") {
    const std::vector<ComparedRun> runs = {run_with("id-a", {}), run_with("id-b", {})};
    SECTION("short names for the usual fields") {
        const std::vector<CardDifference> differences = {{"workload.data.batch_size", {"16", "32"}},
                                                         {"workload.data.seq_len", {"64", "64"}}};
        CHECK(run_labels(runs, differences) == std::vector<std::string>{"bs=16 seq=64", "bs=32 seq=64"});
    }
    SECTION("the last name, the index with it, the whole path when two would read the same") {
        const std::vector<CardDifference> differences = {{"launch.steps", {"10", std::nullopt}},
                                                         {"a.mode", {"x", ""}},
                                                         {"b.mode", {"y", "z"}},
                                                         {"metric_source.traces.0", {"json", "nsys"}}};
        CHECK(run_labels(runs, differences) ==
              std::vector<std::string>{"steps=10 a.mode=x b.mode=y traces.0=json", "steps=- a.mode='' b.mode=z traces.0=nsys"});
    }
    SECTION("more than four values") {
        std::vector<CardDifference> differences;
        for (int i = 0; i < 6; ++i) {
            differences.push_back({fmt::format("k{}", i), {"1", "2"}});
        }
        CHECK(run_labels(runs, differences)[0] == "k0=1 k1=1 k2=1 k3=1 +2 more");
    }
    SECTION("no differences: the ids; the same label twice is told apart") {
        CHECK(run_labels(runs, {}) == std::vector<std::string>{"id-a", "id-b"});
        const std::vector<ComparedRun> three = {run_with("x", {}), run_with("x", {}), run_with("x", {})};
        CHECK(run_labels(three, {}) == std::vector<std::string>{"x", "x (2)", "x (3)"});
    }
}

TEST_CASE("throughput per device comes from the card and the step time", "[compare][glance]") {
    std::map<std::string, std::string> card = {
        {"workload.data.batch_size", "16"}, {"workload.data.seq_len", "64"}, {"workload.hardware.xpu_spec.total_count", "4"}};
    Throughput t = throughput_per_device(card, 0.5);
    REQUIRE(t.value);
    CHECK(*t.value == Approx(16.0 * 64 / 0.5 / 4));
    CHECK(t.unit == "tokens/s/device");
    CHECK_THAT(t.basis, Catch::Contains("batch_size 16 x seq_len 64"));

    card.erase("workload.data.seq_len");
    t = throughput_per_device(card, 0.5);
    CHECK(*t.value == Approx(8.0));
    CHECK(t.unit == "samples/s/device");

    CHECK_FALSE(throughput_per_device(card, std::nullopt).value);
    CHECK(throughput_per_device(card, std::nullopt).why == "no avg_step_time");
    card["workload.hardware.xpu_spec.total_count"] = "N/A";
    CHECK_THAT(throughput_per_device(card, 0.5).why, Catch::Contains("total_count"));
    card.erase("workload.data.batch_size");
    CHECK_THAT(throughput_per_device(card, 0.5).why, Catch::Contains("batch_size"));
}

TEST_CASE("ranking by throughput puts the most work per device first, never by step time alone across batch sizes",
          "[compare][glance]") {
    const auto card = [](const std::string& batch) {
        return std::map<std::string, std::string>{{"workload.data.batch_size", batch},
                                                  {"workload.hardware.xpu_spec.total_count", "1"}};
    };
    // The small batch has the shortest step but does the least work.
    std::vector<ComparedRun> runs = {run_with("small", card("8"), 1.0), run_with("big", card("32"), 2.0), run_with("none", {}, 0.5)};
    for (ComparedRun& run : runs) {
        run.throughput = throughput_per_device(run.card, run.breakdown.step);
    }
    CHECK(rank_by_throughput(runs) == std::vector<std::size_t>{1, 0, 2});
    CHECK_THAT(step_ranking_note(runs), Catch::Contains("the batch sizes differ (8, 32, -)"));
    runs.pop_back();
    runs[1].card = card("8");
    CHECK(step_ranking_note(runs).empty());
}

TEST_CASE("n/a metrics collapse into one note per metric and reason", "[compare][glance]") {
    std::vector<ComparedRun> runs = {run_with("a", {}), run_with("b", {}), run_with("c", {})};
    runs[0].metrics["mfu"] = {std::nullopt, "%", "no peak FLOPs for cpu", ""};
    runs[1].metrics["mfu"] = {std::nullopt, "%", "no peak FLOPs for cpu", ""};
    runs[2].metrics["mfu"] = {42.0, "%", "", ""};
    runs[2].metrics["straggler"] = {std::nullopt, "ratio", "one rank", ""};
    const std::vector<MissingNote> notes = collapse_missing(runs);
    REQUIRE(notes.size() == 2);
    CHECK(notes[0].runs == std::vector<std::size_t>{0, 1});
    CHECK(missing_note_text(notes[0], 3) == "mfu: n/a for 2 of 3 runs: no peak FLOPs for cpu");
    CHECK(missing_note_text(notes[1], 3) == "straggler: n/a for 1 of 3 runs: one rank");
}

TEST_CASE("step spread is min, median and max over every rank's steps", "[compare][glance]") {
    RunDetail detail;
    CHECK_FALSE(step_spread(detail));
    detail.steps = {{0.3, 0.1}, {0.2, 0.9}};
    const StepSpread even = *step_spread(detail);
    CHECK(even.count == 4);
    CHECK(even.min == 0.1);
    CHECK(even.median == Approx(0.25));
    CHECK(even.max == 0.9);
    detail.steps.push_back({0.5});
    CHECK(step_spread(detail)->median == 0.3);
}

TEST_CASE("a sweep directory stands for its points, with their overrides", "[compare][glance]") {
    const TempDir dir;
    const fs::path sweep_dir = dir.path() / "tiny-sweep";
    fs::create_directories(sweep_dir);
    SweepRecord record;
    record.id = "tiny-sweep";
    record.card = "/cards/tiny.yaml";
    record.axes = {{"workload.data.batch_size", {"8", "32", "64"}}};
    for (const int batch : {8, 32}) {
        SweepPoint point;
        point.overrides = {fmt::format("workload.data.batch_size={}", batch)};
        point.state = PointState::completed;
        point.run_dir = make_run_dir(sweep_dir, fmt::format("tiny-bs{}", batch), batch, batch == 8 ? "0.5" : "1.0").string();
        record.points.push_back(point);
    }
    SweepPoint skipped;
    skipped.overrides = {"workload.data.batch_size=64"};
    skipped.state = PointState::skipped;
    skipped.reason = "does not validate";
    record.points.push_back(skipped);
    record.save(sweep_dir);

    const Comparison comparison = compare_runs({sweep_dir});
    REQUIRE(comparison.runs.size() == 2);
    CHECK(comparison.runs[0].label == "bs=8");
    CHECK(comparison.runs[0].sweep == "tiny-sweep");
    CHECK(comparison.runs[1].overrides == std::vector<std::string>{"workload.data.batch_size=32"});
    // bs 32 in 1 s beats bs 8 in 0.5 s per device; by step time alone it would lose.
    CHECK(comparison.throughput_ranking == std::vector<std::size_t>{1, 0});
    CHECK(comparison.ranking == std::vector<std::size_t>{0, 1});
    CHECK_FALSE(comparison.ranking_note.empty());
    REQUIRE(comparison.left_out.size() == 1);
    CHECK_THAT(comparison.left_out[0], Catch::Contains("batch_size=64: skipped (does not validate)"));
    REQUIRE(comparison.missing.size() == 1);
    CHECK(comparison.missing[0].metric == "mfu");

    const Json json = comparison_to_json(comparison);
    CHECK(json.find("throughput_ranking")->as_array()[0].as_string() == "tiny-bs32");
    CHECK(json.find("runs")->as_array()[0].find("label")->as_string() == "bs=8");
    CHECK(json.find("missing")->as_array()[0].find("text")->as_string() == "mfu: n/a for 2 of 2 runs: no peak FLOPs for cpu");
    CHECK_THAT(comparison_table(comparison), Catch::Contains("Ranking by throughput per device"));
    CHECK_THAT(comparison_table(comparison), Catch::Contains("sweep tiny-sweep point tiny-bs8: workload.data.batch_size=8"));

    const std::string page = comparison_html(comparison);
    CHECK(page.find("id=\"throughput\"") != std::string::npos);
    CHECK(page.find("class=\"missing-note\"") != std::string::npos);
    CHECK(page.find("id=\"ranking-note\"") != std::string::npos);
    CHECK(page.find("bar na") == std::string::npos);
    CHECK(page.find("id=\"chart-mfu\"") == std::string::npos); // every run n/a: the note says so once

    SECTION("status reads the sweep directory and shows each point's overrides") {
        const ResultsStatus status = scan_results(sweep_dir);
        REQUIRE(status.sweeps.size() == 1);
        REQUIRE(status.runs.size() == 2);
        // Both started at the same (unrecorded) time: listed by directory name.
        CHECK(status.runs[0].id == "tiny-bs32");
        CHECK(status.runs[0].overrides == std::vector<std::string>{"workload.data.batch_size=32"});
        CHECK_THAT(format_status(status), Catch::Contains("point: workload.data.batch_size=32"));
    }
}

TEST_CASE("collective operations by name, across libraries", "[compare][glance]") {
    using metrics::collective_operation;
    CHECK(collective_operation("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "all_reduce");
    CHECK(collective_operation("gloo:all_reduce") == "all_reduce");
    CHECK(collective_operation("c10d::allgather_") == "all_gather");
    CHECK(collective_operation("ncclKernel_ReduceScatter_RING_LL_Sum_bfloat16") == "reduce_scatter");
    CHECK(collective_operation("all-to-all-start.2") == "all_to_all");
    CHECK(collective_operation("nccl:broadcast") == "broadcast");
    CHECK(collective_operation("ncclDevKernel_SendRecv") == "send_recv");
    CHECK(collective_operation("c10d::barrier") == "barrier");
    CHECK(collective_operation("nccl:reduce") == "reduce");
    CHECK(collective_operation("record_param_comms") == "other");
}

TEST_CASE("the metrics keep each rank's steps and communication by collective", "[compare][glance]") {
    const fs::path traces = fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/traces/two_ranks";
    const metrics::MetricsReport report = metrics::compute_metrics(traces, metrics::MetricsOptions{});
    const auto find = [&report](const std::string& name) {
        return *std::find_if(report.metrics.begin(), report.metrics.end(),
                             [&name](const metrics::MetricValue& value) { return value.metric == name; });
    };
    const metrics::MetricValue step = find("avg_step_time");
    REQUIRE(step.per_step.size() == step.per_rank.size());
    for (std::size_t r = 0; r < step.per_rank.size(); ++r) {
        if (step.per_rank[r]) {
            REQUIRE_FALSE(step.per_step[r].empty());
            double sum = 0;
            for (const double s : step.per_step[r]) {
                sum += s;
            }
            CHECK(sum / static_cast<double>(step.per_step[r].size()) == Approx(*step.per_rank[r]));
        }
    }
    const metrics::MetricValue comm = find("total_communication_time");
    REQUIRE(comm.value);
    REQUIRE_FALSE(comm.time_by_collective.empty());
    double largest = 0;
    for (const auto& [operation, seconds] : comm.time_by_collective) {
        largest = std::max(largest, seconds);
    }
    // Each part is merged on its own: none can exceed the whole.
    CHECK(largest <= *comm.value * (1 + 1e-12));
}
