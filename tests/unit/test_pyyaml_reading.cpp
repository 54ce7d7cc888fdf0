// PyYAML 6's SafeLoader as the reference for cards that leave the harness. Each expectation below
// was checked against /usr/bin/python3 -c 'import yaml; print(repr(yaml.safe_load("a: TEXT")["a"]))'.
#include "card/card.hpp"
#include "card/pyyaml_reading.hpp"

#include <catch2/catch.hpp>

using namespace harness;

namespace {

void reads(const std::string& text, PyYamlType type, const std::string& shown) {
    INFO(text);
    const PyYamlScalar py = pyyaml_plain_scalar(text);
    CHECK(py.type == type);
    CHECK(py.shown == shown);
    CHECK(py.refusal.empty());
}

void refuses(const std::string& text, const std::string& why) {
    INFO(text);
    CHECK(pyyaml_plain_scalar(text).refusal.find(why) != std::string::npos);
}

Diagnostics check(const std::string& text) { return pyyaml_reading(text, YamlDocument::parse(text, "card.yaml"), card_schema()); }

/// The one diagnostic's text, or every one's when there is not exactly one.
std::string only(const Diagnostics& diagnostics) {
    std::string all;
    for (const Diagnostic& d : diagnostics.items()) {
        all += (d.severity == Severity::error ? "error: " : "warning: ") + d.text() + "\n";
    }
    return diagnostics.items().size() == 1 ? all.substr(0, all.size() - 1) : all;
}

} // namespace

TEST_CASE("PyYAML's booleans are its resolver's eighteen words, not y or n") {
    for (const char* word : {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}) {
        reads(word, PyYamlType::boolean, "True");
    }
    for (const char* word : {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}) {
        reads(word, PyYamlType::boolean, "False");
    }
    for (const char* word : {"y", "Y", "n", "N", "yES", "tRUE", "oN"}) {
        reads(word, PyYamlType::str, word);
    }
}

TEST_CASE("PyYAML's integers include octal, binary, hex, underscores and base 60") {
    reads("0", PyYamlType::integer, "0");
    reads("-0", PyYamlType::integer, "0");
    reads("+12", PyYamlType::integer, "12");
    reads("017", PyYamlType::integer, "15");
    reads("00", PyYamlType::integer, "0");
    reads("0_", PyYamlType::integer, "0");
    reads("0x1F", PyYamlType::integer, "31");
    reads("-0x1f", PyYamlType::integer, "-31");
    reads("0b101", PyYamlType::integer, "5");
    reads("1_000", PyYamlType::integer, "1000");
    reads("1:20", PyYamlType::integer, "80");
    reads("190:20:30", PyYamlType::integer, "685230");
    reads("123456789012345678901234567890", PyYamlType::integer, "123456789012345678901234567890");
    SECTION("and what YAML 1.1 leaves a string") {
        for (const char* text : {"0o17", "09", "0x", "1:60", "0:20", "_1", "1e3"}) {
            reads(text, PyYamlType::str, text);
        }
    }
    SECTION("and what it resolves but cannot build") {
        refuses("0b_", "invalid literal for int() with base 2");
        refuses("0x_", "invalid literal for int() with base 16");
    }
}

TEST_CASE("PyYAML's floats need a dot, and a signed exponent") {
    reads("1.10", PyYamlType::floating, "1.1");
    reads("1.", PyYamlType::floating, "1.0");
    reads("0.", PyYamlType::floating, "0.0");
    reads(".5", PyYamlType::floating, "0.5");
    reads("1__.5", PyYamlType::floating, "1.5");
    reads("1.0e+3", PyYamlType::floating, "1000.0");
    reads("1.5e+16", PyYamlType::floating, "1.5e+16");
    reads("0.00001", PyYamlType::floating, "1e-05");
    reads("-0.0", PyYamlType::floating, "-0.0");
    reads("1:20.5", PyYamlType::floating, "80.5");
    reads(".inf", PyYamlType::floating, "inf");
    reads("-.Inf", PyYamlType::floating, "-inf");
    reads("+.INF", PyYamlType::floating, "inf");
    reads(".NaN", PyYamlType::floating, "nan");
    for (const char* text : {"1.0e3", "+.5", "+.nan", ".", "1:2:3.4e+5", "inf"}) {
        reads(text, PyYamlType::str, text);
    }
}

TEST_CASE("PyYAML's nulls, merge key, value tag and timestamps") {
    for (const char* text : {"~", "null", "Null", "NULL", ""}) {
        reads(text, PyYamlType::null, "None");
    }
    reads("nULL", PyYamlType::str, "nULL");
    reads("<<", PyYamlType::merge, "");
    reads("=", PyYamlType::value, "");
    reads("2024-01-02", PyYamlType::timestamp, "2024-01-02");
    reads("2024-01-02T10:00:00Z", PyYamlType::timestamp, "2024-01-02 10:00:00+00:00");
    reads("2002-12-14 21:59:43.10 -5", PyYamlType::timestamp, "2002-12-14 21:59:43.100000-05:00");
    reads("2024-1-2", PyYamlType::str, "2024-1-2");
    SECTION("a date datetime cannot build is refused") {
        refuses("2024-13-02", "month must be in 1..12");
        refuses("2023-02-29", "day is out of range for month");
        refuses("2024-01-02 25:00:00", "hour must be in 0..23");
        refuses("2024-01-02 10:00:00 +99", "offset must be a timedelta");
    }
}

