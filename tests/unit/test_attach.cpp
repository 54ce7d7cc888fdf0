// Detach and attach without a cluster: the follow loop left on a request to detach (SIGHUP,
// run --detach) without touching the job, and attach's refusals and its report of a run that had
// already ended, on run directories written here.
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "run/slurm_client.hpp"
#include "scripted_runner.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "workflows/attach_run.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sstream>
#include <sys/file.h>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::ScriptedWaiter;
using harness::test::TempDir;

namespace {

const std::string k_query = "scontrol show job -o 42";

std::string job_line(const std::string& state) {
    return "JobId=42 JobName=ccl JobState=" + state + " Reason=None Restarts=0 ExitCode=0:0 RunTime=00:00:03 NodeList=localhost\n";
}

/// A request to detach arrives before the chosen poll.
class DetachingWaiter : public ScriptedWaiter {
public:
    bool detached() override { return m_detach_at_poll >= 0 && m_detach_polls++ >= m_detach_at_poll; }

    int m_detach_at_poll = -1;
    int m_detach_polls = 0;
};

ClusterProfile slurm_profile() {
    ClusterProfile cluster;
    cluster.name = "slurm-local";
    return cluster;
}

/// A run directory holding only run.json, in `state`.
fs::path write_run(const TempDir& tmp, const std::string& id, const std::string& executor, RunState state,
                   const std::string& job = "42") {
    fs::path dir = tmp.path() / id;
    fs::create_directories(dir);
    RunRecord record;
    record.run_id = id;
    record.card = "tiny-ddp";
    record.target = executor == "slurm" ? "slurm-local" : "local";
    record.executor = executor;
    record.state = state;
    if (!job.empty()) {
        record.job_ids = {job};
        record.detached_job = job;
    }
    record.traces = {"kineto_trace_0.json", "kineto_trace_1.json"};
    record.save(dir);
    return dir;
}

int attach_exit_code(const fs::path& dir, std::string& message) {
    AttachOptions options;
    options.run_dir = dir;
    std::ostringstream out;
    try {
        attach_run(options, out);
    } catch (const HarnessError& error) {
        message = error.what();
        return error.code();
    }
    return 0;
}

} // namespace

TEST_CASE("a request to detach leaves the job to Slurm, never cancelled", "[attach]") {
    ScriptedRunner runner;
    runner.expect(k_query, job_line("PENDING")).expect(k_query, job_line("RUNNING"));
    const SlurmClient client(runner, slurm_profile());
    DetachingWaiter waiter;
    waiter.m_detach_at_poll = 2;
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
    CHECK(runner.done()); // two polls, no scancel
    CHECK(outcome.detached);
    CHECK_FALSE(outcome.interrupted);
    CHECK(outcome.reason == "detached from job 42");
}

TEST_CASE("run --detach returns before the first poll", "[attach]") {
    ScriptedRunner runner; // no command at all may run
    const SlurmClient client(runner, slurm_profile());
    DetachingWaiter waiter;
    waiter.m_detach_at_poll = 0;
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
    CHECK(outcome.detached);
    CHECK(runner.calls() == 0);
}

TEST_CASE("once Ctrl-C has cancelled the job, a hangup does not abandon the cancel", "[attach]") {
    ScriptedRunner runner;
    runner.expect("scancel -- 42").expect(k_query, job_line("RUNNING")).expect(k_query, job_line("CANCELLED"));
    const SlurmClient client(runner, slurm_profile());
    DetachingWaiter waiter;
    waiter.m_interrupt_at_poll = 0;
    waiter.m_detach_at_poll = 1; // after scancel went out
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
    CHECK(runner.done());
    CHECK_FALSE(outcome.detached);
    CHECK(outcome.interrupted);
    CHECK(outcome.state == RunState::cancelled);
}

