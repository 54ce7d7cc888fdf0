// run.json read back as input: a run directory may come from shared scratch or a colleague, and
// its fields reach Slurm's tools, gcloud, the terminal and paths. Each field is its declared type.
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "run/slurm_client.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace harness;
using harness::test::TempDir;

namespace {

/// The load error for a record whose `field` member is `value` (JSON text), beside a valid
/// Slurm record; "" when it loads.
std::string load_error(const std::string& field, const std::string& value, const std::string& executor = "slurm") {
    TempDir dir;
    std::string text = "{\"run_id\": \"tiny-20261124T000000Z-abcdef\", \"state\": \"running\", \"" + field + "\": " + value;
    if (field != "executor") {
        text += ", \"executor\": \"" + executor + "\"";
    }
    dir.write("run.json", text + "}");
    try {
        RunRecord::load(dir.path());
    } catch (const HarnessError& error) {
        CHECK(error.code() == k_exit_usage);
        return error.what();
    }
    return "";
}

} // namespace

TEST_CASE("run.json's job ids are Slurm job ids", "[run_record_input]") {
    CHECK(load_error("job_ids", R"(["42"])").empty());
    CHECK(load_error("job_ids", R"(["916_3"])").empty()); // an array task, as sweep_array writes it
    CHECK(load_error("job_ids", R"(["77+1"])").empty());  // a heterogeneous job's component
    CHECK(load_error("detached_job", R"("916_3")").empty());
    for (const char* hostile : {R"(["--user=root"])", R"(["--help"])", R"(["42\n43"])", R"(["-1"])", R"(["42 43"])", R"(["42_"])",
                                R"(["_3"])", R"(["42_3_4"])", R"([""])", R"(["12345678901"])"}) {
        INFO(hostile);
        CHECK_THAT(load_error("job_ids", hostile), Catch::StartsWith("run.json: job_ids[0]: "));
    }
    CHECK_THAT(load_error("job_ids", "[\"" + std::string(100000, '7') + "\"]"),
               Catch::StartsWith("run.json: job_ids[0]: 100000 bytes"));
    CHECK_THAT(load_error("detached_job", R"("--user=root")"),
               Catch::StartsWith("run.json: detached_job: \"--user=root\": not a Slurm"));
    CHECK_THAT(load_error("scheduler", R"({"cancel_pending": "--user=root"})"),
               Catch::StartsWith("run.json: scheduler.cancel_pending: "));
    CHECK_THAT(load_error("scheduler", R"({"array_task": "1;2"})"), Catch::StartsWith("run.json: scheduler.array_task: "));
}

TEST_CASE("a TPU run's job ids are TPU names", "[run_record_input]") {
    CHECK(load_error("job_ids", R"(["ccl-tiny-llama-v5e"])", "tpu-vm").empty());
    CHECK_THAT(load_error("job_ids", R"(["--project=other"])", "tpu-vm"), Catch::StartsWith("run.json: job_ids[0]: "));
    CHECK_THAT(load_error("job_ids", R"(["Name With Spaces"])", "tpu-vm"), Catch::StartsWith("run.json: job_ids[0]: "));
    CHECK(tpu_name_problem("ccl-tiny").empty());
    CHECK_FALSE(tpu_name_problem(std::string(64, 'a')).empty());
}

TEST_CASE("run.json's states, executor and times are from their known sets", "[run_record_input]") {
    CHECK_THAT(load_error("executor", R"("kubernetes")"), Catch::StartsWith("run.json: executor: unknown executor"));
    CHECK(load_error("executor", R"("ingested")").empty()); // ingest's hand-made runs
    CHECK_THAT(load_error("transitions", R"([{"state": "exploded", "time": "2026-11-23T02:18:39Z"}])"),
               Catch::StartsWith("run.json: transitions[0].state: unknown state"));
    CHECK_THAT(load_error("transitions", R"([{"state": "running", "time": "yesterday"}])"),
               Catch::StartsWith("run.json: transitions[0].time: \"yesterday\" is not a UTC time"));
    CHECK_THAT(load_error("transitions", R"([{"state": "running", "time": "2026-13-23T02:18:39Z"}])"),
               Catch::StartsWith("run.json: transitions[0].time: "));
    CHECK(load_error("transitions", R"([{"state": "running", "time": "2026-11-23T02:18:39Z"}])").empty());
    CHECK_THAT(load_error("format", "2"), Catch::StartsWith("run.json: format: "));
}

