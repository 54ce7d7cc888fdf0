// SlurmClient and the follow loop against a scripted ProcessRunner: every command line the
// client runs must be the next one scripted, or the test fails. No slurmctld, no sleeping.
//
// The output formats are Slurm's own (SchedMD/slurm at 284c3b95f0):
//   scontrol show job -o   src/scontrol/info_job.c:171 (-o: fields joined by " " instead of
//                          "\n   "), :179 JobId=, :199 JobName= (free text), :234 JobState=,
//                          :236-242 Reason= (state_desc, white space replaced by '_'), :244 Reason=
//                          (job_state_reason_string: "Priority", src/common/job_state_reason.c:60),
//                          :254 Restarts=, :262 ExitCode=%u:%u, :296 RunTime=, :418 NodeList=,
//                          :773 Comment= (free text, spaces kept)
//   job state names        src/common/slurm_protocol_defs.c:2891-2945 (REQUEUED, NODE_FAIL...)
//   scontrol errors        src/scontrol/info_job.c:1486 slurm_perror("slurm_load_jobs error"),
//                          src/common/slurm_errno.c:186 "Unable to contact slurm controller
//                          (connect failure)", :289 "Invalid job id specified"
//   sbatch --parsable      src/sbatch/sbatch.c:349-351 "%u" then ";%s" with a cluster;
//                          :331 error("Batch job submission failed: %m")
//   sacct --parsable2      src/sacct/print.c:1963 "%s by %u" for a cancelled job's State
//   srun's task reports    src/srun/launch.c:316 _task_finish, :388 "%s: %s %s: Exited with exit
//                          code %d", :377 "Out Of Memory"; src/srun/allocate.c:157 "Node failure on
//                          %s". The batch outputs below are Slurm 22.05.8's on clusters/slurm-multi.
//   pending reasons        src/slurmctld/node_scheduler.c:2877 "ReqNodeNotAvail, UnavailableNodes:%s"
#include "run/slurm_client.hpp"
#include "run/slurm_job_end.hpp"
#include "scripted_runner.hpp"
#include "test_context.hpp"
#include "util/fs.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::ScriptedWaiter;
using harness::test::slurm_local_profile;

namespace {

/// One line of `scontrol show job -o`, shaped as info_job.c prints it.
std::string job_line(const std::string& state, const std::string& reason, int restarts = 0, const std::string& exit_code = "0:0",
                     const std::string& nodes = "localhost", const std::string& comment = "") {
    std::string line = "JobId=42 JobName=ccl bench UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 "
                       "Nice=0 Account=(null) QOS=normal JobState=" +
                       state + " Reason=" + reason + " Dependency=(null) Requeue=1 Restarts=" + std::to_string(restarts) +
                       " BatchFlag=1 Reboot=0 ExitCode=" + exit_code +
                       " RunTime=00:00:07 TimeLimit=00:10:00 TimeMin=N/A SubmitTime=2024-05-01T10:00:00 "
                       "EligibleTime=2024-05-01T10:00:00 AccrueTime=2024-05-01T10:00:00 Partition=gpu "
                       "AllocNode:Sid=localhost:123 ReqNodeList=(null) ExcNodeList=(null) NodeList=" +
                       nodes +
                       " BatchHost=localhost NumNodes=1 NumCPUs=128 NumTasks=4 CPUs/Task=32 "
                       "ReqB:S:C:T=0:0:*:* TRES=cpu=128,mem=500G,node=1,billing=128,gres/gpu=4 "
                       "Socks/Node=* Features=gpu DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 "
                       "Licenses=(null) Network=(null) Command=/runs/a b/rendered/launch.sh "
                       "WorkDir=/runs/a b/rendered";
    if (!comment.empty()) {
        line += " Comment=" + comment;
    }
    return line + " StdErr=/runs/a b/rendered/logs/ccl-42.out Power=\n";
}

const std::string k_query = "scontrol show job -o 42";
const std::string k_unreachable = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n";

/// Events as text, in the order the loop raised them.
struct Recorder {
    std::vector<std::string> events;

