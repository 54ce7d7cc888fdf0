// Issue 13, secrets and crash safety: the streaming scrubber, the one list of a run's secrets,
// the secret env a job is handed, the dead-harness check and the refused durations.
#include "provenance/env_capture.hpp"
#include "provenance/secret_scrub.hpp"
#include "run/executor.hpp"
#include "run/run_record.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/process.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <unistd.h>

using namespace harness;
using harness::test::TempDir;

namespace {

SecretScrubber scrubber_of(std::initializer_list<const char*> values) {
    SecretScrubber secrets;
    for (const char* value : values) {
        secrets.add(value);
    }
    return secrets;
}

} // namespace

TEST_CASE("a stream scrubber catches a secret split across writes", "[secrets]") {
    const SecretScrubber secrets = scrubber_of({"hunter2hunter2"});
    StreamScrubber stream(secrets);
    std::string out = stream.feed("token=hunt");
    CHECK(out == "token="); // "hunt" may start the secret: held back
    out += stream.feed("er2hun");
    out += stream.feed("ter2 done\n");
    out += stream.finish();
    CHECK(out == "token=[REDACTED] done\n");
    CHECK(stream.replaced() == 1);
}

TEST_CASE("a stream scrubber holds back only what may start a secret", "[secrets]") {
    const SecretScrubber secrets = scrubber_of({"hunter2hunter2"});
    StreamScrubber stream(secrets);
    // Ordinary output passes at once, so the terminal is never behind the ranks.
    CHECK(stream.feed("step 5 loss 0.25\n") == "step 5 loss 0.25\n");
    CHECK(stream.feed("ends with h") == "ends with ");
    CHECK(stream.feed("ello\n") == "hello\n");
    CHECK(stream.finish().empty());
}

TEST_CASE("a flushed stream scrubber goes on scrubbing what comes later", "[secrets]") {
    const SecretScrubber secrets = scrubber_of({"hunter2hunter2"});
    StreamScrubber stream(secrets);
    CHECK(stream.feed("a hunter2") == "a ");
    CHECK(stream.finish() == "hunter2");
    CHECK(stream.feed("x hunter2hunter2 y") == "x [REDACTED] y");
}

TEST_CASE("a run's secrets come from secret names, the card's env and --secret", "[secrets]") {
    const EnvironmentMap environment = {
        {"HF_TOKEN", "env-token-value-1"}, {"MY_PLAIN", "plain-secret-value"}, {"HOME", "/home/someone-long"}};
    const Environment job_env = {{"WANDB_API_KEY", "card-key-value-1"}, {"NCCL_DEBUG", "INFO-long-value"}};
    const SecretScrubber secrets = run_secrets(environment, job_env, {"MY_PLAIN"});
    CHECK(secrets.scrub("env-token-value-1 card-key-value-1 plain-secret-value") == "[REDACTED] [REDACTED] [REDACTED]");
    CHECK(secrets.scrub("/home/someone-long INFO-long-value") == "/home/someone-long INFO-long-value");
    SECTION("a --secret that is not set is an input error, not a silent leak") {
        try {
            run_secrets(environment, job_env, {"NOT_SET_ANYWHERE"});
            FAIL("no error");
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            CHECK(std::string(error.what()).find("--secret NOT_SET_ANYWHERE: not set") != std::string::npos);
        }
    }
    SECTION("a --secret that is not a variable name is refused") {
        CHECK_THROWS_AS(run_secrets(environment, job_env, {"A=B"}), HarnessError);
    }
    SECTION("a --secret too short to scrub is refused") {
        CHECK_THROWS_AS(run_secrets({{"SHORT", "abc"}}, {}, {"SHORT"}), HarnessError);
    }
}

