// Slurm job arrays for sweeps (run/slurm_array) against a scripted ProcessRunner: every command
// line must be the next one scripted. No slurmctld, no sleeping.
//
// The shapes are Slurm 22.05's own, as scontrol printed them on clusters/slurm-local for
// `sbatch --array=0-3%2`: a task split out of the array prints its own JobId and index,
//   JobId=917 ArrayJobId=916 ArrayTaskId=0 ... JobState=RUNNING Reason=None ... ExitCode=0:0
// and the remainder still pending as a whole prints the array's id and the index list with its
// throttle (src/api/job_info.c slurm_sprint_job_info: "ArrayJobId=%u ArrayTaskId=%s" from
// array_task_str, then "ArrayTaskThrottle=%u"),
//   JobId=916 ArrayJobId=916 ArrayTaskId=1-3%2 ArrayTaskThrottle=2 ... JobState=PENDING Reason=Resources
// squeue prints the same as 916_0 and 916_[1-3%2] (%i).
#include "run/slurm_array.hpp"
#include "scripted_runner.hpp"
#include "test_context.hpp"
#include "util/fs.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::ScriptedWaiter;
using harness::test::slurm_local_profile;

namespace {

std::string task_line(const std::string& job, const std::string& tasks, const std::string& state, const std::string& reason = "None",
                      const std::string& exit_code = "0:0") {
    return "JobId=" + job + " ArrayJobId=916 ArrayTaskId=" + tasks +
           " ArrayTaskThrottle=2 JobName=tiny-ddp UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901685 Nice=0 "
           "Account=(null) QOS=(null) JobState=" +
           state + " Reason=" + reason + " Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=" + exit_code +
           " RunTime=00:00:03 TimeLimit=00:10:00 Partition=regular NodeList=localhost Command=/runs/s w/array-1.sbatch "
           "WorkDir=/runs/s w\n";
}

const std::string k_query = "scontrol show job -o 916";

} // namespace

TEST_CASE("array index lists fold runs and parse back", "[slurm_array]") {
    CHECK(array_index_list({0, 1, 2, 3, 4, 5}) == "0-5");
    CHECK(array_index_list({5, 1, 3, 4, 3}) == "1,3-5");
    CHECK(array_index_list({7}) == "7");
    CHECK(parse_array_indices("0-3%2") == std::vector<std::size_t>{0, 1, 2, 3});
    CHECK(parse_array_indices("[1,3-4]") == std::vector<std::size_t>{1, 3, 4});
    CHECK(parse_array_indices("0-6:3") == std::vector<std::size_t>{0, 3, 6});
    CHECK(parse_array_indices("12") == std::vector<std::size_t>{12});
    CHECK_THROWS(parse_array_indices("3-1"));
    CHECK_THROWS(parse_array_indices("a-b"));
    CHECK_THROWS(parse_array_indices("0-4294967294"));
    CHECK_THROWS(parse_array_indices("0-99", 10));
}

TEST_CASE("scontrol's array records: split tasks and the pending remainder", "[slurm_array]") {
    const ArrayView view = parse_array_view(
        task_line("917", "0", "RUNNING") + task_line("918", "2", "FAILED", "NonZeroExitCode", "3:0") +
            task_line("916", "3-4%2", "PENDING", "Resources") + "JobId=99 JobName=other JobState=RUNNING\n",
        "916");
    CHECK(view.known);
    REQUIRE(view.tasks.size() == 4);
    CHECK(view.tasks[0].index == 0);
    CHECK(view.tasks[0].job_id == "917");
    CHECK(view.tasks[1].exit_code == "3:0");
    CHECK(view.tasks[1].reason == "NonZeroExitCode");
    CHECK(view.tasks[2].index == 3);
    CHECK(view.tasks[2].job_id.empty()); // still the array's: no job of its own yet
    CHECK(view.tasks[3].index == 4);
    CHECK(view.tasks[3].state == "PENDING");
}