    SlurmFollowEvents hooks() {
        SlurmFollowEvents out;
        out.controller_unreachable = [this] { events.emplace_back("unreachable"); };
        out.requeued = [this](long long restarts) { events.push_back("requeued " + std::to_string(restarts)); };
        out.started = [this](const SlurmJob& job) { events.push_back("started on " + job.nodes); };
        out.state_changed = [this](const SlurmJob& job) { events.push_back(job.state + " (" + job.reason + ")"); };
        out.cancelling = [this] { events.emplace_back("cancelling"); };
        return out;
    }
};

} // namespace

TEST_CASE("scontrol's one-line output keeps values with spaces whole", "[slurm_client]") {
    const auto fields = parse_scontrol_job(job_line("RUNNING", "None", 0, "0:0", "nid[001-004]", "lr sweep, point 3 of 8"));
    CHECK(fields.at("JobName") == "ccl bench");
    CHECK(fields.at("JobState") == "RUNNING");
    CHECK(fields.at("Comment") == "lr sweep, point 3 of 8");
    CHECK(fields.at("Command") == "/runs/a b/rendered/launch.sh");
    CHECK(fields.at("WorkDir") == "/runs/a b/rendered");
    CHECK(fields.at("NodeList") == "nid[001-004]");
    CHECK(fields.at("AllocNode:Sid") == "localhost:123");
    CHECK(fields.at("Socks/Node") == "*");
    CHECK(fields.at("TRES") == "cpu=128,mem=500G,node=1,billing=128,gres/gpu=4");
    CHECK(fields.at("Power").empty());
    SECTION("a lower-case word=value inside a free-text value does not start a key") {
        const auto more = parse_scontrol_job("JobId=7 JobState=PENDING Reason=launch_failed_requeued_held "
                                             "Comment=try lr=3e-4 and bs=8 ExitCode=0:0");
        CHECK(more.at("Comment") == "try lr=3e-4 and bs=8");
        CHECK(more.at("Reason") == "launch_failed_requeued_held");
        CHECK(more.at("ExitCode") == "0:0");
    }
}

TEST_CASE("query reads state, reason, exit code, nodes and restarts", "[slurm_client]") {
    ScriptedRunner runner;
    runner.expect(k_query, job_line("REQUEUED", "BeginTime", 2, "0:15", "nid001", "needs a  retry"));
    const SlurmClient client(runner, slurm_local_profile());
    const SlurmJob job = client.query("42");
    CHECK(job.known);
    CHECK_FALSE(job.unreachable);
    CHECK(job.state == "REQUEUED");
    CHECK(job.reason == "BeginTime");
    CHECK(job.exit_code == "0:15");
    CHECK(job.nodes == "nid001");
    CHECK(job.restarts == 2);
    CHECK(job.elapsed == "00:00:07");
    // The profile's SLURM_CONF reaches the client tools.
    const auto& env = runner.seen().front().env;
    const auto conf = std::find_if(env.rbegin(), env.rend(), [](const auto& kv) { return kv.first == "SLURM_CONF"; });
    REQUIRE(conf != env.rend());
    CHECK(conf->second == "/tmp/ccl-harness-slurm-local/slurm.conf");
}

TEST_CASE("submit returns the job id, or sbatch's own message when it refuses", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    SECTION("accepted, with a federation cluster after the id") {
        runner.expect("sbatch --parsable /r/launch.sh", "42;perlmutter\n");
        const SlurmSubmission submitted = client.submit("/r/launch.sh", "/r", {{"CCL_RUN_DIR", "/r"}});
        CHECK(submitted.ok());
        CHECK(submitted.job_id == "42");
        CHECK(runner.seen().front().cwd == "/r");
        CHECK(runner.seen().front().env.back() == std::pair<std::string, std::string>("CCL_RUN_DIR", "/r"));
    }
    SECTION("refused") {
        runner.expect("sbatch --parsable /r/launch.sh",
                      "sbatch: error: Batch job submission failed: Invalid account or account/partition "
                      "combination specified\n",
                      1);
        const SlurmSubmission submitted = client.submit("/r/launch.sh", "/r", {});
        CHECK_FALSE(submitted.ok());
        CHECK(submitted.error == "sbatch: error: Batch job submission failed: Invalid account or "
                                 "account/partition combination specified");
    }
    CHECK(runner.done());
}

