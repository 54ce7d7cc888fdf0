#include "test_context.hpp"
#include "util/fs.hpp"
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

namespace {

RenderedRun rendered(std::vector<RenderedFile> files) {
    RenderedRun run;
    run.files = std::move(files);
    return run;
}

} // namespace

TEST_CASE("compare_scripts tells apart content, the executable bit and files on one side only", "[reproduce]") {
    const test::TempDir dir;
    const fs::path scripts = dir.path() / "scripts";
    fs::create_directories(scripts / "sub");
    write_file_atomic(scripts / "launch.sh", "#!/bin/bash\necho 1\n", true);
    write_file_atomic(scripts / "plan.json", "{}\n");
    write_file_atomic(scripts / "sub" / "old.txt", "x\n");

    SECTION("the same files, bytes and modes: identical") {
        const RenderedRun same = rendered(
            {{"launch.sh", "#!/bin/bash\necho 1\n", true}, {"plan.json", "{}\n", false}, {"sub/old.txt", "x\n", false}});
        CHECK(compare_scripts(scripts, same).identical());
    }
    SECTION("each way of differing is named") {
        const RenderedRun changed = rendered({{"launch.sh", "#!/bin/bash\necho 1\n", false}, // lost its executable bit
                                              {"new.txt", "y\n", false},
                                              {"plan.json", "{\"a\": 1}\n", false}});
        const ScriptComparison comparison = compare_scripts(scripts, changed);
        CHECK_FALSE(comparison.identical());
        CHECK(comparison.differing == std::vector<std::string>{"launch.sh", "plan.json"});
        CHECK(comparison.only_rendered == std::vector<std::string>{"new.txt"});
        CHECK(comparison.only_in_bundle == std::vector<std::string>{"sub/old.txt"});
    }
}

TEST_CASE("scripts_diff shows stable names, never the scratch paths or file times", "[reproduce]") {
    const test::TempDir dir;
    const fs::path scripts = dir.path() / "scripts";
    fs::create_directories(scripts);
    write_file_atomic(scripts / "launch.sh", "line 1\nline 2\n", true);
    const std::string diff = scripts_diff(scripts, rendered({{"launch.sh", "line 1\nline two\n", true}}), dir.path() / "scratch");
    CHECK(diff.find("--- bundle/scripts/launch.sh\n") != std::string::npos);
    CHECK(diff.find("+++ rendered/launch.sh\n") != std::string::npos);
    CHECK(diff.find("-line 2\n+line two\n") != std::string::npos);
    CHECK(diff.find(dir.path().string()) == std::string::npos);
    CHECK(diff.find('\t') == std::string::npos);
    // Identical trees: an empty diff.
    CHECK(scripts_diff(scripts, rendered({{"launch.sh", "line 1\nline 2\n", true}}), dir.path() / "scratch").empty());
}
