// The run query `status` and `compare` share: which runs each filter keeps, the three time forms,
// and the values refused before anything is read.
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "workflows/compare.hpp"
#include "workflows/run_query.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

namespace {

RunSummary summary(const std::string& id, const std::string& card, const std::string& state, const std::string& target,
                   const std::string& start) {
    RunSummary run;
    run.id = id;
    run.card = card;
    run.state = state;
    run.target = target;
    run.start = start;
    return run;
}

// 2026-11-27T12:00:00Z
constexpr std::time_t k_now = 1795780800;

} // namespace

TEST_CASE("run query: every filter must hold", "[run_query]") {
    const RunSummary run = summary("qwen3-4b-20261127T100000Z-abc123", "qwen3-4b", "completed", "perlmutter", "2026-11-27T10:00:00Z");
    const auto matches = [&run](const RunQuery& query) { return run_matches(parse_run_query(query, k_now), run); };
    CHECK(matches({}));
    CHECK(matches({{"completed", "failed"}, "", "", "", "", {}}));
    CHECK_FALSE(matches({{"failed"}, "", "", "", "", {}}));
    CHECK(matches({{}, "qwen3-*", "", "", "", {}}));
    CHECK(matches({{}, "*-abc123", "", "", "", {}})); // the run id matches too
    CHECK_FALSE(matches({{}, "llama*", "", "", "", {}}));
    CHECK(matches({{}, "", "perlmutter", "", "", {}}));
    CHECK_FALSE(matches({{}, "", "perl", "", "", {}})); // a target is named exactly
    // Two hours before "now" at 12:00: started at 10:00, kept by 3h, not by 90m.
    CHECK(matches({{}, "", "", "3h", "", {}}));
    CHECK_FALSE(matches({{}, "", "", "90m", "", {}}));
    CHECK(matches({{}, "", "", "1d", "", {}}));
    CHECK(matches({{}, "", "", "2026-11-27", "", {}}));
    CHECK_FALSE(matches({{}, "", "", "2026-11-28", "", {}}));
    // A date for --until keeps the whole day.
    CHECK(matches({{}, "", "", "", "2026-11-27", {}}));
    CHECK_FALSE(matches({{}, "", "", "", "2026-11-26", {}}));
    CHECK(matches({{}, "", "", "2026-11-27T10:00:00Z", "2026-11-27T10:00:00Z", {}}));
    CHECK_FALSE(matches({{"completed"}, "qwen3-*", "perlmutter", "", "2026-11-26", {}}));
}

TEST_CASE("run query: a run whose start cannot be read matches no time filter", "[run_query]") {
    const RunSummary run = summary("broken", "", "unreadable", "", "");
    CHECK(run_matches(parse_run_query({{"unreadable"}, "", "", "", "", {}}, k_now), run));
    CHECK_FALSE(run_matches(parse_run_query({{}, "", "", "30d", "", {}}, k_now), run));
}

TEST_CASE("run query: --where reads the run's own card and record, as results list does", "[run_query]") {
    TempDir dir;
    const fs::path run_dir = dir.path() / "tiny-ddp-20261127T100000Z-abc123";
    fs::create_directories(run_dir);
    RunRecord record;
    record.run_id = run_dir.filename().string();
    record.card = "tiny-ddp";
    record.target = "slurm-local";
    record.executor = "slurm";
    record.state = RunState::completed;
    record.transitions = {{"rendered", "2026-11-27T10:00:00Z"}, {"completed", "2026-11-27T10:01:00Z"}};
    record.save(run_dir);
    write_file_atomic(run_dir / run_files::k_card,
                      "workload:\n  data:\n    batch_size: 8\nModel-executor:\n  model_plan_parallelization:\n    tp: 4\n");
    RunSummary run = summary(record.run_id, "tiny-ddp", "completed", "slurm-local", "2026-11-27T10:00:00Z");
    run.dir = run_dir.string();
    const auto matches = [&run](std::vector<std::string> where) {
        RunQuery query;
        query.where = std::move(where);
        return run_matches(parse_run_query(query, k_now), run);
    };
    CHECK(matches({"workload.data.batch_size=8"}));
    CHECK(matches({"Model-executor.model_plan_parallelization.tp=4", "state=completed"}));
    CHECK_FALSE(matches({"Model-executor.model_plan_parallelization.tp=2"}));
    CHECK_FALSE(matches({"workload.data.batch_size=8", "cluster=perlmutter"})); // all must hold
    CHECK_FALSE(matches({"workload.data.seq_len=8"}));                          // a field the card lacks
    // A directory whose records cannot be read answers no field, and is no error.
    run.dir = (dir.path() / "gone").string();
    CHECK_FALSE(matches({"workload.data.batch_size=8"}));
    RunQuery query;
    query.where = {"workload.data.batch_size=8"};
    CHECK(describe_query(query, 1, 3) == "1 of 3 runs match --where workload.data.batch_size=8");
}