TEST_CASE("run.json's names are bounded, without control characters, and stay inside the run", "[run_record_input]") {
    CHECK_THAT(load_error("target", "\"slurm\\u001b]0;pwned\\u0007\""), Catch::StartsWith("run.json: target: control character"));
    CHECK_THAT(load_error("card", R"("../../etc/passwd")"), Catch::StartsWith("run.json: card: "));
    CHECK_THAT(load_error("target", R"("/tmp/their-profile.yaml")"), Catch::StartsWith("run.json: target: "));
    CHECK_THAT(load_error("run_id", R"("a/b")"), Catch::StartsWith("run.json: run_id: "));
    CHECK_THAT(load_error("traces", R"(["../../.ssh/id_rsa"])"), Catch::StartsWith("run.json: traces[0]: "));
    CHECK_THAT(load_error("traces", R"(["/etc/shadow"])"), Catch::StartsWith("run.json: traces[0]: "));
    CHECK_THAT(load_error("ranks", R"([{"rank": 0, "log": "/etc/shadow"}])"), Catch::StartsWith("run.json: ranks[0].log: "));
    CHECK_THAT(load_error("ranks", R"([{"rank": -1}])"), Catch::StartsWith("run.json: ranks[0].rank: "));
    CHECK_THAT(load_error("ranks", R"([{"rank": 0, "seconds": "long"}])"), Catch::StartsWith("run.json: ranks[0].seconds: "));
    CHECK_THAT(load_error("harness", R"({"pid": 99999999999})"), Catch::StartsWith("run.json: harness.pid: "));
    CHECK_THAT(load_error("harness", R"("me")"), Catch::StartsWith("run.json: harness: "));
    CHECK_THAT(load_error("target", "\"" + std::string(5000, 'x') + "\""), Catch::StartsWith("run.json: target: 5000 bytes"));
    // A reason quotes log lines as the job wrote them (tqdm's carriage returns, colour codes): it
    // is only ever printed, escaped, so every character is kept; a name is never.
    CHECK(load_error("reason", R"("failed; last lines:\nTraceback\n\tline 3")").empty());
    CHECK(load_error("reason", "\"\\u001b[31merror\\u001b[0m 45%|\\r 46%|\"").empty());
}

TEST_CASE("run.json itself is a bounded regular file of the run directory", "[run_record_input]") {
    TempDir dir;
    const auto elsewhere = dir.write("elsewhere.json", R"({"state": "running"})");
    std::filesystem::create_directory(dir.path() / "run");
    std::filesystem::create_symlink(elsewhere, dir.path() / "run" / "run.json");
    CHECK_THROWS_WITH(RunRecord::load(dir.path() / "run"), Catch::StartsWith("run.json: a symbolic link"));
    dir.write("big/run.json", "{\"reason\": \"" + std::string(k_max_record_bytes, 'x') + "\"}");
    CHECK_THROWS_WITH(RunRecord::load(dir.path() / "big"),
                      Catch::StartsWith("run.json: ") && Catch::Contains("more than a record holds"));
}

TEST_CASE("a run directory's folders are its own", "[run_record_input]") {
    TempDir dir;
    dir.write("run/run.json", "{}");
    dir.write("run/rendered/card.yaml", "name: x\n");
    std::filesystem::create_directory(dir.path() / "run" / "logs");
    std::filesystem::create_directory(dir.path() / "outside");
    CHECK_NOTHROW(refuse_linked_entries(dir.path() / "run"));
    std::filesystem::create_directory_symlink(dir.path() / "outside", dir.path() / "run" / "traces");
    CHECK_THROWS_WITH(refuse_linked_entries(dir.path() / "run"),
                      Catch::EndsWith("traces/ is a symbolic link; a run directory's folders must be its own"));
    std::filesystem::remove(dir.path() / "run" / "traces");
    std::filesystem::create_directory_symlink(dir.path() / "outside", dir.path() / "run" / "rendered" / "logs");
    CHECK_THROWS_WITH(refuse_linked_entries(dir.path() / "run"), Catch::Contains("rendered/logs/ is a symbolic link"));
}

TEST_CASE("the Slurm client hands Slurm's tools only job ids", "[run_record_input]") {
    CHECK(slurm_job_id_problem("42").empty());
    CHECK(slurm_job_id_problem("916_12").empty());
    CHECK_FALSE(slurm_job_id_problem("--user=root").empty());
    CHECK_FALSE(slurm_job_id_problem("42\n").empty());
    CHECK_FALSE(slurm_job_id_problem(std::string(k_max_slurm_job_id_bytes + 1, '1')).empty());
    CHECK_FALSE(slurm_job_id_problem("12345678901").empty()); // past a 32-bit id, within the byte bound
}
