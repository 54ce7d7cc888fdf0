#include "workflows/run_workload.hpp"

#include <catch2/catch.hpp>

using namespace harness;

namespace {

RunOutcome completed_run() {
    RunOutcome outcome;
    outcome.card = "tiny-ddp";
    outcome.target = "local";
    outcome.run_id = "tiny-ddp-20261123T101500Z-1a2b3c";
    outcome.run_dir = "/r/tiny-ddp-20261123T101500Z-1a2b3c";
    outcome.state = RunState::completed;
    outcome.traces = {outcome.run_dir / "traces" / "kineto_trace_0.json", outcome.run_dir / "traces" / "kineto_trace_1.json"};
    outcome.bundle = PackedBundle{"/r/tiny-ddp-20261123T101500Z-1a2b3c.tar.zst", std::string(64, 'a'), 12};
    return outcome;
}

} // namespace

TEST_CASE("a run outcome as JSON has every key, null where nothing applies", "[run]") {
    SECTION("completed and packed") {
        const Json json = run_outcome_to_json(completed_run());
        CHECK(json.string_or("state") == "completed");
        CHECK(json.string_or("run_dir") == "/r/tiny-ddp-20261123T101500Z-1a2b3c");
        CHECK(json.find("exit_code")->as_int() == 0);
        CHECK(json.find("traces")->as_array().size() == 2);
        CHECK(json.find("bundle")->find("files")->as_int() == 12);
        CHECK(json.find("bundle")->string_or("sha256") == std::string(64, 'a'));
        CHECK(json.find("dry_run")->as_bool() == false);
        CHECK(json.find("preview")->is_null());
        CHECK(json.find("pack_error")->is_null());
    }
    SECTION("failed: no bundle, the reason") {
        RunOutcome outcome = completed_run();
        outcome.state = RunState::failed;
        outcome.reason = "rank_1 ended with exit 3";
        outcome.exit_code = 1;
        outcome.bundle.reset();
        const Json json = run_outcome_to_json(outcome);
        CHECK(json.string_or("state") == "failed");
        CHECK(json.find("bundle")->is_null());
        CHECK(json.string_or("reason") == "rank_1 ended with exit 3");
        CHECK_THAT(format_run_outcome(outcome), Catch::Contains("failed: rank_1 ended with exit 3"));
        CHECK_THAT(format_run_outcome(outcome), !Catch::Contains("bundle:"));
    }
    SECTION("a dry run: no run, a preview") {
        RunOutcome outcome;
        outcome.card = "tiny-ddp";
        outcome.target = "local";
        outcome.dry_run = DryRunPreview{
            "2 local ranks: bash launch.sh", "/r/<run-id>/rendered", "/r", 1, 2, 12, {"kineto"}, {}, {}, {}, {}, {}};
        const Json json = run_outcome_to_json(outcome);
        CHECK(json.find("run_dir")->is_null());
        CHECK(json.find("state")->is_null());
        CHECK(json.find("dry_run")->as_bool());
        CHECK(json.find("preview")->find("ranks_per_node")->as_int() == 2);
        CHECK_THAT(format_run_outcome(outcome), Catch::Contains("would submit: 2 local ranks"));
        CHECK(json.find("preview")->find("preflight")->is_null());
        CHECK_THAT(format_run_outcome(outcome), !Catch::Contains("preflight"));
        outcome.dry_run->preflight = "passed in localhost/ccl-sglang:0123:\npreflight: sglang 0.5.17: 14 options";
        CHECK(run_outcome_to_json(outcome).find("preview")->find("preflight")->as_string() == outcome.dry_run->preflight);
        CHECK_THAT(format_run_outcome(outcome), Catch::Contains("preflight: passed in localhost/ccl-sglang:0123:"));
    }
}

TEST_CASE("the run summary names the run directory, traces and bundle", "[run]") {
    const std::string text = format_run_outcome(completed_run());
    CHECK_THAT(text, Catch::StartsWith("run tiny-ddp-20261123T101500Z-1a2b3c completed\n"));
    CHECK_THAT(text, Catch::Contains("  run directory: /r/tiny-ddp-20261123T101500Z-1a2b3c\n"));
    CHECK_THAT(text, Catch::Contains("  traces: kineto_trace_0.json, kineto_trace_1.json\n"));
    CHECK_THAT(text, Catch::Contains("  bundle: /r/tiny-ddp-20261123T101500Z-1a2b3c.tar.zst (12 files, sha256 aaaa"));
}
