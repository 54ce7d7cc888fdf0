// The input bounds of util/limits.hpp and the readers that apply them (issue 13).
#include "bundle/bundle_card.hpp"
#include "card/yaml_document.hpp"
#include "metrics/json_scan.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

using namespace harness;

namespace {

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name) { ::setenv(name, value, 1); }
    ~ScopedEnv() { ::unsetenv(m_name); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
};

std::string error_of(const std::string& text) {
    try {
        YamlDocument::parse(text, "card.yaml");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("limits have documented defaults and are raised through their variable", "[limits]") {
    CHECK(input_limit(InputLimit::bundle_inflated_bytes) == (std::uint64_t{64} << 30));
    CHECK(input_limit(InputLimit::nesting_depth) == 1024);
    CHECK(input_limit_hint(InputLimit::bundle_inflated_bytes) == "the limit is 64 GiB; raise it with CCL_HARNESS_MAX_INFLATED=SIZE");
    CHECK(input_limit_hint(InputLimit::nesting_depth) == "the limit is 1024");
    {
        const ScopedEnv raised("CCL_HARNESS_MAX_INFLATED", "200G");
        CHECK(input_limit(InputLimit::bundle_inflated_bytes) == (std::uint64_t{200} << 30));
    }
    {
        const ScopedEnv raised("CCL_HARNESS_MAX_CARD_BYTES", "2MiB");
        CHECK(input_limit(InputLimit::card_bytes) == (std::uint64_t{2} << 20));
    }
    for (const char* bad : {"0", "lots", "12Q", "-1", "99999999999999999999"}) {
        const ScopedEnv raised("CCL_HARNESS_MAX_INFLATED", bad);
        CHECK_THROWS_WITH(input_limit(InputLimit::bundle_inflated_bytes), Catch::Contains("CCL_HARNESS_MAX_INFLATED="));
    }
}

TEST_CASE("a YAML alias bomb is refused while it is parsed", "[limits]") {
    std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 9; ++i) {
        const std::string prev = "*a" + std::to_string(i - 1);
        bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
        for (int k = 1; k < 10; ++k) {
            bomb += ", " + prev;
        }
        bomb += "]\n";
    }
    CHECK_THAT(error_of(bomb), Catch::Contains("an alias bomb?") && Catch::Contains("CCL_HARNESS_MAX_YAML_EXPANDED"));
    // Honest anchors stay fine.
    CHECK(error_of("base: &b {tp: 1, pp: 2}\nother: *b\nthird: *b\n").empty());
}

TEST_CASE("a YAML file past the node or size bound is refused", "[limits]") {
    const ScopedEnv nodes("CCL_HARNESS_MAX_YAML_NODES", "50");
    std::string many;
    for (int i = 0; i < 40; ++i) {
        many += "k" + std::to_string(i) + ": v\n";
    }
    CHECK_THAT(error_of(many), Catch::Contains("more than 50 YAML nodes"));
    const ScopedEnv bytes("CCL_HARNESS_MAX_CARD_BYTES", "100");
    CHECK_THAT(error_of(std::string(200, '#')), Catch::Contains("larger than a YAML file may be"));
}

TEST_CASE("a non-scalar mapping key is refused with its position", "[limits]") {
    CHECK_THAT(error_of("a: 1\n? [a, b]\n: 1\n"), Catch::StartsWith("card.yaml:2:3: a mapping key must be a scalar"));
    CHECK_THAT(error_of("a: 1\n{a: 1}: 2\n"), Catch::StartsWith("card.yaml:2:1: a mapping key must be a scalar"));
    CHECK_THAT(error_of("s: &s [1]\n*s : 2\n"), Catch::Contains("a mapping key must be a scalar"));
    CHECK(error_of("? plain\n: 1\n").empty());
}

TEST_CASE("YAML nesting is bounded", "[limits]") {
    std::string deep = "a: ";
    for (int i = 0; i < 1100; ++i) {
        deep += "{k: ";
    }
    deep += "1" + std::string(1100, '}') + "\n";
    const std::string error = error_of(deep);
    CHECK_THAT(error, Catch::Contains("nested deeper than 1024") || Catch::Contains("invalid YAML"));
}

TEST_CASE("the emitted card reads the same in a YAML 1.1 parser", "[limits]") {
    SECTION("values PyYAML would misread are quoted") {
        for (const std::string value :
             {"=",          "yes",  "No", "on",   "OFF",  "y",   "~",  "%x", "@x", "`x",   "a\tb",        "a\rb",           "010",
              "2024-01-01", "1:30", "<<", "a: b", "x #y", "- x", " x", "x ", "",   "\x7f", "nel\xc2\x85", "ls\xe2\x80\xa8", "null",
              "n"}) {
            YAML::Node root(YAML::NodeType::Map);
            root["v"] = value;
            const std::string text = emit_yaml(root);
            INFO(text);
            CHECK(text.rfind("v: \"", 0) == 0);
            CHECK(YamlDocument::parse(text, "again").root()["v"].Scalar() == value);
        }
    }
    SECTION("plain values stay plain, and quoted ones stay strings") {
        const YamlDocument doc = YamlDocument::parse("m: 4\nf: 0.5\nb: true\ns: text-1.2_x\nq: \"4\"\nnull_value:\nl: [1, a]\n", "c");
        CHECK(emit_yaml(doc.root()) == "m: 4\nf: 0.5\nb: true\ns: text-1.2_x\nq: \"4\"\nnull_value: ~\nl:\n  - 1\n  - a\n");
    }
    SECTION("nested collections") {
        const YamlDocument doc = YamlDocument::parse("a:\n  - b: 1\n    c: [x]\n  - [w, z]\ne: {}\n", "c");
        const std::string text = emit_yaml(doc.root());
        CHECK(text == "a:\n  - b: 1\n    c:\n      - x\n  - - w\n    - z\ne: {}\n");
    }
}

TEST_CASE("the bundle's card never carries a secret-named env value", "[limits]") {
    const std::string card = "version: 1\nlaunch:\n  env:\n    HF_TOKEN: hunter2-value\n    PLAIN: \"a\\rb\"\n";
    const std::string out = set_bundle_fields(card, {"json"}, "x.tar.zst", "card.yaml");
    CHECK(out.find("hunter2") == std::string::npos);
    const YAML::Node root = YamlDocument::parse(out, "out").root();
    CHECK(root["launch"]["env"]["HF_TOKEN"].Scalar() == "[REDACTED]");
    CHECK(root["launch"]["env"]["PLAIN"].Scalar() == "a\rb");
}

TEST_CASE("skipping a JSON value is iterative and bounded in depth", "[limits]") {
    using namespace harness::metrics::json_scan;
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    Cursor c{deep.data(), deep.data() + deep.size()};
    CHECK_THROWS_AS(skip_value(c), SyntaxError);
    const std::string ok = "{\"a\": [1, {\"b\": [true, null, \"x\"]}], \"c\": {}} ";
    Cursor d{ok.data(), ok.data() + ok.size()};
    skip_value(d);
    CHECK(*d.p == ' ');
    const std::string bad = "[1, 2}";
    Cursor e{bad.data(), bad.data() + bad.size()};
    CHECK_THROWS_AS(skip_value(e), SyntaxError);
}
