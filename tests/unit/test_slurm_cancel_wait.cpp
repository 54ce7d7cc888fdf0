// The wait after scancel: bounded, and ended by the next Ctrl-C or SIGTERM, for one job and for
// job arrays, so a job stuck in COMPLETING (or a cancel that did not take) never holds a person.
#include "run/slurm_array.hpp"
#include "run/slurm_client.hpp"
#include "scripted_runner.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::ScriptedWaiter;
using harness::test::slurm_local_profile;

namespace {

/// Counts Ctrl-Cs: the first before the first poll, another after `second_after_sleeps` sleeps
/// (never when negative).
class CountingWaiter : public ScriptedWaiter {
public:
    explicit CountingWaiter(int second_after_sleeps) : m_second_after(second_after_sleeps) { m_interrupt_at_poll = 0; }
    void sleep(double seconds, bool wake_on_interrupt) override {
        ScriptedWaiter::sleep(seconds, wake_on_interrupt);
        if (m_second_after >= 0 && static_cast<int>(m_sleeps.size()) >= m_second_after) {
            m_count = 2;
        }
    }
    int interrupt_count() override { return m_count; }

private:
    int m_second_after;
    int m_count = 1;
};

const std::string k_completing = "JobId=42 JobState=COMPLETING Reason=None ExitCode=0:0 RunTime=00:00:07 NodeList=localhost\n";

} // namespace

TEST_CASE("a second Ctrl-C ends the wait after scancel, the cancel left pending", "[slurm_cancel_wait]") {
    ScriptedRunner runner;
    runner.expect("scancel -- 42").then_forever("scontrol show job -o 42", k_completing);
    const SlurmClient client(runner, slurm_local_profile());
    CountingWaiter waiter(3);
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
    CHECK(outcome.cancel_pending);
    CHECK_FALSE(outcome.detached);
    CHECK(outcome.reason == "interrupted; scancel sent to job 42, which had not ended when the harness stopped waiting (interrupted "
                            "again): cancel pending");
    CHECK(waiter.m_sleeps.size() == 3); // no poll after the second Ctrl-C
}

TEST_CASE("the wait after scancel is bounded", "[slurm_cancel_wait]") {
    ScriptedRunner runner;
    runner.expect("scancel -- 42").then_forever("scontrol show job -o 42", k_completing);
    const SlurmClient client(runner, slurm_local_profile());
    CountingWaiter waiter(-1);
    const double start = waiter.now();
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {}, 30);
    CHECK(outcome.cancel_pending);
    CHECK(outcome.reason == "interrupted; scancel sent to job 42, which had not ended when the harness stopped waiting (after 30 s): "
                            "cancel pending");
    CHECK(waiter.now() - start <= 30 + 10);
    CHECK(k_cancel_wait_seconds <= 300);
}

TEST_CASE("a job that ends after scancel is cancelled, not pending", "[slurm_cancel_wait]") {
    ScriptedRunner runner;
    runner.expect("scancel -- 42")
        .expect("scontrol show job -o 42", k_completing)
        .expect("scontrol show job -o 42", "JobId=42 JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=localhost\n");
    const SlurmClient client(runner, slurm_local_profile());
    CountingWaiter waiter(-1);
    const SlurmOutcome outcome = follow_slurm_job(client, "42", waiter, 600, {});
    CHECK_FALSE(outcome.cancel_pending);
    CHECK(outcome.state == RunState::cancelled);
    CHECK(runner.done());
}

TEST_CASE("a second Ctrl-C ends a job array's wait after scancel (exit 130)", "[slurm_cancel_wait]") {
    ScriptedRunner runner;
    runner.expect("scancel -- 916")
        .then_forever("scontrol show job -o 916", "JobId=917 ArrayJobId=916 ArrayTaskId=0 JobState=COMPLETING Reason=None "
                                                  "ExitCode=0:0 NodeList=localhost\n");
    const SlurmArrayClient arrays(runner, slurm_local_profile());
    const SlurmClient client(runner, slurm_local_profile());
    CountingWaiter waiter(2);
    try {
        follow_slurm_arrays(arrays, client, {{"916", {0}}}, waiter, 600, {});
        FAIL("the wait went on");
    } catch (const HarnessError& error) {
        CHECK(error.code() == k_exit_interrupted);
        CHECK_THAT(std::string(error.what()), Catch::Contains("916_0") && Catch::Contains("cancel pending"));
    }
}

TEST_CASE("the Slurm client refuses to pass what is not a job id", "[slurm_cancel_wait]") {
    ScriptedRunner runner; // any command run fails the test
    const SlurmClient client(runner, slurm_local_profile());
    CHECK_THROWS_WITH(client.cancel("--user=root"), Catch::StartsWith("job id \"--user=root\": not a Slurm job id"));
    CHECK_THROWS_AS(client.query("42\n43"), HarnessError);
    CHECK_THROWS_AS(client.completed_state("--help"), HarnessError);
    CHECK_THROWS_AS(client.accounting(std::string(100000, '9')), HarnessError);
    const SlurmArrayClient arrays(runner, slurm_local_profile());
    CHECK_THROWS_AS(arrays.query("-u root"), HarnessError);
    CHECK(runner.calls() == 0);
}
