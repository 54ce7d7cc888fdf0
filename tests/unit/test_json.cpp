#include "util/json.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>

using harness::Json;

TEST_CASE("Json::parse reads what dump writes", "[json]") {
    Json value = Json::object();
    value["name"] = "tiny \"ddp\"\n";
    value["count"] = 3;
    value["ratio"] = 0.5;
    value["ok"] = true;
    value["none"] = nullptr;
    value["list"] = harness::json_string_array({"a", "b"});
    const Json back = Json::parse(value.dump());
    CHECK(back.dump() == value.dump());
    CHECK(back.string_or("name") == "tiny \"ddp\"\n");
    CHECK(back.find("count")->as_int() == 3);
    CHECK(back.find("ratio")->as_double() == 0.5);
    CHECK(back.find("none")->is_null());
    CHECK(back.find("missing") == nullptr);
    CHECK(back.string_or("count", "fallback") == "fallback");
    CHECK(back.bool_or("ok"));
    CHECK_FALSE(back.bool_or("missing"));
    CHECK(back.bool_or("name", true)); // not a boolean: the fallback
}

TEST_CASE("Json::parse refuses malformed text", "[json]") {
    CHECK_THROWS_AS(Json::parse("{\"a\": "), std::runtime_error);
    CHECK_THROWS_AS(Json::parse(""), std::runtime_error);
    CHECK_THROWS_AS(Json::parse("[1,]"), std::runtime_error);
}