TEST_CASE("a pending job that runs and completes", "[slurm_client]") {
    ScriptedRunner runner;
    runner.expect(k_query, job_line("PENDING", "Priority", 0, "0:0", "(null)"))
        .expect(k_query, job_line("PENDING", "Priority", 0, "0:0", "(null)"))
        .expect(k_query, job_line("RUNNING", "None", 0, "0:0", "nid001"))
        .expect(k_query, job_line("COMPLETED", "None", 0, "0:0", "nid001"));
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    Recorder recorder;
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, recorder.hooks());
    CHECK(runner.done());
    CHECK(outcome.state == RunState::completed);
    CHECK(outcome.reason == "job 42 COMPLETED with exit code 0:0");
    CHECK(outcome.nodes == "nid001");
    CHECK(outcome.restarts == 0);
    CHECK(recorder.events ==
          std::vector<std::string>{"PENDING (Priority)", "started on nid001", "RUNNING (None)", "COMPLETED (None)"});
    // Backs off while nothing changes, back to 1 s on a change.
    CHECK(waiter.m_sleeps == std::vector<double>{1.0, 1.5, 1.0});
}

TEST_CASE("a requeued job is followed to its end and the requeue counted", "[slurm_client]") {
    ScriptedRunner runner;
    runner.expect(k_query, job_line("RUNNING", "None", 0, "0:0", "nid001"))
        .expect(k_query, job_line("REQUEUED", "BeginTime", 1, "0:0", "nid001"))
        .expect(k_query, job_line("PENDING", "BeginTime", 1, "0:0", "(null)"))
        .expect(k_query, job_line("RUNNING", "None", 1, "0:0", "nid002"))
        // A second requeue that came and went between two polls: only the count shows it.
        .expect(k_query, job_line("RUNNING", "None", 2, "0:0", "nid003"))
        .expect(k_query, job_line("COMPLETED", "None", 2, "0:0", "nid003"));
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    Recorder recorder;
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, recorder.hooks());
    CHECK(runner.done());
    CHECK(outcome.state == RunState::completed);
    CHECK(outcome.restarts == 2);
    CHECK(outcome.nodes == "nid003");
    CHECK(recorder.events == std::vector<std::string>{"started on nid001", "RUNNING (None)", "requeued 1", "REQUEUED (BeginTime)",
                                                      "PENDING (BeginTime)", "RUNNING (None)", "requeued 2", "COMPLETED (None)"});
}

TEST_CASE("final states: node failure, time limit, cancellation", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    SECTION("NODE_FAIL fails the run with the reason") {
        runner.expect(k_query, job_line("RUNNING", "None")).expect(k_query, job_line("NODE_FAIL", "NodeDown", 0, "0:9"));
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
        CHECK(outcome.state == RunState::failed);
        CHECK(outcome.slurm_state == "NODE_FAIL");
        CHECK(outcome.reason == "job 42 NODE_FAIL with exit code 0:9, reason NodeDown");
    }
    SECTION("TIMEOUT") {
        runner.expect(k_query, job_line("TIMEOUT", "TimeLimit", 0, "0:15"));
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
        CHECK(outcome.state == RunState::timeout);
        CHECK(outcome.reason == "job 42 TIMEOUT with exit code 0:15, reason TimeLimit");
    }
    SECTION("CANCELLED by someone else") {
        runner.expect(k_query, job_line("PENDING", "Priority")).expect(k_query, job_line("CANCELLED", "None", 0, "0:0", "(null)"));
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
        CHECK(outcome.state == RunState::cancelled);
        CHECK(outcome.reason == "job 42 CANCELLED with exit code 0:0");
        CHECK_FALSE(outcome.interrupted);
    }
    SECTION("Ctrl-C cancels the job once") {
        waiter.m_interrupt_at_poll = 1;
        runner.expect(k_query, job_line("RUNNING", "None"))
            .expect("scancel -- 42", "")
            .expect(k_query, job_line("COMPLETING", "None"))
            .expect(k_query, job_line("CANCELLED", "None", 0, "0:15"));
        Recorder recorder;
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, recorder.hooks());
        CHECK(outcome.state == RunState::cancelled);
        CHECK(outcome.interrupted);
        CHECK(outcome.reason == "interrupted; job 42 cancelled with scancel");
        CHECK(std::count(recorder.events.begin(), recorder.events.end(), "cancelling") == 1);
    }
    CHECK(runner.done());
}

