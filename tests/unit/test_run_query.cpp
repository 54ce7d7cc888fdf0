// The run query `status` and `compare` share: which runs each filter keeps, the three time forms,
// and the values refused before anything is read.
#include "util/error.hpp"
#include "workflows/compare.hpp"
#include "workflows/run_query.hpp"

#include <catch2/catch.hpp>

using namespace harness;

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
    CHECK(matches({{"completed", "failed"}, "", "", "", ""}));
    CHECK_FALSE(matches({{"failed"}, "", "", "", ""}));
    CHECK(matches({{}, "qwen3-*", "", "", ""}));
    CHECK(matches({{}, "*-abc123", "", "", ""})); // the run id matches too
    CHECK_FALSE(matches({{}, "llama*", "", "", ""}));
    CHECK(matches({{}, "", "perlmutter", "", ""}));
    CHECK_FALSE(matches({{}, "", "perl", "", ""})); // a target is named exactly
    // Two hours before "now" at 12:00: started at 10:00, kept by 3h, not by 90m.
    CHECK(matches({{}, "", "", "3h", ""}));
    CHECK_FALSE(matches({{}, "", "", "90m", ""}));
    CHECK(matches({{}, "", "", "1d", ""}));
    CHECK(matches({{}, "", "", "2026-11-27", ""}));
    CHECK_FALSE(matches({{}, "", "", "2026-11-28", ""}));
    // A date for --until keeps the whole day.
    CHECK(matches({{}, "", "", "", "2026-11-27"}));
    CHECK_FALSE(matches({{}, "", "", "", "2026-11-26"}));
    CHECK(matches({{}, "", "", "2026-11-27T10:00:00Z", "2026-11-27T10:00:00Z"}));
    CHECK_FALSE(matches({{"completed"}, "qwen3-*", "perlmutter", "", "2026-11-26"}));
}

TEST_CASE("run query: a run whose start cannot be read matches no time filter", "[run_query]") {
    const RunSummary run = summary("broken", "", "unreadable", "", "");
    CHECK(run_matches(parse_run_query({{"unreadable"}, "", "", "", ""}, k_now), run));
    CHECK_FALSE(run_matches(parse_run_query({{}, "", "", "30d", ""}, k_now), run));
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
    CHECK_THAT(error_of({{"done"}, "", "", "", ""}), Catch::Contains("--state done: no run has this state"));
    CHECK_THAT(error_of({{}, "", "", "yesterday", ""}), Catch::Contains("--since yesterday: not a time"));
    CHECK_THAT(error_of({{}, "", "", "", "3w"}), Catch::Contains("--until 3w: not a time"));
    CHECK_THAT(error_of({{}, "", "", "2026-13-01", ""}), Catch::Contains("not a time"));
    CHECK_THAT(error_of({{}, "", "", "2026-11-28", "2026-11-27"}), Catch::Contains("is before --since"));
}

TEST_CASE("run query: status keeps the sweeps with a matching run", "[run_query]") {
    ResultsStatus all;
    all.runs.push_back(summary("a", "tiny-ddp", "completed", "local", "2026-11-27T10:00:00Z"));
    all.runs.push_back(summary("b", "tiny-ddp", "failed", "local", "2026-11-27T10:05:00Z"));
    all.runs.back().sweep = "tiny-ddp-sweep-1";
    all.sweeps.push_back(SweepSummary{"tiny-ddp-sweep-1", "/r/tiny-ddp-sweep-1", "tiny-ddp.yaml", 1, {}, "", {}});
    all.sweeps.push_back(SweepSummary{"other-sweep-2", "/r/other-sweep-2", "other.yaml", 0, {}, "", {}});
    const ResultsStatus failed = filter_status(all, parse_run_query({{"failed"}, "", "", "", ""}, k_now));
    REQUIRE(failed.runs.size() == 1);
    CHECK(failed.runs[0].id == "b");
    REQUIRE(failed.sweeps.size() == 1);
    CHECK(failed.sweeps[0].id == "tiny-ddp-sweep-1");
    // With only a card filter, a sweep whose card matches stays though no run of it exists yet.
    const ResultsStatus other = filter_status(all, parse_run_query({{}, "other*", "", "", ""}, k_now));
    CHECK(other.runs.empty());
    REQUIRE(other.sweeps.size() == 1);
    CHECK(other.sweeps[0].id == "other-sweep-2");
    CHECK(describe_query({{"failed"}, "", "", "", ""}, 1, 2) == "1 of 2 runs match --state failed");
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
