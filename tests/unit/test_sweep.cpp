#include "run/run_directory.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/safe_name.hpp"
#include "workflows/run_status.hpp"
#include "workflows/sweep.hpp"

#include <catch2/catch.hpp>
#include <regex>

using namespace harness;
using harness::test::TempDir;

namespace {

int exit_code_of(const std::string& vary) {
    try {
        parse_vary(vary);
    } catch (const HarnessError& error) {
        return error.code();
    }
    return 0;
}

using Points = std::vector<std::vector<std::string>>;

} // namespace

TEST_CASE("--vary reads a field path and its values", "[sweep]") {
    const SweepAxis axis = parse_vary("launch.steps=10,12,14");
    CHECK(axis.path == "launch.steps");
    CHECK(axis.values == std::vector<std::string>{"10", "12", "14"});
    CHECK(parse_vary("workload.data.dataset=synthetic").values.size() == 1);
}

TEST_CASE("bad --vary syntax is an input error", "[sweep]") {
    SECTION("no '='") { CHECK(exit_code_of("launch.steps") == k_exit_usage); }
    SECTION("empty path") { CHECK(exit_code_of("=1,2") == k_exit_usage); }
    SECTION("no values") { CHECK(exit_code_of("launch.steps=") == k_exit_usage); }
    SECTION("empty value in the middle") { CHECK(exit_code_of("launch.steps=1,,2") == k_exit_usage); }
    SECTION("trailing comma") { CHECK(exit_code_of("launch.steps=1,2,") == k_exit_usage); }
    SECTION("blank value") { CHECK(exit_code_of("launch.steps=1, ") == k_exit_usage); }
    SECTION("the message names the argument") {
        CHECK_THROWS_WITH(parse_vary("launch.steps=1,,2"), Catch::Contains("launch.steps=1,,2"));
    }
}

TEST_CASE("the matrix is the cross product, first axis slowest", "[sweep]") {
    const Points points = expand_matrix({{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}}, false);
    REQUIRE(points.size() == 6);
    CHECK(points[0] == std::vector<std::string>{"a=1", "b=x"});
    CHECK(points[2] == std::vector<std::string>{"a=1", "b=z"});
    CHECK(points[5] == std::vector<std::string>{"a=2", "b=z"});
    CHECK(expand_matrix({{"a", {"1"}}}, false) == Points{{"a=1"}});
}

TEST_CASE("--zip pairs the i-th values", "[sweep]") {
    const Points points = expand_matrix({{"a", {"1", "2"}}, {"b", {"x", "y"}}}, true);
    CHECK(points == Points{{"a=1", "b=x"}, {"a=2", "b=y"}});
}

TEST_CASE("matrix errors are input errors", "[sweep]") {
    SECTION("unequal lists with --zip") {
        CHECK_THROWS_WITH(expand_matrix({{"a", {"1", "2"}}, {"b", {"x"}}}, true), Catch::Contains("equally long"));
    }
    SECTION("unequal lists are fine crossed") { CHECK(expand_matrix({{"a", {"1", "2"}}, {"b", {"x"}}}, false).size() == 2); }
    SECTION("no axes") { CHECK_THROWS_AS(expand_matrix({}, false), HarnessError); }
    SECTION("the same field twice") {
        CHECK_THROWS_WITH(expand_matrix({{"a", {"1"}}, {"a", {"2"}}}, false), Catch::Contains("twice"));
    }
    SECTION("an axis without values") { CHECK_THROWS_AS(expand_matrix({{"a", {}}}, false), HarnessError); }
}

TEST_CASE("sweep.json reads back what was written", "[sweep]") {
    TempDir dir;
    SweepRecord record;
    record.id = "sweep-x";
    record.card = "/cards/x.yaml";
    record.card_sha256 = "ab";
    record.axes = {{"a", {"1", "2"}}};
    record.points.push_back({{"a=1"}, PointState::completed, "", "/r/1", "/r/1.tar.zst", 0, "916_0", "COMPLETED", false});
    record.points.push_back({{"a=2"}, PointState::skipped, "tp: too big", "", "", std::nullopt, "", "", false});
    record.points.push_back({{"a=3"}, PointState::completed, "", "/old/r/3", "/old/r/3.tar.zst", 0, "", "", true});
    record.save(dir.path());
    const SweepRecord back = SweepRecord::load(dir.path());
    CHECK(back.to_json().dump() == record.to_json().dump());
    CHECK(back.points[1].state == PointState::skipped);
    CHECK(!back.points[1].exit_code);
    CHECK(back.points[0].job_id == "916_0"); // a Slurm array task, for --resume and status
    CHECK(back.points[0].slurm_state == "COMPLETED");
    CHECK(!back.points[0].reused);
    CHECK(back.points[2].reused); // sweep --reuse: an earlier run's result, nothing ran
}