TEST_CASE("an unreachable controller is waited out, never taken for a failure", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    Recorder recorder;
    SECTION("down for a few polls, then back") {
        runner.expect(k_query, job_line("RUNNING", "None"))
            .expect(k_query, k_unreachable, 1)
            .expect(k_query, k_unreachable, 1)
            .expect(k_query, k_unreachable, 1)
            .expect(k_query, job_line("RUNNING", "None"))
            .expect(k_query, job_line("COMPLETED", "None"));
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, recorder.hooks());
        CHECK(outcome.state == RunState::completed);
        // Said once per outage, not once per poll.
        CHECK(std::count(recorder.events.begin(), recorder.events.end(), "unreachable") == 1);
    }
    SECTION("down past the budget") {
        runner.expect(k_query, job_line("RUNNING", "None")).then_forever(k_query, k_unreachable, 1);
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, recorder.hooks());
        CHECK(outcome.state == RunState::failed);
        CHECK(outcome.reason == "slurm controller unreachable for 600 s while following job 42");
        CHECK(waiter.m_now - 1000 > 600);
        CHECK(waiter.m_now - 1000 < 620); // capped at 10 s per poll
    }
    CHECK(runner.done());
}

TEST_CASE("a job purged from the controller ends with sacct's state", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    const std::string gone = "slurm_load_jobs error: Invalid job id specified\n";
    const std::string sacct = "sacct -c -j 42 --parsable2 --noheader --format=State";
    SECTION("completed") {
        runner.expect(k_query, job_line("RUNNING", "None")).expect(k_query, gone, 1).expect(sacct, "COMPLETED\n");
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
        CHECK(outcome.state == RunState::completed);
        CHECK(outcome.reason == "job 42 ended COMPLETED");
    }
    SECTION("cancelled by a user") {
        runner.expect(k_query, gone, 1).expect(sacct, "CANCELLED by 0\n");
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
        CHECK(outcome.state == RunState::cancelled);
        CHECK(outcome.reason == "job 42 ended CANCELLED by 0");
    }
    SECTION("no record at all") {
        runner.expect(k_query, gone, 1).expect(sacct, "");
        const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
        CHECK(outcome.state == RunState::failed);
        CHECK(outcome.reason == "job 42 ended without a record");
    }
    CHECK(runner.done());
}

TEST_CASE("accounting falls back to the job completion file without slurmdbd", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    const std::string full = "sacct -j 42 --parsable2 "
                             "--format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES";
    runner.expect("scontrol show job 42", "JobId=42 JobName=ccl\n")
        .expect(full, "sacct: error: Problem talking to the database: Connection refused... disabled\n", 1)
        .expect("sacct -c -j 42 --parsable2", "JobID|State\n42|COMPLETED\n");
    const SlurmAccounting accounting = client.accounting("42");
    CHECK(accounting.source == "sacct -c");
    CHECK(accounting.sacct == "JobID|State\n42|COMPLETED\n");
    CHECK(accounting.scontrol == "JobId=42 JobName=ccl\n");
    CHECK(runner.done());
}