TEST_CASE("the job gets the card's secret env, or the environment's for a bundle's [REDACTED]", "[secrets]") {
    const Environment job_env = {{"CARD_API_TOKEN", "from-the-card"}, {"HF_TOKEN", k_redacted}, {"NCCL_DEBUG", "INFO"}};
    SECTION("exported") {
        const Environment got = secret_job_environment(job_env, {{"HF_TOKEN", "from-the-environment"}});
        CHECK(got == Environment{{"CARD_API_TOKEN", "from-the-card"}, {"HF_TOKEN", "from-the-environment"}});
    }
    SECTION("not exported: one error naming what to export") {
        try {
            secret_job_environment(job_env, {});
            FAIL("no error");
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            CHECK(std::string(error.what()).find("export HF_TOKEN=...") != std::string::npos);
            CHECK(std::string(error.what()).find("CARD_API_TOKEN") == std::string::npos);
        }
    }
}

TEST_CASE("the probe gets env_capture's rules, the one copy of them", "[secrets]") {
    const std::string rules = probe_capture_rules();
    CHECK(rules.rfind("CAPTURED_PREFIXES = (", 0) == 0);
    CHECK(rules.find("\"NCCL_\"") != std::string::npos);
    CHECK(rules.find("SECRET_WORDS = (") != std::string::npos);
    CHECK(rules.find("\"token\"") != std::string::npos);
}

TEST_CASE("run.json records its harness, and a gone harness is told from a live one", "[secrets]") {
    TempDir dir;
    RunRecord record;
    record.run_id = "r";
    record.claim();
    record.transition(RunState::running, dir.path());
    Json saved = Json::parse(read_file(dir.path() / "run.json"));
    REQUIRE(saved.find("harness") != nullptr);
    CHECK(saved["harness"]["pid"].as_int() == ::getpid());
    CHECK(!recorded_harness_gone(saved)); // this process

    SECTION("the pid reused by another process (a different start time)") {
        saved["harness"]["start_time"] = saved["harness"]["start_time"].as_int() + 1;
        CHECK(recorded_harness_gone(saved));
    }
    SECTION("no such process") {
        saved["harness"]["pid"] = static_cast<long long>(std::numeric_limits<int>::max());
        CHECK(recorded_harness_gone(saved));
    }
    SECTION("another host's harness cannot be checked from here") {
        saved["harness"]["pid"] = static_cast<long long>(std::numeric_limits<int>::max());
        saved["harness"]["host"] = "elsewhere.invalid";
        CHECK(!recorded_harness_gone(saved));
    }
    SECTION("a record from before the harness was recorded") {
        saved["harness"] = Json();
        CHECK(!recorded_harness_gone(saved));
    }
}

TEST_CASE("a detached Slurm job is recorded with its id", "[secrets]") {
    TempDir dir;
    RunRecord record;
    record.detached_job = "4242";
    record.save(dir.path());
    CHECK(Json::parse(read_file(dir.path() / "run.json"))["detached_job"].as_string() == "4242");
}

TEST_CASE("run.json is scrubbed as it is saved", "[secrets]") {
    TempDir dir;
    const SecretScrubber secrets = scrubber_of({"hunter2hunter2"});
    RunRecord record;
    record.secrets = &secrets;
    record.transition(RunState::failed, dir.path(), "sbatch said: bad hunter2hunter2");
    CHECK(read_file(dir.path() / "run.json").find("hunter2hunter2") == std::string::npos);
}

TEST_CASE("process_start_time reads /proc/<pid>/stat field 22", "[secrets]") {
    const auto mine = process_start_time(static_cast<int>(::getpid()));
    REQUIRE(mine.has_value());
    CHECK(process_start_time(static_cast<int>(::getpid())) == mine);
    CHECK(!process_start_time(0).has_value());
}

TEST_CASE("grace periods and time limits the executor could not keep are refused", "[secrets]") {
    for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1.0, 1e12}) {
        CHECK_THROWS_AS(check_grace_seconds(bad), HarnessError);
    }
    CHECK_NOTHROW(check_grace_seconds(0));
    CHECK_NOTHROW(check_grace_seconds(5));
    for (const char* bad : {"nan", "-5", "1.5", "99999999999999999999", "1:2:3:4", "400-00:00:00", "a-1", "10:"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_time_limit(bad), HarnessError);
    }
    CHECK(parse_time_limit("UNLIMITED") == 0);
    CHECK(parse_time_limit("10:30") == 10 * 60 + 30); // Slurm: minutes:seconds
    CHECK(parse_time_limit("2-12") == 2 * 86400 + 12 * 3600);
}
