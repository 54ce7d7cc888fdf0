// references.yaml and the reproduction verdict (workflows/references.hpp).
#include "test_context.hpp"
#include "util/error.hpp"
#include "workflows/references.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace harness;
using harness::test::TempDir;

namespace {

ComparedRun run_with(const std::string& name, const std::string& metric, double value, const std::string& unit) {
    ComparedRun run;
    run.name = name;
    run.metrics[metric] = ComparedMetric{value, unit, "", ""};
    return run;
}

std::string refused(const TempDir& dir, const std::string& text) {
    const fs::path file = dir.write("references.yaml", text);
    try {
        load_references(file);
    } catch (const HarnessError& error) {
        CHECK(error.code() == k_exit_usage);
        return error.what();
    }
    FAIL("accepted: " << text);
    return {};
}

} // namespace

TEST_CASE("references.yaml is read, and what cannot hold a run to account is refused at its line", "[references]") {
    TempDir dir;
    const fs::path file = dir.write("references.yaml", "references:\n"
                                                       "  - workload: tiny-ddp\n"
                                                       "    where: {workload.data.batch_size: 16}\n"
                                                       "    metrics:\n"
                                                       "      avg_step_time: {value: 0.03, tolerance: 20%}\n"
                                                       "      mfu: {min: 10, max: 60}\n"
                                                       "      straggler: {value: 0.1, tolerance: 0.05}\n");
    const std::vector<WorkloadReference> references = load_references(file);
    REQUIRE(references.size() == 1);
    CHECK(references[0].workload == "tiny-ddp");
    CHECK(references[0].where == std::vector<std::pair<std::string, std::string>>{{"workload.data.batch_size", "16"}});
    REQUIRE(references[0].metrics.size() == 3);
    CHECK(references[0].metrics[0].tolerance_relative);
    CHECK(references[0].metrics[0].tolerance == Approx(0.2));
    CHECK(references[0].metrics[0].location.find("references.yaml:5:7") != std::string::npos);
    CHECK_FALSE(references[0].metrics[2].tolerance_relative);

    const std::string head = "references:\n  - workload: tiny-ddp\n    metrics:\n";
    CHECK_THAT(refused(dir, head + "      mfuu: {min: 1}\n"),
               Catch::Contains(":4:7: references[0].metrics.mfuu: not a metric") && Catch::Contains("did you mean \"mfu\"?"));
    CHECK_THAT(refused(dir, head + "      mfu: {value: 30}\n"), Catch::Contains("a value needs a tolerance"));
    CHECK_THAT(refused(dir, head + "      mfu: {value: 30, tolerance: ten}\n"),
               Catch::Contains("references[0].metrics.mfu.tolerance: expected N% or a non-negative number"));
    CHECK_THAT(refused(dir, head + "      mfu: {value: 30, tolerance: -1}\n"), Catch::Contains("non-negative"));
    CHECK_THAT(refused(dir, head + "      mfu: {min: 60, max: 10}\n"), Catch::Contains("min 60 is above max 10"));
    CHECK_THAT(refused(dir, head + "      mfu: {mni: 1}\n"), Catch::Contains("not a key here (keys: value, tolerance, min, max)"));
    CHECK_THAT(refused(dir, head + "      mfu: {}\n"), Catch::Contains("nothing to hold the metric to"));
    CHECK_THAT(refused(dir, "references:\n  - metrics: {mfu: {min: 1}}\n"), Catch::Contains("references[0].workload: required"));
    CHECK_THAT(refused(dir, "references: []\n"), Catch::Contains("references: required"));
    CHECK_THAT(refused(dir, "referencs: []\n"), Catch::Contains("did you mean \"references\"?"));
    CHECK_THAT(refused(dir, "references:\n  - workload: [x\n"), Catch::Contains("references.yaml:"));
}