namespace {

/// A rank on node2 exited 1 under srun --kill-on-bad-exit=1 (job 74 on clusters/slurm-multi).
const std::string k_rank_failed = "srun: cluster configuration lacks support for cpu binding\n"
                                  "srun: error: node2: task 3: Exited with exit code 1\n"
                                  "srun: launch/slurm: _step_signal: Terminating StepId=74.0\n"
                                  "srun: error: node2: task 2: Terminated\n"
                                  "srun: error: node1: tasks 0-1: Terminated\n"
                                  "srun: Force Terminated StepId=74.0\n";

/// node2's slurmd killed -9 under a --no-requeue job (job 77).
const std::string k_node_failed =
    "srun: cluster configuration lacks support for cpu binding\n"
    "srun: error: Node failure on node2\n"
    "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
    "slurmstepd-node1: error: *** JOB 77 ON node1 CANCELLED AT 2026-11-24T09:33:39 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR "
    "DETAILS ***\n"
    "srun: got SIGCONT\n"
    "srun: forcing job termination\n"
    "srun: error: node1: tasks 0-1: Terminated\n"
    "srun: launch/slurm: _step_signal: Terminating StepId=77.0\n";

const std::string k_sacct_node_failed =
    "JobID|JobName|State|ExitCode|Elapsed|Start|End|NodeList|AllocCPUS|AllocTRES\n"
    "77|tiny-ddp-2x2|NODE_FAIL|0:0|00:00:36|2026-11-24T09:33:03|2026-11-24T09:33:39|node[1-2]|256|billing=256,cpu=256,node=2\n"
    "77.batch|batch|CANCELLED|0:15|00:00:36|2026-11-24T09:33:03|2026-11-24T09:33:39|node1|128|cpu=128,mem=0,node=1\n"
    "77.0|python3|CANCELLED|0:15|00:00:35|2026-11-24T09:33:04|2026-11-24T09:33:39|node[1-2]|256|cpu=256,mem=0,node=2\n";

} // namespace

TEST_CASE("srun's report names the failing task and node, then the ones it ended", "[slurm_client]") {
    const SrunReport report = parse_srun_report(k_rank_failed);
    REQUIRE(report.task_ends.size() == 3);
    CHECK(report.task_ends[0].nodes == "node2");
    CHECK(report.task_ends[0].tasks == "3");
    CHECK(report.task_ends[0].how == "Exited with exit code 1");
    CHECK(report.task_ends[2].nodes == "node1");
    CHECK(report.task_ends[2].tasks == "0-1");
    CHECK(report.task_ends[2].how == "Terminated");
    CHECK(report.failed_nodes.empty());
    SECTION("the first exit code is the cause even when a signal was reported before it") {
        const SrunReport signalled = parse_srun_report("srun: error: node1: task 0: Killed\n"
                                                       "srun: error: node[1-2]: tasks 1,3: Exited with exit code 2\n");
        const auto first = first_failed_task(signalled);
        REQUIRE(first);
        CHECK(first->tasks == "1,3");
        CHECK(first->nodes == "node[1-2]");
    }
    SECTION("a node failure") {
        const SrunReport node = parse_srun_report(k_node_failed);
        CHECK(node.failed_nodes == std::vector<std::string>{"node2"});
        REQUIRE(node.task_ends.size() == 1);
        CHECK(node.task_ends[0].how == "Terminated");
    }
    SECTION("nothing from srun") { CHECK_FALSE(first_failed_task(parse_srun_report("hello\nsrun: error: something else\n"))); }
}

TEST_CASE("sacct's parsable table reads by its header", "[slurm_client]") {
    const std::vector<SacctRow> rows = parse_sacct_rows(k_sacct_node_failed);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].job_id == "77");
    CHECK(rows[0].state == "NODE_FAIL");
    CHECK(rows[2].job_id == "77.0");
    CHECK(rows[2].exit_code == "0:15");
    CHECK(rows[2].nodes == "node[1-2]");
    SECTION("other columns, another order, a short row") {
        const auto other = parse_sacct_rows("State|JobID\nCANCELLED by 0|42\nFAILED\n");
        REQUIRE(other.size() == 2);
        CHECK(other[0].state == "CANCELLED by 0");
        CHECK(other[0].job_id == "42");
        CHECK(other[1].job_id.empty());
    }
    CHECK(parse_sacct_rows("").empty());
}

