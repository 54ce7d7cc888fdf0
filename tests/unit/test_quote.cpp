#include "util/json.hpp"
#include "util/quote.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

using namespace harness;

namespace {

/// What bash makes of `printf %s WORD`: proves a quoted word is one literal argument.
std::string through_bash(const std::string& word) {
    const std::string script = "printf '%s' " + shell_quote(word);
    std::string command = "bash -c " + shell_quote(script);
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[256];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        out.append(buffer, n);
    }
    ::pclose(pipe);
    return out;
}

} // namespace

TEST_CASE("shell quoting leaves plain words bare") {
    CHECK(shell_quote("m4999") == "m4999");
    CHECK(shell_quote("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B");
    CHECK(shell_quote("") == "''");
    CHECK(shell_quote("a b") == "'a b'");
    CHECK(shell_quote("--opt=a,b") == "'--opt=a,b'");
}

TEST_CASE("hostile strings survive bash as literal text") {
    const std::string hostile[] = {
        "$(touch /tmp/ccl-harness-pwned)",
        "`id`",
        "it's",
        "a\nb",
        "\"quoted\"",
        "x; rm -rf /",
        "${HOME}",
        "\\",
        "'",
        "$'x'",
        "a,b",
        "\\$HOME\"`x`",
        "!!",
    };
    for (const auto& word : hostile) {
        CAPTURE(word);
        CHECK(through_bash(word) == word);
    }
}

TEST_CASE("toml and json scalars keep numbers bare and quote the rest") {
    CHECK(toml_scalar("8") == "8");
    CHECK(toml_scalar("0.5") == "0.5");
    CHECK(toml_scalar("true") == "true");
    CHECK(toml_scalar("007") == "\"007\"");
    CHECK(toml_scalar("8B") == "\"8B\"");
    CHECK(toml_scalar("a\"b\nc") == "\"a\\\"b\\nc\"");
    CHECK(json_scalar("1.") == "\"1.\"");
    CHECK(json_scalar("-3") == "-3");
    CHECK(json_string("\x01") == "\"\\u0001\"");
}

TEST_CASE("safe tokens exclude every shell metacharacter") {
    CHECK(is_safe_token("nvcr.io/nvidia/pytorch@sha256:abc"));
    for (const char* bad : {"a b", "a;b", "a$b", "a`b", "a'b", "a\"b", "a|b", "a&b", "a>b", "a*b", ""}) {
        CAPTURE(bad);
        CHECK_FALSE(is_safe_token(bad));
    }
}

TEST_CASE("json objects serialize with sorted keys") {
    Json value = Json::object();
    value["zeta"] = 1;
    value["alpha"]["nested"] = "x";
    value["list"].push_back(true);
    CHECK(value.dump(false) == R"({"alpha":{"nested":"x"},"list":[true],"zeta":1})");
}