TEST_CASE("a run is held to its workload's references by the metric's direction", "[references]") {
    TempDir dir;
    const std::vector<WorkloadReference> references = load_references(
        dir.write("references.yaml", "references:\n"
                                     "  - workload: tiny-ddp\n"
                                     "    metrics:\n"
                                     "      avg_step_time: {value: 0.030, tolerance: 10%}\n"));
    const auto verdict = [&](double step) {
        const ReferenceReport report = check_references(references,
                                                        {run_with("tiny-ddp-20261128T052350Z-b1cac1", "avg_step_time", step, "s")});
        REQUIRE(report.checks.size() == 1);
        return report.checks[0];
    };
    CHECK(verdict(0.032).verdict == ReferenceVerdict::within);
    CHECK(verdict(0.034).verdict == ReferenceVerdict::regression); // slower: worse
    CHECK(verdict(0.034).detail.find("+13.3 % past the tolerance") != std::string::npos);
    CHECK(verdict(0.020).verdict == ReferenceVerdict::better); // faster beyond the tolerance: said, passes
    CHECK_FALSE(check_references(references, {run_with("tiny-ddp-20261128T052350Z-b1cac1", "avg_step_time", 0.02, "s")}).failed());

    // A higher-is-better metric the other way round, and a metric the run lacks.
    const std::vector<WorkloadReference> mfu = load_references(
        dir.write("mfu.yaml", "references:\n  - workload: 'tiny-*'\n    metrics:\n      mfu: {value: 40, tolerance: 5}\n"));
    CHECK(check_references(mfu, {run_with("tiny-ddp-20261128T052350Z-b1cac1", "mfu", 30, "%")}).checks[0].verdict ==
          ReferenceVerdict::regression);
    CHECK(check_references(mfu, {run_with("tiny-ddp-20261128T052350Z-b1cac1", "mfu", 50, "%")}).checks[0].verdict ==
          ReferenceVerdict::better);
    const ReferenceReport lacking = check_references(mfu, {run_with("tiny-ddp-20261128T052350Z-b1cac1", "avg_step_time", 1, "s")});
    CHECK(lacking.checks[0].verdict == ReferenceVerdict::missing);
    CHECK(lacking.failed());

    // No run named by any reference is a failure too: a gate that checks nothing is no gate.
    const ReferenceReport none = check_references(references, {run_with("other-20261128T052350Z-b1cac1", "avg_step_time", 1, "s")});
    CHECK(none.checks.empty());
    CHECK(none.unmatched_runs == std::vector<std::string>{"other-20261128T052350Z-b1cac1"});
    CHECK(none.failed());
    CHECK(workload_of_run("tiny-ddp-20261128T052350Z-b1cac1") == "tiny-ddp");
    CHECK(workload_of_run("my-named-run") == "my-named-run");
}

TEST_CASE("a reproduction is within noise when its mean step is within twice the standard error", "[references]") {
    ComparedRun original;
    ComparedRun reproduced;
    // Two ranks each: the per-step series is the ranks' mean, 10 ms ± 1 ms.
    original.detail.steps = {{0.009, 0.011, 0.010, 0.009, 0.011}, {0.009, 0.011, 0.010, 0.009, 0.011}};
    reproduced.detail.steps = {{0.0095, 0.0115, 0.0105, 0.0095, 0.0115}, {0.0095, 0.0115, 0.0105, 0.0095, 0.0115}};
    original.metrics["avg_step_time"] = ComparedMetric{0.010, "s", "", ""};
    reproduced.metrics["avg_step_time"] = ComparedMetric{0.0105, "s", "", ""};
    ReproductionVerdict verdict = reproduction_verdict(original, reproduced);
    REQUIRE(verdict.judged);
    CHECK(verdict.original_steps == 5);
    // sd 1 ms over 5 steps in each: 2 × sqrt(1e-6/5 × 2) = 1.26 ms, and the means differ by 0.5 ms.
    CHECK(verdict.noise == Approx(2 * std::sqrt(2 * 1e-6 / 5)));
    CHECK(verdict.within_noise);
    CHECK(reproduction_verdict_text(verdict).find("reproduced within noise: step time 0.0105 s vs the bundle's 0.01 s (+5.0 %") == 0);
    REQUIRE(verdict.changes.size() == 1);

    // 15 % faster on every step: outside the noise, said plainly.
    reproduced.detail.steps = {{0.00765, 0.00935, 0.0085, 0.00765, 0.00935}};
    verdict = reproduction_verdict(original, reproduced);
    CHECK_FALSE(verdict.within_noise);
    CHECK(reproduction_verdict_text(verdict).find("NOT reproduced within noise") == 0);
    CHECK(reproduction_verdict_text(verdict).find("(-15.0 %") != std::string::npos);

    // One step cannot show noise.
    reproduced.detail.steps = {{0.01}};
    verdict = reproduction_verdict(original, reproduced);
    CHECK_FALSE(verdict.judged);
    CHECK(verdict.why.find("too few steps") == 0);
}