TEST_CASE("a card field PyYAML reads as another value is an error at its line") {
    const std::string head = "version: 1\ncontributor: ";
    CHECK(only(check(head + "yes\n")) ==
          "error: card.yaml:2:14: contributor: PyYAML reads True (a boolean), not the text \"yes\" the harness reads; "
          "quote it: \"yes\"");
    CHECK(only(check("Model-executor:\n  framework:\n    version: 1.10\n")) ==
          "error: card.yaml:3:14: Model-executor.framework.version: PyYAML reads 1.1 (a float), not the text \"1.10\" the "
          "harness reads; quote it: \"1.10\"");
    CHECK(only(check(head + "=\n"))
              .find("error: card.yaml:2:14: contributor: PyYAML cannot load this card: a plain = is "
                    "the value tag") == 0);
    CHECK(only(check(head + "2024-13-01\n")).find("refuses it (month must be in 1..12)") != std::string::npos);
    SECTION("the same text in another type: a warning for a date, nothing for a number, an error for a boolean") {
        CHECK(only(check(head + "2024-01-02\n")).find("warning: card.yaml:2:14: contributor: PyYAML reads 2024-01-02 as a date") == 0);
        CHECK(check(head + "1.5\n").items().empty());
        CHECK(only(check(head + "False\n")).find("error: card.yaml:2:14: contributor: PyYAML reads False (a boolean)") == 0);
    }
    SECTION("a --set value counts only where the effective card writes it unquoted") {
        YamlDocument doc = YamlDocument::parse("version: 1\n", "card.yaml");
        doc.set("contributor=yes");
        CHECK(pyyaml_reading("version: 1\n", doc, card_schema()).items().empty());
        // The card is written with the same rule (yaml_document's yaml11_special): 1.10 is quoted.
        doc.set("Model-executor.framework.version=1.10");
        CHECK(pyyaml_reading("version: 1\n", doc, card_schema()).items().empty());
        CHECK(emit_yaml(doc.root()).find("version: \"1.10\"") != std::string::npos);
    }
    SECTION("quoted, every one reads the same") {
        CHECK(check(head + "\"yes\"\n").items().empty());
        CHECK(check(head + "'='\n").items().empty());
        CHECK(check("Model-executor:\n  framework:\n    version: \"1.10\"\n").items().empty());
    }
}

TEST_CASE("a number or boolean field must mean the same number to PyYAML") {
    const std::string head = "workload:\n  hardware:\n    xpu_spec:\n      ";
    CHECK(only(check(head + "total_count: 010\n")) ==
          "error: card.yaml:4:20: workload.hardware.xpu_spec.total_count: PyYAML reads 8 (an integer), the harness 10: write 10");
    CHECK(only(check(head + "memory_gb: 1e3\n")).find("PyYAML reads the text \"1e3\", the harness 1000: write 1000") !=
          std::string::npos);
    CHECK(check(head + "total_count: 8\n").items().empty());
    CHECK(check(head + "memory_gb: 80.0\n").items().empty());
    CHECK(check("workload:\n  model:\n    moe: false\n").items().empty());
    CHECK(only(check("workload:\n  model:\n    moe: fALSE\n")).find("PyYAML reads the text \"fALSE\", the harness false") !=
          std::string::npos);
}

TEST_CASE("what PyYAML's reader and scanner refuse is found in the card's bytes") {
    SECTION("a carriage return alone is a line break to PyYAML, not to yaml-cpp") {
        CHECK(only(check("version: 1\ncontributor: foo\rbar\n"))
                  .find("error: card.yaml:2:17: contributor: PyYAML reads a line break here (a carriage return)") == 0);
        CHECK(check("version: 1\r\ncontributor: foo\r\n").items().empty());
    }
    SECTION("control characters, DEL and bytes that are not UTF-8") {
        CHECK(
            only(check("contributor: a\x01z\n")).find("card.yaml:1:15: contributor: PyYAML cannot load this card: character U+0001") !=
            std::string::npos);
        CHECK(only(check("contributor: a\x7fz\n")).find("character U+007F is not allowed") != std::string::npos);
        CHECK(only(check("contributor: a\xff\n")).find("byte 0xFF is not UTF-8") != std::string::npos);
        CHECK(check("contributor: \"caf\xc3\xa9\"\n").items().empty());
    }
    SECTION("tabs between tokens, but not in quotes, block scalars or comments") {
        CHECK(only(check("contributor:\tx\n")).find("card.yaml:1:13: contributor: PyYAML cannot load this card: a tab here") !=
              std::string::npos);
        CHECK(only(check("contributor: x\t\n")).find("a tab here") != std::string::npos);
        CHECK(only(check("version: 1\n  \t# c\ncontributor: x\n")).find("card.yaml:2:3") != std::string::npos);
        CHECK(check("contributor: \"a\tb\" # c\td\ndescription: |\n  a\tb\n  \tc\ncontact: 'it''s\ta'\n").items().empty());
    }
    SECTION("a second document") {
        CHECK(only(check("version: 1\n---\ncontributor: x\n")).find("a second document") != std::string::npos);
        CHECK(check("---\nversion: 1\n").items().empty());
    }
    SECTION("a tag SafeConstructor has no constructor for, and merge keys yaml-cpp does not merge") {
        CHECK(only(check("contributor: !me x\n")).find("could not determine a constructor for the tag '!me'") != std::string::npos);
        CHECK(check("contributor: !!str yes\n").items().empty());
        CHECK(only(check("base: &b {tp: 2}\nlaunch:\n  <<: *b\n")).find("card.yaml:3:3: launch.<<: PyYAML merges the mapping") !=
              std::string::npos);
        CHECK(only(check("launch:\n  <<: x\n")).find("expected a mapping or list of mappings for merging") != std::string::npos);
        CHECK(check("launch:\n  env:\n    =: x\n").items().empty());
    }
}
