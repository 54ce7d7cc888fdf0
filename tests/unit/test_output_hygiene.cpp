// Issue 13: names from input are data, every string from input is printed escaped, JSON is
// always valid UTF-8, launch.args reach the job as written, sweeps are bounded, a full $TMPDIR is
// an environment failure, uploads are not repeated once the server may hold them.
#include "card/card.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/scratch_dir.hpp"
#include "workflows/submit.hpp"
#include "workflows/sweep.hpp"

#include <catch2/catch.hpp>
#include <cerrno>
#include <limits>

using namespace harness;
using harness::test::TempDir;

namespace {

/// Whether `text` is valid UTF-8 with no C0/C1 control character or ESC: safe on a terminal.
bool terminal_safe(const std::string& text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_sequence_length(text, at);
        if (length == 0) {
            return false;
        }
        const auto lead = static_cast<unsigned char>(text[at]);
        if (lead < 0x20 || lead == 0x7f || (lead == 0xc2 && static_cast<unsigned char>(text[at + 1]) < 0xa0)) {
            return false;
        }
        at += length;
    }
    return true;
}

} // namespace

TEST_CASE("names from input are refused as paths unless plainly relative", "[output_hygiene]") {
    CHECK(relative_name_problem("tiny-ddp.yaml").empty());
    CHECK(relative_name_problem("scripts/train.py").empty());
    CHECK(relative_name_problem("a..b").empty());
    for (const std::string& bad : {std::string(""), std::string("/etc/passwd"), std::string("../x"), std::string("a/../../x"),
                                   std::string("a//b"), std::string("./a"), std::string("a/"), std::string("a\0b", 3),
                                   std::string("a\nb"), std::string("a\\..\\b"), std::string(300, 'x'), std::string(5000, 'a')}) {
        INFO(json_string(bad));
        CHECK_FALSE(relative_name_problem(bad).empty());
    }
    CHECK(file_name_problem("card.yaml").empty());
    CHECK_FALSE(file_name_problem("dir/card.yaml").empty());
    CHECK(file_name_problem("...yaml").empty());
    TempDir dir;
    CHECK(safe_path_under(dir.path(), "a/b", "test") == dir.path() / "a" / "b");
    try {
        safe_path_under(dir.path(), "../../etc/x", "provenance run.card");
        FAIL("accepted ..");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        CHECK(std::string(e.what()).find("provenance run.card \"../../etc/x\"") != std::string::npos);
    }
}

