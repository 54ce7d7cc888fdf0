#include "card/card.hpp"
#include "card/schema.hpp"
#include "card_fixture.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::card_with;
using harness::test::k_card;

namespace {

WorkloadCard parse(const std::string& text) { return WorkloadCard::from_document(YamlDocument::parse(text, "card.yaml")); }

bool has(const Diagnostics& diagnostics, Severity severity, const std::string& text) {
    for (const auto& d : diagnostics.items()) {
        if (d.severity == severity && d.text().find(text) != std::string::npos) {
            return true;
        }
    }
    return false;
}

} // namespace

TEST_CASE("a complete card is valid and read field by field") {
    const WorkloadCard card = parse(k_card);
    INFO(card.diagnostics().format());
    CHECK(card.diagnostics().items().empty());
    CHECK(card.phase == "training");
    CHECK(card.framework == "torchtitan");
    CHECK(card.total_count == 16);
    CHECK(card.parallelism.tp == 4);
    CHECK(card.parallelism.dp_shard == 4);
    CHECK(card.comm_env == std::vector<std::pair<std::string, std::string>>{{"NCCL_DEBUG", "INFO"}});
    CHECK(card.launch.account == "m4999");
    CHECK(card.traces == std::vector<std::string>{"json"});
}

TEST_CASE("a wrong type reports file, line, column, field and what was expected") {
    const WorkloadCard card = parse(card_with("    tp: 4", "    tp: four"));
    CHECK(card.diagnostics().error_count() == 1);
    CHECK(card.diagnostics().items().at(0).text() ==
          "card.yaml:37:9: Model-executor.model_plan_parallelization.tp: expected a positive integer, got \"four\"");
}

TEST_CASE("unknown keys warn with a suggestion") {
    const WorkloadCard card = parse(card_with("    dp_shard: 4", "    dp_shrad: 4"));
    CHECK(has(card.diagnostics(), Severity::warning,
              "card.yaml:36:5: Model-executor.model_plan_parallelization.dp_shrad: unknown key, ignored; did you mean \"dp_shard\"?"));
    CHECK(has(card.diagnostics(), Severity::error, "Model-executor.model_plan_parallelization.dp_shard: required field is missing"));
}

TEST_CASE("a section indented under the wrong parent is read where it belongs, with a warning at its line") {
    std::string text = k_card;
    // Indent the whole Model-executor block under workload:, as real rejected cards do.
    const auto start = text.find("Model-executor:");
    const auto end = text.find("metric_source:");
    std::string block = text.substr(start, end - start);
    std::string indented;
    for (const auto& line : split(block, '\n')) {
        indented += line.empty() ? "" : "  " + line + "\n";
    }
    text = text.substr(0, start) + indented + text.substr(end);
    const WorkloadCard card = parse(text);
    INFO(card.diagnostics().format());
    CHECK(has(card.diagnostics(), Severity::warning,
              "workload.Model-executor: section \"Model-executor\" is nested under workload; read as the top-level section"));
    CHECK_FALSE(card.diagnostics().has_errors());
    CHECK(card.framework == parse(k_card).framework);
    CHECK(card.parallelism.tp == parse(k_card).parallelism.tp);
    SECTION("nested deeper still, or claimed twice, it is an error as before") {
        std::string twice = text;
        twice.insert(twice.find("metric_source:"), "launch:\n  Model-executor:\n    framework:\n      name: x\n");
        CHECK(has(parse(twice).diagnostics(), Severity::error, "is nested under"));
    }
}

TEST_CASE("invalid YAML is an input error with its position") {
    try {
        parse("version: 1\nworkload:\n  model: [unclosed\n");
        FAIL("expected an error");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        CHECK(std::string(e.what()).rfind("card.yaml:", 0) == 0);
        CHECK(std::string(e.what()).find("invalid YAML") != std::string::npos);
    }
}

TEST_CASE("an empty or non-mapping card is an error, not a crash") {
    CHECK(parse("").diagnostics().has_errors());
    CHECK(parse("- a\n- b\n").diagnostics().has_errors());
    CHECK(parse("just a string").diagnostics().has_errors());
}

TEST_CASE("duplicate keys are errors") {
    const WorkloadCard card = parse(card_with("    tp: 4", "    tp: 4\n    tp: 8"));
    CHECK(has(card.diagnostics(), Severity::error, "Model-executor.model_plan_parallelization.tp: duplicate key"));
}

TEST_CASE("bandwidth must be [scale_out, scale_up]") {
    SECTION("one entry warns") {
        const WorkloadCard card = parse(card_with("[200, 2400]", "[600]"));
        CHECK(!card.diagnostics().has_errors());
        CHECK(has(card.diagnostics(), Severity::warning, "expected [scale_out, scale_up] in Gbps, got 1 entry"));
    }
    SECTION("N/A is accepted") { CHECK(parse(card_with("[200, 2400]", "[N/A, 800]")).diagnostics().items().empty()); }
    SECTION("words are errors") {
        CHECK(has(parse(card_with("[200, 2400]", "[fast, 800]")).diagnostics(), Severity::error,
                  "bandwidth_gbps[0]: expected a bandwidth in Gbps or \"N/A\", got \"fast\""));
    }
}

TEST_CASE("phase and version are checked against their values") {
    CHECK(has(parse(card_with("phase: training", "phase: trainig")).diagnostics(), Severity::error, "did you mean \"training\"?"));
    CHECK(has(parse(card_with("version: 1", "version: 2")).diagnostics(), Severity::error, "version: expected one of 1"));
}

TEST_CASE("env keys must be identifiers") {
    const WorkloadCard card = parse(card_with("NCCL_DEBUG: INFO", "\"NCCL DEBUG; rm\": INFO"));
    CHECK(has(card.diagnostics(), Severity::error, "expected an environment variable name"));
}