TEST_CASE("attach reports a run that had ended and changes nothing", "[attach]") {
    TempDir tmp;
    const fs::path done = write_run(tmp, "tiny-ddp-20261124T000000Z-aaaaaa", "slurm", RunState::completed);
    write_file_atomic(tmp.path() / "tiny-ddp-20261124T000000Z-aaaaaa.tar.zst", "bundle bytes");
    const std::string before = read_file(done / run_files::k_record);
    AttachOptions options;
    options.run_dir = done;
    std::ostringstream out;
    const AttachOutcome outcome = attach_run(options, out);
    CHECK(outcome.already_final);
    CHECK(outcome.run.exit_code == 0);
    CHECK(outcome.job == "42");
    REQUIRE(outcome.run.bundle);
    CHECK(outcome.run.bundle->path.filename() == "tiny-ddp-20261124T000000Z-aaaaaa.tar.zst");
    CHECK(outcome.run.traces.size() == 2);
    CHECK(read_file(done / run_files::k_record) == before);
    CHECK(format_attach_outcome(outcome).find("had already ended; nothing changed") != std::string::npos);
    CHECK(attach_outcome_to_json(outcome).find("already_final")->as_bool());

    const fs::path failed = write_run(tmp, "tiny-ddp-20261124T000000Z-bbbbbb", "slurm", RunState::failed);
    options.run_dir = failed;
    CHECK(attach_run(options, out).run.exit_code == 1);
}

TEST_CASE("attach refuses what it cannot follow", "[attach]") {
    TempDir tmp;
    std::string message;
    SECTION("a directory that is not a run directory: input error") {
        CHECK(attach_exit_code(tmp.path(), message) == 2);
        CHECK(message.find("not a run directory") != std::string::npos);
        CHECK(attach_exit_code(tmp.path() / "absent", message) == 2);
    }
    SECTION("a local run: its ranks died with its harness") {
        const fs::path dir = write_run(tmp, "tiny-ddp-20261124T000000Z-cccccc", "local", RunState::running, "");
        CHECK(attach_exit_code(dir, message) == 1);
        CHECK(message.find("no job to attach to") != std::string::npos);
    }
    SECTION("a Slurm run never submitted") {
        const fs::path dir = write_run(tmp, "tiny-ddp-20261124T000000Z-dddddd", "slurm", RunState::rendered, "");
        CHECK(attach_exit_code(dir, message) == 1);
        CHECK(message.find("never submitted") != std::string::npos);
    }
    SECTION("a run another attach holds") {
        const fs::path dir = write_run(tmp, "tiny-ddp-20261124T000000Z-eeeeee", "slurm", RunState::running);
        // flock locks belong to the open file description: another open of the directory, as
        // another process's would be, conflicts with it.
        const Fd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        REQUIRE(::flock(held.get(), LOCK_EX | LOCK_NB) == 0);
        CHECK(attach_exit_code(dir, message) == 1);
        CHECK(message.find("another `ccl-harness attach`") != std::string::npos);
    }
    SECTION("a run its harness still follows") {
        const fs::path dir = write_run(tmp, "tiny-ddp-20261124T000000Z-ffffff", "slurm", RunState::running);
        RunRecord record = RunRecord::load(dir);
        record.claim(); // this very process: alive
        record.save(dir);
        CHECK(attach_exit_code(dir, message) == 1);
        CHECK(message.find("still follows this run") != std::string::npos);
    }
}

TEST_CASE("only a detached outcome carries the attach command", "[attach]") {
    RunOutcome outcome;
    outcome.run_id = "tiny-ddp-x";
    outcome.run_dir = "/results/tiny-ddp x";
    outcome.state = RunState::submitted;
    CHECK(run_outcome_to_json(outcome).find("attach") == nullptr);
    outcome.detached_job = "42";
    const Json json = run_outcome_to_json(outcome);
    CHECK(json.find("detached_job")->as_string() == "42");
    CHECK(json.find("attach")->as_string() == "ccl-harness attach '/results/tiny-ddp x'");
    CHECK(format_run_outcome(outcome) == "run tiny-ddp-x submitted: detached from Slurm job 42, which goes on\n"
                                         "  run directory: /results/tiny-ddp x\n"
                                         "  follow it to the end with: ccl-harness attach '/results/tiny-ddp x'\n");
}