TEST_CASE("a sweep.json written before --reuse reads as nothing reused", "[sweep]") {
    TempDir dir;
    dir.write("sweep.json", R"({"id": "sweep-x", "card": "/c.yaml", "points": [
        {"overrides": ["a=1"], "state": "completed", "reason": "", "run_dir": "/r/1", "bundle": "/r/1.tar.zst",
         "exit_code": 0, "job_id": "", "slurm_state": ""},
        {"overrides": ["a=2"], "state": "completed", "reused": "yes"}]})");
    const SweepRecord back = SweepRecord::load(dir.path());
    CHECK(!back.points[0].reused);
    CHECK(!back.points[1].reused); // not a boolean: not a claim that nothing ran
}

TEST_CASE("a damaged sweep.json is an input error naming the file", "[sweep]") {
    TempDir dir;
    SECTION("not JSON") {
        dir.write("sweep.json", "{ nope");
        CHECK_THROWS_WITH(SweepRecord::load(dir.path()), Catch::Contains("sweep.json"));
    }
    SECTION("unknown state") {
        dir.write("sweep.json", R"({"id": "s", "card": "c", "points": [{"overrides": [], "state": "exploded"}]})");
        CHECK_THROWS_WITH(SweepRecord::load(dir.path()), Catch::Contains("exploded"));
    }
    SECTION("missing") { CHECK_THROWS_WITH(SweepRecord::load(dir.path()), Catch::Contains("not a sweep directory")); }
}

TEST_CASE("status reads run and sweep records and survives damaged ones", "[sweep]") {
    TempDir dir;
    dir.write("r1/run.json", R"({"state": "completed", "card": "tiny", "target": "local", "transitions": [
        {"state": "rendered", "time": "2026-11-23T10:00:00Z"}, {"state": "completed", "time": "2026-11-23T10:00:07Z"}]})");
    dir.write("r1/metrics.json", R"({"metrics": {"avg_step_time": {"value": 0.5}, "compute_comm_overlap": {"value": null}}})");
    dir.write("r1.tar.zst", "x");
    dir.write("r2/run.json", "not json");
    dir.write("sweep-a/sweep.json", R"({"id": "sweep-a", "card": "/c/tiny.yaml", "points": [
        {"overrides": ["a=1"], "state": "completed"}, {"overrides": ["a=2"], "state": "skipped"}]})");
    dir.write("sweep-a/r3/run.json",
              R"({"state": "running", "transitions": [{"state": "rendered", "time": "2026-11-23T11:00:00Z"}]})");
    dir.write("unrelated/file.txt", "");
    const ResultsStatus status = scan_results(dir.path());
    REQUIRE(status.runs.size() == 3);
    REQUIRE(status.sweeps.size() == 1);
    const RunSummary& r1 = status.runs[1];
    CHECK(r1.id == "r1");
    CHECK(r1.duration_s == Approx(7));
    CHECK(r1.avg_step_time == Approx(0.5));
    CHECK(!r1.compute_comm_overlap);
    CHECK(!r1.bundle.empty());
    CHECK(status.runs[0].state == "unreadable");
    CHECK(status.runs[2].sweep == "sweep-a");
    CHECK(!status.runs[2].duration_s);
    CHECK(status.sweeps[0].states.at("skipped") == 1);
    const std::string table = format_status(status);
    CHECK(table.find("sweep-a/r3") != std::string::npos);
    CHECK(table.find("1 completed, 1 skipped") != std::string::npos);
    CHECK(status_to_json(status).find("runs")->as_array().size() == 3);
    CHECK_THROWS_AS(scan_results(dir.path() / "missing"), HarnessError);
}

TEST_CASE("times subtract as UTC", "[sweep]") {
    CHECK(seconds_between("2026-11-23T23:59:50Z", "2026-11-24T00:00:10Z") == Approx(20));
    CHECK(!seconds_between("yesterday", "2026-11-24T00:00:10Z"));
    CHECK(!seconds_between("2026-11-23T23:59:50Z", "2026-11-24T00:00:10Zjunk"));
}

