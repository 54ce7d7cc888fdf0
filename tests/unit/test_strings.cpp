#include "util/strings.hpp"

#include <catch2/catch.hpp>

using namespace harness;

TEST_CASE("closest match suggests a near key and nothing for a far one") {
    const std::vector<std::string> keys = {"dp_replicate", "dp_shard", "tp", "pp", "cp", "ep", "pp_mb"};
    CHECK(closest_match("dp_shrad", keys) == "dp_shard");
    CHECK(closest_match("dp-replicate", keys) == "dp_replicate");
    CHECK(closest_match("completely_unrelated", keys).empty());
}

TEST_CASE("edit distance ignores case") {
    CHECK(edit_distance("Model-Executor", "Model-executor") == 0);
    CHECK(edit_distance("abc", "abd") == 1);
    CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("quoted escapes control characters for messages") {
    CHECK(enquote("four") == "\"four\"");
    CHECK(enquote("a\nb\"c") == "\"a\\nb\\\"c\"");
}

TEST_CASE("identifiers follow the POSIX environment name rule") {
    CHECK(is_identifier("NCCL_DEBUG"));
    CHECK(is_identifier("_x1"));
    CHECK_FALSE(is_identifier("1X"));
    CHECK_FALSE(is_identifier("A-B"));
    CHECK_FALSE(is_identifier("A B"));
    CHECK_FALSE(is_identifier("$(x)"));
    CHECK_FALSE(is_identifier(""));
}

TEST_CASE("split keeps empty fields") {
    CHECK(split("a..b", '.') == std::vector<std::string>{"a", "", "b"});
    CHECK(join({"a", "b"}, ", ") == "a, b");
    CHECK(trim("  x y \n") == "x y");
}