TEST_CASE("--set overrides a field and errors point at the flag") {
    YamlDocument doc = YamlDocument::parse(k_card, "card.yaml");
    doc.set("Model-executor.model_plan_parallelization.tp=four");
    doc.set("launch.steps=30");
    const WorkloadCard card = WorkloadCard::from_document(doc);
    CHECK(has(card.diagnostics(), Severity::error,
              "--set Model-executor.model_plan_parallelization.tp=four: Model-executor.model_plan_parallelization.tp: expected a "
              "positive integer"));
    YamlDocument ok = YamlDocument::parse(k_card, "card.yaml");
    ok.set("launch.steps=30");
    ok.set("launch.env.NEW_VAR=1");
    const WorkloadCard changed = WorkloadCard::from_document(ok);
    CHECK(changed.launch.steps == 30);
    CHECK(changed.launch.env.at(0).first == "NEW_VAR");
}

TEST_CASE("malformed --set assignments are input errors") {
    YamlDocument doc = YamlDocument::parse(k_card, "card.yaml");
    CHECK_THROWS_AS(doc.set("no-equals-sign"), HarnessError);
    CHECK_THROWS_AS(doc.set("=value"), HarnessError);
    CHECK_THROWS_AS(doc.set("a..b=1"), HarnessError);
    CHECK_THROWS_AS(doc.set("description.x=1"), HarnessError); // description is a string
    CHECK_THROWS_AS(doc.set("launch.steps=[unclosed"), HarnessError);
}

TEST_CASE("a bad time limit is an error") {
    const WorkloadCard card = parse(std::string(k_card) + "  time_limit: soon\n");
    CHECK(has(card.diagnostics(), Severity::error, "launch.time_limit: expected minutes, HH:MM:SS or D-HH:MM:SS"));
}

TEST_CASE("--set paths are checked against the card's field table") {
    const auto& spec = card_schema();
    SECTION("known fields and sections") {
        CHECK(unknown_field_reason(spec, "launch.steps").empty());
        CHECK(unknown_field_reason(spec, "launch").empty());
        CHECK(unknown_field_reason(spec, "Model-executor.model_plan_parallelization.tp").empty());
        CHECK(unknown_field_reason(spec, "workload.data.max-num-seqs").empty());
        CHECK(unknown_field_reason(spec, "workload.model.num_layers").empty()); // its old place, read with a warning
    }
    SECTION("any key of an env block, anything below a free-form field") {
        CHECK(unknown_field_reason(spec, "launch.env.NCCL_DEBUG").empty());
        CHECK(unknown_field_reason(spec, "Model-executor.communication_library.env.ANYTHING").empty());
        CHECK(unknown_field_reason(spec, "collection_notes.a.b.c").empty());
        CHECK(unknown_field_reason(spec, "Model-executor.serving.port").empty());
    }
    SECTION("a misspelt leaf gets the whole corrected path") {
        CHECK(unknown_field_reason(spec, "launch.stepz") == "unknown field \"launch.stepz\"; did you mean \"launch.steps\"?");
        CHECK(unknown_field_reason(spec, "workload.data.batchsize") ==
              "unknown field \"workload.data.batchsize\"; did you mean \"workload.data.batch_size\"?");
    }
    SECTION("a misspelt section is corrected with the rest of the path, when the rest is right") {
        CHECK(unknown_field_reason(spec, "lauch.steps") == "unknown field \"lauch.steps\"; did you mean \"launch.steps\"?");
        CHECK(unknown_field_reason(spec, "lauch.stepz") == "unknown field \"lauch.stepz\"; did you mean \"launch.steps\"?");
        CHECK(unknown_field_reason(spec, "lauch.zzzzzzzzzz") == "unknown field \"lauch.zzzzzzzzzz\"; did you mean \"launch\"?");
    }
    SECTION("no close match lists the fields that exist there") {
        const std::string reason = unknown_field_reason(spec, "launch.container.zzzzzzzz");
        CHECK(reason == "unknown field \"launch.container.zzzzzzzz\"; \"launch.container\" has: image, runtime, cuda");
        CHECK(starts_with(unknown_field_reason(spec, "zzzzzzzzzzzz"), "unknown field \"zzzzzzzzzzzz\"; the top level has: version, "));
    }
    SECTION("nothing lives below a value, or below an env variable") {
        CHECK(unknown_field_reason(spec, "launch.steps.count") ==
              "unknown field \"launch.steps.count\": \"launch.steps\" holds a value, not fields");
        CHECK(unknown_field_reason(spec, "launch.env.A.B") ==
              "unknown field \"launch.env.A.B\": \"launch.env.A\" holds a single value");
    }
    SECTION("a top-level section is unknown deeper down") { CHECK_FALSE(unknown_field_reason(spec, "workload.launch.steps").empty()); }
    SECTION("malformed paths are left to YamlDocument::set") { CHECK(unknown_field_reason(spec, "launch..steps").empty()); }
}

TEST_CASE("check_card_paths throws an input error naming the flag and the assignment") {
    CHECK_NOTHROW(check_card_paths({"launch.steps=3", "launch.env.X=1", "no-equals-sign"}, "--set"));
    try {
        check_card_paths({"launch.steps=3", "launch.stepz=3"}, "--set");
        FAIL("no error");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        CHECK(std::string(e.what()) == "--set launch.stepz=3: unknown field \"launch.stepz\"; did you mean \"launch.steps\"?");
    }
    CHECK_THROWS_WITH(check_card_paths({"workload.data.batchsize=8,16"}, "--vary"),
                      Catch::StartsWith("--vary workload.data.batchsize=8,16: unknown field"));
}
