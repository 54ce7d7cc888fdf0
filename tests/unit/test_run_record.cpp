#include "executor.hpp"
#include "run_record.hpp"
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