TEST_CASE("a sweep's outcome carries the points as sweep.json writes them", "[sweep]") {
    SweepOutcome outcome;
    outcome.id = "sweep-x";
    outcome.sweep_dir = "/r/sweep-x";
    outcome.card = "/cards/x.yaml";
    outcome.points.push_back({{"a=1"}, PointState::completed, "", "/r/sweep-x/1", "/r/sweep-x/1.tar.zst", 0, "", ""});
    outcome.points.push_back({{"a=2"}, PointState::failed, "traces missing: rank 1", "/r/sweep-x/2", "", 1, "", ""});
    outcome.points.push_back({{"a=3"}, PointState::skipped, "tp: too big", "", "", std::nullopt, "", ""});
    outcome.exit_code = 1;
    SweepRecord record;
    record.points = outcome.points;

    const Json json = sweep_outcome_to_json(outcome);
    CHECK(json.find("points")->dump() == record.to_json().find("points")->dump());
    CHECK(json.string_or("sweep_dir") == "/r/sweep-x");
    CHECK(json.find("exit_code")->as_int() == 1);
    CHECK(json.find("points")->as_array()[2].find("exit_code")->is_null());

    const std::string text = format_sweep_outcome(outcome);
    CHECK_THAT(text, Catch::Contains("1 completed, 1 failed, 1 skipped, 0 cancelled, 0 not run"));
    CHECK_THAT(text, Catch::Contains("failed: a=2: traces missing: rank 1"));
    CHECK_THAT(text, !Catch::Contains("--resume"));
    SECTION("interrupted: the way to finish it") {
        outcome.interrupted = true;
        CHECK_THAT(format_sweep_outcome(outcome), Catch::Contains("ccl-harness sweep --resume /r/sweep-x"));
    }
    SECTION("a dry run wrote nothing") {
        SweepOutcome dry;
        dry.dry_run = true;
        dry.points = {outcome.points[2], {{"a=4"}, PointState::pending, "", "", "", std::nullopt, "", ""}};
        CHECK(sweep_outcome_to_json(dry).find("sweep_dir")->is_null());
        CHECK_THAT(format_sweep_outcome(dry), Catch::Contains("2 point(s), 1 to run, 1 skipped"));
    }
}

TEST_CASE("sweep points' run ids carry the varied values", "[sweep][run_id]") {
    CHECK(run_id_label({"workload.data.batch_size=16", "workload.data.seq_len=64"}) == "bs16-seq64");
    CHECK(run_id_label({"launch.script=train.py", "launch.steps=12"}) == "script_train.py-steps12");
    CHECK(run_id_label({}).empty());
    // Hostile values become safe pieces: no separators, no dot files, no control characters.
    CHECK(run_id_label({"launch.script=../../etc/passwd"}) == "script_etc_passwd");
    CHECK(run_id_label({"a.b=\x1b[2K x/y"}) == "b2K_x_y"); // the escape's digits lead, so no '_'
    CHECK(run_id_label({"x.=--"}).empty());
    // Bounded: each piece, and the whole label (later pieces left out, never cut in half).
    const std::string label = run_id_label({"p.name=" + std::string(100, 'v'), "p.a=1", "p.b=2", "p.c=3", "p.d=4"});
    CHECK(label == "name_vvvvvvvvvvvvvvv-a1-b2-c3-d4");
    std::vector<std::string> many;
    for (int i = 0; i < 40; ++i) {
        many.push_back("workload.data.batch_size=" + std::to_string(1000 + i));
    }
    CHECK(run_id_label(many).size() <= k_max_run_label_bytes);
    CHECK(run_id_label(many) == run_id_label(many));

    RenderedRun run;
    run.plan.card_name = "tiny-ddp";
    const std::string id = make_run_id(run, "bs16-seq64");
    CHECK(std::regex_match(id, std::regex("tiny-ddp-bs16-seq64-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")));
    CHECK(file_name_problem(id).empty());
    CHECK(make_run_id(run, "bs16") != make_run_id(run, "bs16")); // the instant and the process keep ids apart
    CHECK(std::regex_match(make_run_id(run), std::regex("tiny-ddp-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")));
    // A label that would make the id too long for a file name is left out, not cut.
    run.plan.card_name = std::string(220, 'c');
    CHECK(make_run_id(run, "bs16-seq64-abcdefghijklmnopqrstuvwxyz").find("bs16") == std::string::npos);
}