TEST_CASE("the wrapper keeps the geometry and maps indices to run directories", "[slurm_array]") {
    const std::string launch = "#!/bin/bash\n# comment\n#SBATCH --job-name=tiny-ddp\n#SBATCH --time=00:10:00\n#SBATCH --nodes=1\n"
                               "#SBATCH --output=logs/%x-%j.out\nset -e\n#SBATCH --late=ignored\n";
    const auto directives = sbatch_directives_of(launch);
    CHECK(directives == std::vector<std::string>{"--job-name=tiny-ddp", "--time=00:10:00", "--nodes=1", "--output=logs/%x-%j.out"});
    CHECK(array_geometry_key(directives) == "--time=00:10:00\n--nodes=1");
    CHECK(array_geometry_key({"--job-name=x", "--time=00:10:00", "--nodes=2"}) != array_geometry_key(directives));
    const std::string wrapper = array_wrapper_script(directives, {{0, "/r/a"}, {3, "/r/it's b"}}, "launch.sbatch", "tiny-ddp");
    CHECK(wrapper.find("#SBATCH --nodes=1\n") != std::string::npos);
    CHECK(wrapper.find("%x-%j") == std::string::npos);
    CHECK(wrapper.find("#SBATCH --output=logs/%x-%A_%a.out\n") != std::string::npos);
    CHECK(wrapper.find("[3]='/r/it'\\''s b'") != std::string::npos);
    CHECK(wrapper.find("logs/tiny-ddp-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.out") != std::string::npos);
}

TEST_CASE("sbatch --array with a throttle, and its refusal", "[slurm_array]") {
    ScriptedRunner runner;
    runner.expect("sbatch --parsable --array=0-2,5%2 /s/array-1.sbatch", "916\n")
        .expect("sbatch --parsable --array=1 /s/array-2.sbatch",
                "sbatch: error: Batch job submission failed: Invalid job array specification\n", 1);
    const SlurmArrayClient arrays(runner, slurm_local_profile());
    CHECK(arrays.submit("/s/array-1.sbatch", "/s", {}, {0, 1, 2, 5}, 2).job_id == "916");
    const SlurmSubmission refused = arrays.submit("/s/array-2.sbatch", "/s", {}, {1}, 0);
    CHECK_FALSE(refused.ok());
    CHECK(refused.error.find("Invalid job array") != std::string::npos);
    CHECK(runner.done());
}

TEST_CASE("one scontrol call per poll follows every task; a failed task stops none", "[slurm_array]") {
    ScriptedRunner runner;
    runner.expect(k_query, task_line("916", "0-2%2", "PENDING", "Resources"))
        .expect(k_query, task_line("917", "0", "RUNNING") + task_line("918", "1", "FAILED", "NonZeroExitCode", "3:0") +
                             task_line("916", "2", "PENDING", "JobArrayTaskLimit"))
        .expect(k_query, task_line("917", "0", "COMPLETED") + task_line("918", "1", "FAILED", "NonZeroExitCode", "3:0") +
                             task_line("916", "2", "RUNNING"))
        // Task 0 and 1 aged out (MinJobAge) before the last poll: they were already done.
        .expect(k_query, task_line("916", "2", "COMPLETED"));
    const SlurmArrayClient arrays(runner, slurm_local_profile());
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    std::vector<std::string> events;
    ArrayFollowEvents on;
    on.started = [&](const std::string& array, const ArrayTask& task) {
        events.push_back("started " + array + "_" + std::to_string(task.index));
    };
    on.done = [&](const std::string& array, std::size_t index, const SlurmOutcome& outcome) {
        events.push_back("done " + array + "_" + std::to_string(index) + " " + to_string(outcome.state));
    };
    const auto results = follow_slurm_arrays(arrays, client, {{"916", {0, 1, 2}}}, waiter, 600, on);
    CHECK(runner.done());
    CHECK(runner.calls() == 4); // one per poll for three tasks
    REQUIRE(results.size() == 3);
    CHECK(results.at(0).state == RunState::completed);
    CHECK(results.at(1).state == RunState::failed);
    CHECK(results.at(1).reason == "job 916_1 FAILED with exit code 3:0, reason NonZeroExitCode");
    CHECK(results.at(2).state == RunState::completed);
    CHECK(events == std::vector<std::string>{"started 916_0", "started 916_1", "done 916_1 failed", "done 916_0 completed",
                                             "started 916_2", "done 916_2 completed"});
}

TEST_CASE("a task gone from the controller takes its end from the completion log", "[slurm_array]") {
    ScriptedRunner runner;
    runner.expect(k_query, task_line("917", "0", "RUNNING") + task_line("916", "1-2", "PENDING", "Resources"))
        .expect(k_query, "slurm_load_jobs error: Invalid job id specified\n", 1)
        .expect("sacct -c -j 917 --parsable2 --noheader --format=State", "COMPLETED\n");
    const SlurmArrayClient arrays(runner, slurm_local_profile());
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    const auto results = follow_slurm_arrays(arrays, client, {{"916", {0, 1, 2}}}, waiter, 600, {});
    CHECK(runner.done());
    CHECK(results.at(0).state == RunState::completed);
    CHECK(results.at(2).state == RunState::failed);
    CHECK(results.at(1).state == RunState::failed); // never split out: no job id to ask about
    CHECK(results.at(1).reason == "job 916_1 ended without a record");
}