TEST_CASE("a failed job is described by its failing rank or node", "[slurm_client]") {
    const std::string steps = "JobID|State|ExitCode|NodeList\n74|FAILED|15:0|node[1-2]\n74.batch|FAILED|15:0|node1\n"
                              "74.0|CANCELLED|0:15|node[1-2]\n74.1|COMPLETED|0:0|node1\n";
    SECTION("a rank that exited 1") {
        CHECK(describe_job_failure(parse_srun_report(k_rank_failed), parse_sacct_rows(steps), true) ==
              "rank 3 on node2: Exited with exit code 1; step 74.0 CANCELLED with exit code 0:15 on node[1-2]");
    }
    SECTION("a launcher per node: tasks are not ranks") {
        CHECK(describe_job_failure(parse_srun_report(k_rank_failed), {}, false) == "srun task 3 on node2: Exited with exit code 1");
    }
    SECTION("a node failure: the tasks srun ended are not blamed") {
        CHECK(describe_job_failure(parse_srun_report(k_node_failed), parse_sacct_rows(k_sacct_node_failed), true) ==
              "node node2 failed (srun: Node failure on node2); step 77.0 CANCELLED with exit code 0:15 on node[1-2]");
    }
    SECTION("nothing to say") { CHECK(describe_job_failure({}, {}, true).empty()); }
}

TEST_CASE("submit passes sbatch options before the script", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    runner.expect("sbatch --parsable --no-requeue /r/launch.sh", "43\n");
    CHECK(client.submit("/r/launch.sh", "/r", {}, {"--no-requeue"}).job_id == "43");
    CHECK(runner.done());
}

TEST_CASE("a pending job's changing reason is said, each change once", "[slurm_client]") {
    ScriptedRunner runner;
    runner.expect(k_query, job_line("PENDING", "ReqNodeNotAvail,_UnavailableNodes:node2", 0, "0:0", "(null)"))
        .expect(k_query, job_line("PENDING", "ReqNodeNotAvail,_UnavailableNodes:node2", 0, "0:0", "(null)"))
        .expect(k_query, job_line("PENDING", "Resources", 0, "0:0", "(null)"))
        .expect(k_query, job_line("RUNNING", "None", 0, "0:0", "node[1-2]"))
        .expect(k_query, job_line("COMPLETED", "None", 0, "0:0", "node[1-2]"));
    const SlurmClient client(runner, slurm_local_profile());
    ScriptedWaiter waiter;
    Recorder recorder;
    follow_slurm_job(client, "42", waiter, 600, recorder.hooks());
    CHECK(runner.done());
    CHECK(recorder.events == std::vector<std::string>{"PENDING (ReqNodeNotAvail,_UnavailableNodes:node2)", "PENDING (Resources)",
                                                      "started on node[1-2]", "RUNNING (None)", "COMPLETED (None)"});
}

TEST_CASE("the nodes a pending job waits for, and why they are out", "[slurm_client]") {
    CHECK(unavailable_nodes("ReqNodeNotAvail,_UnavailableNodes:node2") == "node2");
    CHECK(unavailable_nodes("ReqNodeNotAvail,_UnavailableNodes:node[2-3]") == "node[2-3]");
    CHECK(unavailable_nodes("Resources").empty());
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    const std::string sinfo = "sinfo -h -R -n node[2-3] -o %n|%T|%E";
    SECTION("drained and down") {
        runner.expect(sinfo, "node2|drained|rack 4 maintenance | ticket 12\nnode3|down|Not responding\n");
        const auto reasons = client.node_reasons("node[2-3]");
        REQUIRE(reasons.size() == 2);
        CHECK(reasons[0].node == "node2");
        CHECK(reasons[0].state == "drained");
        CHECK(reasons[0].reason == "rack 4 maintenance | ticket 12");
        CHECK(reasons[1].reason == "Not responding");
    }
    SECTION("sinfo fails: nothing to add") {
        runner.expect(sinfo, "sinfo: error: Unable to contact slurm controller (connect failure)\n", 1);
        CHECK(client.node_reasons("node[2-3]").empty());
    }
    CHECK(runner.done());
}

