#include "run/executor.hpp"
#include "run/run_record.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

TEST_CASE("the run record moves through its states and saves each one") {
    TempDir dir;
    RunRecord record;
    record.run_id = "r";
    record.transition(RunState::rendered, dir.path());
    record.transition(RunState::submitted, dir.path());
    record.transition(RunState::running, dir.path());
    record.transition(RunState::failed, dir.path(), "rank 1 ended with exit 3");
    const std::string saved = read_file(dir.path() / "run.json");
    CHECK(saved.find("\"state\": \"failed\"") != std::string::npos);
    CHECK(saved.find("rank 1 ended with exit 3") != std::string::npos);
    CHECK(record.transitions.size() == 4);
    CHECK_THROWS_AS(record.transition(RunState::completed, dir.path()), HarnessError);
}

TEST_CASE("time limits read as Slurm reads them") {
    CHECK(parse_time_limit("") == 0);
    CHECK(parse_time_limit("90") == 90 * 60);
    CHECK(parse_time_limit("00:00:03") == 3);
    CHECK(parse_time_limit("01:30:00") == 5400);
    CHECK(parse_time_limit("1-00:00:00") == 86400);
    CHECK(parse_time_limit("2-12:00") == 2 * 86400 + 12 * 3600);
}

TEST_CASE("tail_lines keeps the end of a log") {
    TempDir dir;
    const auto file = dir.write("log", "a\nb\nc\nd\n");
    CHECK(tail_lines(file, 2) == "c\nd");
    CHECK(tail_lines(file, 10) == "a\nb\nc\nd");
    CHECK(tail_lines(dir.path() / "absent", 3).empty());
}

TEST_CASE("a saved run record loads back as it was", "[resolve]") {
    TempDir dir;
    RunRecord record;
    record.run_id = "tiny-20261124T000000Z-abcdef";
    record.card = "tiny";
    record.target = "local";
    record.executor = "local";
    record.job_ids = {"42"};
    record.ranks.push_back(RankOutcome{0, 0, 0, "logs/rank0.log", 1.5});
    record.ranks.push_back(RankOutcome{1, std::nullopt, 9, "logs/rank1.log", 2});
    record.traces = {"kineto_trace_0.json"};
    record.scheduler["master_port"] = 29500;
    record.detached_job = "42";
    record.claim();
    record.transition(RunState::rendered, dir.path());
    record.transition(RunState::failed, dir.path(), "rank 1 killed by signal 9");
    const RunRecord loaded = RunRecord::load(dir.path());
    CHECK(loaded.to_json().dump() == record.to_json().dump());
    CHECK(loaded.state == RunState::failed);
    CHECK_FALSE(loaded.ranks[1].exit_code.has_value());
}

TEST_CASE("a run record that cannot be read says why", "[resolve]") {
    TempDir dir;
    CHECK_THROWS_WITH(RunRecord::load(dir.path()), Catch::StartsWith("run.json: "));
    dir.write("run.json", "{not json");
    CHECK_THROWS_WITH(RunRecord::load(dir.path()), Catch::StartsWith("run.json: "));
    dir.write("run.json", "[1]");
    CHECK_THROWS_WITH(RunRecord::load(dir.path()), "run.json: not a JSON object");
    dir.write("run.json", R"({"state": "exploded"})");
    CHECK_THROWS_WITH(RunRecord::load(dir.path()), "run.json: state: unknown state \"exploded\"");
    dir.write("run.json", R"({"job_ids": [7]})");
    CHECK_THROWS_WITH(RunRecord::load(dir.path()), "run.json: job_ids: expected an array of strings");
    // An older harness wrote fewer fields: what is absent keeps its default.
    dir.write("run.json", R"({"run_id": "r", "state": "completed"})");
    const RunRecord old = RunRecord::load(dir.path());
    CHECK(old.run_id == "r");
    CHECK(old.state == RunState::completed);
    CHECK(old.ranks.empty());
}
