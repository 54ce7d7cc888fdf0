#include "workflows/reproduce.hpp"

#include <catch2/catch.hpp>

using namespace harness;

TEST_CASE("a reproduction's outcome as JSON: the comparison, and the new run when it ran", "[reproduce]") {
    ReproduceOutcome outcome;
    outcome.bundle = "b.tar.zst";
    outcome.name = "b";
    outcome.valid = true;
    outcome.original_cluster = "local";
    outcome.target = "local";
    SECTION("scripts differ: the files and the diff, no run") {
        outcome.scripts_compared = true;
        outcome.comparison.differing = {"launch.sh"};
        outcome.diff = "--- bundle/scripts/launch.sh\n";
        outcome.error = "the templates changed";
        outcome.exit_code = 1;
        const Json json = reproduce_outcome_to_json(outcome);
        CHECK(json.find("scripts")->find("identical")->as_bool() == false);
        CHECK(json.find("scripts")->find("differing")->as_array().front().as_string() == "launch.sh");
        CHECK(json.find("run")->is_null());
        CHECK(json.string_or("error") == "the templates changed");
    }
    SECTION("another cluster: not compared") {
        outcome.target = "slurm-local";
        CHECK(reproduce_outcome_to_json(outcome).find("scripts")->is_null());
    }
    SECTION("ran: the run's own outcome") {
        outcome.run = RunOutcome{};
        outcome.run->run_id = "b2";
        outcome.run->state = RunState::completed;
        const Json json = reproduce_outcome_to_json(outcome);
        CHECK(json.find("run")->string_or("run_id") == "b2");
        CHECK(json.find("error")->is_null());
    }
    SECTION("an invalid bundle lists its problems") {
        outcome.valid = false;
        outcome.problems = {{"manifest.json", "missing"}};
        CHECK(reproduce_outcome_to_json(outcome).find("problems")->as_array().front().string_or("message") == "missing");
    }
}