TEST_CASE("Ctrl-C cancels the array once; an unreachable controller is not a failure until the budget", "[slurm_array]") {
    ScriptedRunner runner;
    runner.expect(k_query, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n", 1)
        .expect(k_query, task_line("917", "0", "RUNNING"))
        .expect("scancel -- 916", "")
        .expect(k_query, task_line("917", "0", "CANCELLED", "None", "0:15"));
    const SlurmArrayClient arrays(runner, slurm_local_profile());
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    waiter.m_interrupt_at_poll = 2;
    int unreachable = 0;
    ArrayFollowEvents on;
    on.controller_unreachable = [&] { ++unreachable; };
    const auto results = follow_slurm_arrays(arrays, client, {{"916", {0}}}, waiter, 600, on);
    CHECK(runner.done());
    CHECK(unreachable == 1);
    CHECK(results.at(0).state == RunState::cancelled);
    CHECK(results.at(0).interrupted);

    ScriptedRunner down;
    for (int i = 0; i < 8; ++i) {
        down.expect(k_query, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n", 1);
    }
    const SlurmArrayClient lost(down, slurm_local_profile());
    const SlurmClient lost_client(down, slurm_local_profile());
    ScriptedWaiter slow;
    const auto failed = follow_slurm_arrays(lost, lost_client, {{"916", {0, 1}}}, slow, 30, {});
    CHECK(failed.at(0).state == RunState::failed);
    CHECK(failed.at(1).reason.find("unreachable for 30 s") != std::string::npos);
}

TEST_CASE("an array task's end: accounting files, the batch log's last lines, the final state", "[slurm_array]") {
    const test::TempDir tmp;
    const fs::path run_dir = tmp.path() / "run";
    fs::create_directories(run_dir / "rendered" / "logs");
    std::string log;
    for (int i = 1; i <= 12; ++i) {
        log += "line " + std::to_string(i) + (i == 12 ? " token=s3cr3t-value" : "") + "\n";
    }
    write_file_atomic(run_dir / "rendered" / "logs" / "tiny-ddp-916_1.out", log);
    const std::string sacct = "JobID|State\n916_1|FAILED\n916_1.batch|FAILED\n";
    ScriptedRunner runner;
    runner.expect("scontrol show job 916_1", "JobId=918 ArrayJobId=916 ArrayTaskId=1 JobState=FAILED Comment=s3cr3t-value\n")
        .expect("sacct -j 916_1 --parsable2 --format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES",
                sacct);
    const SlurmClient client(runner, slurm_local_profile());
    SecretScrubber secrets;
    secrets.add("s3cr3t-value");
    RunRecord record;
    SlurmOutcome failed;
    failed.state = RunState::failed;
    failed.nodes = "node2";
    failed.reason = "job 916_1 FAILED with exit code 3:0";
    record_array_task_end(client, "916_1", failed, run_dir, record, secrets);
    CHECK(runner.done());
    CHECK(record.state == RunState::failed);
    CHECK(record.reason.rfind("job 916_1 FAILED with exit code 3:0; last lines of tiny-ddp-916_1.out:\nline 3\n", 0) == 0);
    CHECK(record.reason.find("line 2\n") == std::string::npos);
    CHECK(record.reason.find("s3cr3t-value") == std::string::npos);
    CHECK(record.scheduler["array_task"].as_string() == "916_1");
    CHECK(record.scheduler["nodes"].as_string() == "node2");
    CHECK(record.scheduler["accounting"]["source"].as_string() == "sacct");
    CHECK(read_file(run_dir / "accounting" / "sacct.txt") == sacct);
    CHECK(read_file(run_dir / "accounting" / "scontrol.txt").find("s3cr3t-value") == std::string::npos);
    CHECK(RunRecord::load(run_dir).state == RunState::failed);

    // A completed task stays open (collection decides), its reason kept, no log lines added.
    ScriptedRunner again;
    again.expect("scontrol show job 916_0", "JobId=917 JobState=COMPLETED\n")
        .expect("sacct -j 916_0 --parsable2 --format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES",
                sacct);
    const SlurmClient done_client(again, slurm_local_profile());
    RunRecord running;
    running.state = RunState::running;
    SlurmOutcome completed;
    completed.state = RunState::completed;
    completed.reason = "job 916_0 COMPLETED with exit code 0:0";
    record_array_task_end(done_client, "916_0", completed, run_dir, running, secrets);
    CHECK(again.done());
    CHECK(running.state == RunState::running);
    CHECK(running.reason == "job 916_0 COMPLETED with exit code 0:0");
}