TEST_CASE("a pending job's out-of-service nodes, however the scheduler names its reason", "[slurm_client]") {
    ScriptedRunner runner;
    const SlurmClient client(runner, slurm_local_profile());
    SlurmJob pending;
    pending.state = "PENDING";
    pending.partition = "regular";
    SECTION("ReqNodeNotAvail names the nodes") {
        pending.reason = "ReqNodeNotAvail,_UnavailableNodes:node2";
        runner.expect("sinfo -h -R -n node2 -o %n|%T|%E", "node2|drained|maintenance\n");
        REQUIRE(client.out_of_service(pending).size() == 1);
    }
    SECTION("too few usable nodes in the partition names none: the partition's are asked") {
        // src/slurmctld/job_scheduler.c:1747, as scontrol prints it (spaces made '_').
        pending.reason = "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions";
        runner.expect("sinfo -h -R -p regular -o %n|%T|%E", "node2|drained|maintenance\n");
        const auto nodes = client.out_of_service(pending);
        REQUIRE(nodes.size() == 1);
        CHECK(nodes[0].node == "node2");
        CHECK(nodes[0].reason == "maintenance");
    }
    SECTION("any other reason: no sinfo") {
        pending.reason = "Priority";
        CHECK(client.out_of_service(pending).empty());
    }
    CHECK(runner.done());
}

TEST_CASE("a job's end: the failure detail between the verdict and the batch log, a timeout final too", "[slurm_client]") {
    const test::TempDir tmp;
    const fs::path run_dir = tmp.path() / "run";
    fs::create_directories(run_dir / "rendered" / "logs");
    write_file_atomic(run_dir / "rendered" / "logs" / "ccl-42.out", "srun: error: node2: task 3: Exited with exit code 1\n");
    const std::string sacct = "JobID|State\n42|FAILED\n42.0|FAILED\n";
    const std::string k_sacct =
        "sacct -j 42 --parsable2 --format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES";
    ScriptedRunner runner;
    runner.expect("scontrol show job 42", "JobId=42 JobState=FAILED\n").expect(k_sacct, sacct);
    const SlurmClient client(runner, slurm_local_profile());
    RunRecord record;
    SlurmOutcome failed;
    failed.state = RunState::failed;
    failed.reason = "job 42 FAILED with exit code 1:0";
    std::string detail_saw;
    record_slurm_job_end(client, "42", failed, run_dir, record, SecretScrubber(),
                         [&detail_saw](const SlurmAccounting& accounting, const fs::path& output) {
                             detail_saw = accounting.sacct + output.filename().string();
                             return std::string("rank 3 on node2: Exited with exit code 1");
                         });
    CHECK(runner.done());
    CHECK(detail_saw == sacct + "ccl-42.out");
    CHECK(record.state == RunState::failed);
    CHECK(record.reason == "job 42 FAILED with exit code 1:0; rank 3 on node2: Exited with exit code 1; last lines of ccl-42.out:\n"
                           "srun: error: node2: task 3: Exited with exit code 1");
    CHECK(slurm_batch_output(run_dir / "rendered", "42") == run_dir / "rendered" / "logs" / "ccl-42.out");
    CHECK(slurm_batch_output(run_dir / "rendered", "43").empty());

    // No batch output and nothing to add: the verdict alone.
    ScriptedRunner again;
    again.expect("scontrol show job 43", "")
        .expect("sacct -j 43 --parsable2 --format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES", "");
    const SlurmClient other(again, slurm_local_profile());
    RunRecord timed_out;
    SlurmOutcome timeout;
    timeout.state = RunState::timeout;
    timeout.reason = "job 43 TIMEOUT with exit code 0:15";
    record_slurm_job_end(other, "43", timeout, run_dir, timed_out, SecretScrubber(),
                         [](const SlurmAccounting&, const fs::path&) { return std::string(); });
    CHECK(again.done());
    CHECK(timed_out.state == RunState::timeout);
    CHECK(timed_out.reason == "job 43 TIMEOUT with exit code 0:15");
}
