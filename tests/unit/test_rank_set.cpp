#include "trace/rank_set.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace harness;

namespace {

/// The message of the input error parse_rank_list throws for `text`, or "" when it throws none.
std::string refusal(const std::string& text, long long world = 4) {
    try {
        parse_rank_list(text, world, "--ranks");
    } catch (const HarnessError& error) {
        CHECK(error.code() == k_exit_usage);
        return error.what();
    }
    return "";
}

} // namespace

TEST_CASE("a rank list reads single ranks, ranges and both, sorted and each once") {
    using Ranks = std::vector<long long>;
    CHECK(parse_rank_list("0", 4, "--ranks") == Ranks{0});
    CHECK(parse_rank_list("0,2", 4, "--ranks") == Ranks{0, 2});
    CHECK(parse_rank_list("0-3", 4, "--ranks") == Ranks{0, 1, 2, 3});
    CHECK(parse_rank_list("5,0-2", 8, "--ranks") == Ranks{0, 1, 2, 5});
    CHECK(parse_rank_list(" 2 , 0 - 1 ", 4, "--ranks") == Ranks{0, 1, 2});
    CHECK(parse_rank_list("1,1,0-1", 4, "--ranks") == Ranks{0, 1});
    CHECK(parse_rank_list("3-3", 4, "--ranks") == Ranks{3});
}

TEST_CASE("a rank list that names no ranks of the card is refused, naming the item") {
    SECTION("a rank at or past total_count") {
        CHECK(refusal("5") == "--ranks \"5\": rank 5, but the card's total_count is 4 (ranks 0-3)");
        CHECK(refusal("0-4").find("rank 4, but the card's total_count is 4") != std::string::npos);
        CHECK(refusal("1", 1).find("total_count is 1 (ranks 0-0)") != std::string::npos);
    }
    SECTION("not a number") {
        CHECK(refusal("abc") == "--ranks \"abc\": \"abc\" is not a rank (expected ranks such as 0, 0,2 or 0-3)");
        CHECK(refusal("-1").find("\"-1\" is not a rank") != std::string::npos);
        CHECK(refusal("0-").find("\"0-\" is not a rank") != std::string::npos);
        CHECK(refusal("1-2-3").find("\"1-2-3\" is not a rank") != std::string::npos);
        CHECK(refusal("+1").find("is not a rank") != std::string::npos);
        CHECK(refusal("0x1").find("is not a rank") != std::string::npos);
        CHECK(refusal("99999999999999999999").find("is not a rank") != std::string::npos);
    }
    SECTION("empty, or an empty item") {
        CHECK(refusal("").find("empty; name the ranks") != std::string::npos);
        CHECK(refusal("  ").find("empty; name the ranks") != std::string::npos);
        CHECK(refusal("0,,1").find("an empty item between commas") != std::string::npos);
        CHECK(refusal("0,").find("an empty item between commas") != std::string::npos);
    }
    SECTION("a range that ends before it starts") { CHECK(refusal("2-1") == "--ranks \"2-1\": \"2-1\" ends before it starts"); }
}

TEST_CASE("a rank list is written back in the form it is read") {
    using Ranks = std::vector<long long>;
    CHECK(format_rank_list(Ranks{0}) == "0");
    CHECK(format_rank_list(Ranks{0, 2}) == "0,2");
    CHECK(format_rank_list(Ranks{0, 1}) == "0,1");
    CHECK(format_rank_list(Ranks{0, 1, 2, 3, 6}) == "0-3,6");
    CHECK(format_rank_list(Ranks{1, 3, 4, 5, 7, 8}) == "1,3-5,7,8");
    CHECK(format_rank_list(Ranks{}).empty());
    for (const char* text : {"0", "0,2", "0-3,6", "1,3-5,7,8"}) {
        CHECK(format_rank_list(parse_rank_list(text, 16, "--ranks")) == text);
    }
    CHECK(describe_partial_ranks(Ranks{0}, 4) == "ranks 0 of 4");
    CHECK(describe_partial_ranks(Ranks{0, 1, 2, 5}, 8) == "ranks 0-2,5 of 8");
}