TEST_CASE("run query: bad values are usage errors naming the option", "[run_query]") {
    const auto error_of = [](const RunQuery& query) {
        try {
            parse_run_query(query, k_now);
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            return std::string(error.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(error_of({{"done"}, "", "", "", "", {}}), Catch::Contains("--state done: no run has this state"));
    CHECK_THAT(error_of({{}, "", "", "yesterday", "", {}}), Catch::Contains("--since yesterday: not a time"));
    CHECK_THAT(error_of({{}, "", "", "", "3w", {}}), Catch::Contains("--until 3w: not a time"));
    CHECK_THAT(error_of({{}, "", "", "2026-13-01", "", {}}), Catch::Contains("not a time"));
    CHECK_THAT(error_of({{}, "", "", "2026-11-28", "2026-11-27", {}}), Catch::Contains("is before --since"));
    RunQuery bad_where;
    bad_where.where = {"tp"};
    CHECK_THAT(error_of(bad_where), Catch::Contains("--where tp: not FIELD=VALUE"));
}

TEST_CASE("run query: status keeps the sweeps with a matching run", "[run_query]") {
    ResultsStatus all;
    all.runs.push_back(summary("a", "tiny-ddp", "completed", "local", "2026-11-27T10:00:00Z"));
    all.runs.push_back(summary("b", "tiny-ddp", "failed", "local", "2026-11-27T10:05:00Z"));
    all.runs.back().sweep = "tiny-ddp-sweep-1";
    all.sweeps.push_back(SweepSummary{"tiny-ddp-sweep-1", "/r/tiny-ddp-sweep-1", "tiny-ddp.yaml", 1, {}, "", {}});
    all.sweeps.push_back(SweepSummary{"other-sweep-2", "/r/other-sweep-2", "other.yaml", 0, {}, "", {}});
    const ResultsStatus failed = filter_status(all, parse_run_query({{"failed"}, "", "", "", "", {}}, k_now));
    REQUIRE(failed.runs.size() == 1);
    CHECK(failed.runs[0].id == "b");
    REQUIRE(failed.sweeps.size() == 1);
    CHECK(failed.sweeps[0].id == "tiny-ddp-sweep-1");
    // With only a card filter, a sweep whose card matches stays though no run of it exists yet.
    const ResultsStatus other = filter_status(all, parse_run_query({{}, "other*", "", "", "", {}}, k_now));
    CHECK(other.runs.empty());
    REQUIRE(other.sweeps.size() == 1);
    CHECK(other.sweeps[0].id == "other-sweep-2");
    CHECK(describe_query({{"failed"}, "", "", "", "", {}}, 1, 2) == "1 of 2 runs match --state failed");
    CHECK(describe_query({}, 2, 2).empty());
}

TEST_CASE("run_labels: a reproduction is labelled by the bundle it reproduces", "[run_query][compare]") {
    ComparedRun original;
    original.name = "tiny-ddp-20261127T100000Z-abc123";
    ComparedRun copy;
    copy.name = "tiny-ddp-20261127T110000Z-def456";
    copy.reproduces = original.name;
    CHECK(run_labels({original, copy}, {}) == std::vector<std::string>{original.name, "reproduces " + original.name});
    CardDifference steps{"launch.steps", {std::string("10"), std::string("12")}};
    CHECK(run_labels({original, copy}, {steps}) == std::vector<std::string>{"steps=10", "reproduces " + original.name + " steps=12"});
}