TEST_CASE("terminal_text escapes control characters and invalid UTF-8, keeps the rest", "[output_hygiene]") {
    CHECK(terminal_text("kineto_trace_0.json") == "kineto_trace_0.json");
    CHECK(terminal_text("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");
    CHECK(terminal_text("\r\x1b[2Kx.tar.zst: valid") == "\\r\\x1b[2Kx.tar.zst: valid");
    CHECK(terminal_text("a\nb\tc") == "a\\nb\\tc");
    CHECK(terminal_text("a\nb\tc\x07", true) == "a\nb\tc\\x07");
    CHECK(terminal_text("\xff\xfe ok") == "\\xff\\xfe ok");
    CHECK(terminal_text("\xc2\x9b"
                        "31m") == "\\x9b31m"); // C1 CSI
    CHECK(terminal_text("\xe2\x80\xae"
                        "cba") == "\\u202ecba");               // right-to-left override
    CHECK(terminal_text("\xc0\xaf") == "\\xc0\\xaf");          // overlong '/'
    CHECK(terminal_text("\xed\xa0\x80") == "\\xed\\xa0\\x80"); // a surrogate
    CHECK(terminal_text("back\\slash") == "back\\slash");
    CHECK(terminal_safe(terminal_text(std::string("\0\x1b\x7f\x80\xc3", 5))));
}

TEST_CASE("JSON strings are always valid UTF-8", "[output_hygiene]") {
    CHECK(json_string("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
    CHECK(json_string("a\xff"
                      "b") == "\"a\\ufffdb\"");
    CHECK(json_string("\xe2\x82") == "\"\\ufffd\\ufffd\""); // truncated sequence
    CHECK(json_string("\x1b[31m") == "\"\\u001b[31m\"");
    CHECK(json_string("\xc2\x85") == "\"\\u0085\"");
    Json document = Json::object();
    document["name\xfe"] = "x\xc3(";
    const std::string text = document.dump(false);
    CHECK(text == "{\"name\\ufffd\":\"x\\ufffd(\"}");
    CHECK_NOTHROW(Json::parse(text)); // simdjson validates UTF-8
}

TEST_CASE("launch.args items reach the plan exactly as written", "[output_hygiene]") {
    const fs::path file = fs::path(CCL_HARNESS_SOURCE_DIR) / "workloads" / "tiny-ddp" / "tiny-ddp.yaml";
    const WorkloadCard card = WorkloadCard::load(file, {R"(launch.args=["--name", "  two words ", "", " "])"});
    REQUIRE_FALSE(card.diagnostics().has_errors());
    CHECK(card.launch.args == std::vector<std::string>{"--name", "  two words ", "", " "});
}

TEST_CASE("a sweep's points are counted before they are built, without overflow", "[output_hygiene]") {
    const SweepAxis hundred{"a", std::vector<std::string>(100, "1")};
    CHECK(count_points({hundred, {"b", hundred.values}, {"c", hundred.values}}, false) == 1000000);
    CHECK(count_points({hundred, {"b", hundred.values}}, true) == 100);
    std::vector<SweepAxis> many;
    for (int i = 0; i < 12; ++i) {
        many.push_back({"p" + std::to_string(i), std::vector<std::string>(1000, "1")});
    }
    CHECK(count_points(many, false) == std::numeric_limits<std::uint64_t>::max());
    CHECK(k_sweep_max_points < 1000000);
}

TEST_CASE("a full or read-only TMPDIR is an environment failure, not bad input", "[output_hygiene]") {
    for (const int error_number : {ENOSPC, EDQUOT, EROFS}) {
        CHECK(is_out_of_space(error_number));
        try {
            throw_if_out_of_space(error_number, "/tmp/ccl-harness-verify-x");
            FAIL("not thrown");
        } catch (const ScratchSpaceError& e) {
            CHECK(e.code() == k_exit_failure);
            CHECK(std::string(e.what()).find("no space left on TMPDIR (/tmp/ccl-harness-verify-x: ") == 0);
        }
    }
    CHECK_FALSE(is_out_of_space(EACCES));
    CHECK_NOTHROW(throw_if_out_of_space(EIO, "/tmp"));
}

TEST_CASE("an upload is retried only while the server cannot have stored it", "[output_hygiene]") {
    HttpResponse response;
    response.status = 500;
    response.body_sent = true;
    CHECK_FALSE(retry_refusal(response).empty()); // 500 after the whole body: maybe stored
    response.body_sent = false;
    CHECK(retry_refusal(response).empty()); // answered before the body was read
    response.body_sent = true;
    response.status = 503;
    CHECK_FALSE(retry_refusal(response).empty());
    response.retry_after = "2";
    CHECK(retry_refusal(response).empty()); // "come back later"
    response.status = 429;
    CHECK(retry_refusal(response).empty());
    response.status = 413;
    CHECK_FALSE(retry_refusal(response).empty());
    CHECK(retry_after_seconds("17") == std::chrono::seconds(17));
    CHECK(retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == std::chrono::seconds(0));
    CHECK_FALSE(retry_after_seconds("").has_value());
    CHECK(HttpTransportError(HttpTransportError::Stage::answer, "x").request_delivered());
    CHECK_FALSE(HttpTransportError(HttpTransportError::Stage::send, "x").request_delivered());
}
