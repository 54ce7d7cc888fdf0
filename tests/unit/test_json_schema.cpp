#include "card/card.hpp"
#include "card/cluster.hpp"
#include "card/json_schema.hpp"
#include "card/schema.hpp"
#include "util/json.hpp"

#include <catch2/catch.hpp>

using namespace harness;

namespace {

/// The schema of a field's value: through a required field's allOf or an optional one's anyOf.
const Json* value_of(const Json& field) {
    if (const Json* all = field.find("allOf")) {
        return &all->as_array().front();
    }
    if (const Json* any = field.find("anyOf")) {
        return &any->as_array().back();
    }
    return nullptr;
}

/// Every field of the table has a property in the schema, at the same place, described.
void expect_fields(const Json& object, const std::vector<FieldSpec>& spec, const std::string& path) {
    const Json* properties = object.find("properties");
    REQUIRE(properties != nullptr);
    for (const auto& field : spec) {
        const std::string child = path.empty() ? field.key : path + "." + field.key;
        INFO(child);
        const Json* property = properties->find(field.key);
        REQUIRE(property != nullptr);
        if (!field.description.empty()) {
            CHECK(property->string_or("description") == field.description);
        }
        if (field.kind == ValueKind::map) {
            const Json* value = value_of(*property);
            REQUIRE(value != nullptr);
            expect_fields(*value, field.children, child);
        }
    }
}

std::vector<std::string> strings_of(const Json* array) {
    std::vector<std::string> out;
    if (array != nullptr) {
        for (const auto& item : array->as_array()) {
            out.push_back(item.as_string());
        }
    }
    return out;
}

} // namespace

TEST_CASE("the card schema is draft-07 JSON, the same bytes every time, fields in table order") {
    const std::string text = card_json_schema();
    CHECK(text == card_json_schema());
    CHECK(text.back() == '\n');
    const Json schema = Json::parse(text);
    CHECK(schema.string_or("$schema") == "http://json-schema.org/draft-07/schema#");
    // Property members are objects ("key": {); the root's own "description" is text.
    CHECK(text.find("\"version\": {") < text.find("\"description\": {"));
    CHECK(text.find("\"workload\": {") < text.find("\"Model-executor\": {"));
    CHECK(text.find("\"Model-executor\": {") < text.find("\"launch\": {"));
    CHECK(strings_of(schema.find("required")) == std::vector<std::string>{"version", "workload"});
}

TEST_CASE("every card field appears in the schema where the table puts it") {
    const Json schema = Json::parse(card_json_schema());
    expect_fields(schema, card_schema(), "");
    const Json cluster = Json::parse(cluster_json_schema());
    expect_fields(cluster, cluster_schema(), "");
}

TEST_CASE("required fields, env keys, moved fields and misplaced sections are expressed") {
    const Json schema = Json::parse(card_json_schema());
    const Json& properties = *schema.find("properties");
    const Json& executor = *value_of(*properties.find("Model-executor"));
    const Json& parallel = *value_of(*executor.find("properties")->find("model_plan_parallelization"));
    CHECK(strings_of(parallel.find("required")) == std::vector<std::string>{"dp_replicate", "dp_shard", "tp", "pp", "cp"});
    CHECK(value_of(*parallel.find("properties")->find("tp"))->string_or("$ref") == "#/definitions/positive_int");

    SECTION("env blocks take identifiers as keys and single values") {
        const Json& library = *value_of(*executor.find("properties")->find("communication_library"));
        const Json& env = *value_of(*library.find("properties")->find("env"));
        CHECK(env.find("propertyNames")->string_or("pattern") == "^[A-Za-z_][A-Za-z0-9_]*$");
        CHECK(env.find("additionalProperties") != nullptr);
    }
    SECTION("a field in its old place is accepted with an editor warning") {
        const Json& model = *value_of(*value_of(*properties.find("workload"))->find("properties")->find("model"));
        const Json& moved = *model.find("properties")->find("num_layers");
        CHECK(moved.string_or("deprecationMessage") == "belongs under workload.model.model_arch; read from here");
    }
    SECTION("a top-level section nested deeper is rejected, or read with a warning where the loader lifts it") {
        const Json& workload = *value_of(*properties.find("workload"));
        const Json* lifted = workload.find("properties")->find("Model-executor");
        REQUIRE(lifted != nullptr);
        CHECK(lifted->find("not") == nullptr);
        CHECK(lifted->find("deprecationMessage") != nullptr);
        const Json* misplaced = workload.find("properties")->find("metric_source");
        REQUIRE(misplaced != nullptr);
        CHECK(misplaced->find("not") != nullptr);
        CHECK(properties.find("Model-executor")->find("not") == nullptr);
    }
    SECTION("an unknown key in the harness's launch: section is an error, in its subsections too") {
        const Json& launch = *value_of(*properties.find("launch"));
        CHECK(launch.find("additionalProperties")->find("not") != nullptr);
        const Json& container = *value_of(*launch.find("properties")->find("container"));
        CHECK(container.find("additionalProperties")->find("not") != nullptr);
    }
    SECTION("unknown keys stay valid: a warning for editors, not an error") {
        CHECK(schema.find("additionalProperties")->find("deprecationMessage") != nullptr);
        CHECK(schema.find("additionalProperties")->find("not") == nullptr);
    }
    SECTION("strict choices are matched in any case, loose ones only suggested") {
        const Json& model = *value_of(*value_of(*properties.find("workload"))->find("properties")->find("model"));
        const Json& phase = *value_of(*model.find("properties")->find("phase"));
        const std::string dumped = phase.dump(false);
        CHECK(dumped.find("[tT][rR][aA][iI][nN][iI][nN][gG]") != std::string::npos);
        const Json& precision = *model.find("properties")->find("precision");
        CHECK(precision.find("examples") != nullptr);
        CHECK(value_of(precision)->string_or("$ref") == "#/definitions/scalar");
    }
}

TEST_CASE("a required section may not be empty, an optional one may") {
    const Json schema = Json::parse(card_json_schema());
    const Json& properties = *schema.find("properties");
    CHECK(properties.find("workload")->find("allOf")->as_array().front().find("minProperties") != nullptr);
    CHECK(properties.find("launch")->find("anyOf")->as_array().front().string_or("$ref") == "#/definitions/empty");
}
