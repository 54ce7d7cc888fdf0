// The failure classes over real last words: each excerpt is the framework's own message, in the
// shape its source writes it (docs/failures.md cites each source).
#include "run/failure_class.hpp"
#include "run/run_record.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/json.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

using namespace harness;
using harness::test::TempDir;

namespace {

/// A job that failed with rank 1 exiting 1, `log` being rank 1's log.
FailureFacts failed_with(const std::string& log, int code = 1) {
    FailureFacts facts;
    facts.state = "failed";
    facts.ranks = {{"rank_0", 0, 0}, {"rank_1", code, 0}};
    facts.logs = {{"logs/rank_1.log", "step 1 loss 2.31\n" + log + "\n"}};
    facts.reason = "rank_1 ended with exit " + std::to_string(code);
    return facts;
}

std::string class_of(const std::string& log, int code = 1) { return classify_failure(failed_with(log, code)).name; }

} // namespace

TEST_CASE("failure class: device memory, from PyTorch, XLA and vLLM") {
    // c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate ", size, ". GPU ", ...
    CHECK(class_of("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
                   "79.10 GiB of which 3.06 GiB is free.") == "out_of_memory_device");
    CHECK(class_of("torch.OutOfMemoryError: simulated") == "out_of_memory_device");
    // maxtext train_compile.py:310 quotes XLA's status as JAX raises it.
    CHECK(class_of("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Allocation (size=34359738368) would exceed memory "
                   "(size=17179869184)") == "out_of_memory_device");
    // vLLM raise_if_cache_size_invalid.
    CHECK(class_of("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                   "initializing the engine.") == "out_of_memory_device");
    const FailureClass decided = classify_failure(failed_with("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"));
    CHECK(decided.evidence.find("logs/rank_1.log: \"torch.OutOfMemoryError: CUDA out of memory.") == 0);
    CHECK(decided.evidence.find("CUDACachingAllocator.cpp") != std::string::npos);
}

TEST_CASE("failure class: host memory, from Slurm's state and its cgroup plugin") {
    // task_cgroup_memory.c:291.
    CHECK(class_of("slurmstepd: error: Detected 1 oom_kill event in StepId=77.0. Some of the step tasks have been OOM Killed.", 137) ==
          "out_of_memory_host");
    FailureFacts facts = failed_with("", 137);
    facts.scheduler_state = "OUT_OF_MEMORY";
    CHECK(classify_failure(facts).name == "out_of_memory_host");
    CHECK(classify_failure(facts).evidence == "Slurm state OUT_OF_MEMORY");
    // SIGKILL alone is no proof of the OOM killer.
    const FailureClass killed = classify_failure(failed_with("Killed", 137));
    CHECK(killed.name == "unknown");
    CHECK(killed.evidence.find("rank_1 exit 137") != std::string::npos);
}

TEST_CASE("failure class: collective timeouts from NCCL's watchdog and gloo") {
    // ProcessGroupNCCL.cpp WorkNCCL::checkTimeout: "[Rank ", rank_, "] ", "Watchdog caught collective operation timeout: ", ...
    CHECK(class_of("[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation "
                   "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran "
                   "for 600081 milliseconds before timing out.") == "collective_timeout");
    // gloo/transport/tcp/pair.cc and unbound_buffer.cc.
    CHECK(class_of("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                   "[127.0.0.1]:58054") == "collective_timeout");
    CHECK(class_of("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for "
                   "recv operation to complete") == "collective_timeout");
}

TEST_CASE("failure class: a root cause outranks its symptoms on the other ranks") {
    FailureFacts facts = failed_with("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
                                     "peer [127.0.0.1]:58054");
    facts.logs.emplace_back("logs/rank_0.log", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB\n");
    const FailureClass decided = classify_failure(facts);
    CHECK(decided.name == "out_of_memory_device");
    CHECK(decided.evidence.find("logs/rank_0.log") == 0);
}

TEST_CASE("failure class: rendezvous failures from torch.distributed and ZMQ") {
    CHECK(class_of("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError") == "rendezvous_failure");
    CHECK(class_of("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
                   "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use") == "rendezvous_failure");
    CHECK(class_of("zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5557')") == "rendezvous_failure");
}

TEST_CASE("failure class: argparse's refusals and exit 2") {
    // Lib/argparse.py:1876 and :2633; :2557.
    CHECK(class_of("usage: pretrain_gpt.py [-h] [--num-layers NUM_LAYERS]\npretrain_gpt.py: error: unrecognized arguments: "
                   "--micro-batch 1",
                   2) == "framework_refused_flag");
    CHECK(class_of("vllm: error: argument --dtype: invalid choice: 'fp7' (choose from 'auto', 'half', 'bfloat16')", 2) ==
          "framework_refused_flag");
    const FailureClass two = classify_failure(failed_with("something went wrong", 2));
    CHECK(two.name == "framework_refused_flag");
    CHECK(two.evidence.find("rank_1 exit 2") == 0);
}

TEST_CASE("failure class: Slurm's states and slurmstepd's verdicts") {
    // req.c:1122, 1126, 1130; step_launch.c:1670.
    CHECK(class_of("slurmstepd: error: *** JOB 77 ON node1 CANCELLED AT 2026-11-24T09:33:39 DUE TO TIME LIMIT ***") == "time_limit");
    CHECK(class_of("slurmstepd: error: *** JOB 77 ON node1 CANCELLED AT 2026-11-24T09:33:39 DUE TO NODE FAILURE, SEE SLURMCTLD "
                   "LOG FOR DETAILS ***") == "node_failure");
    CHECK(class_of("srun: error: Task launch for StepId=77.0 failed on node node2: Communication connection failure") ==
          "launch_failure");
    CHECK(class_of("nothing known", 233) == "launch_failure");
    for (const auto& [state, expected] : std::vector<std::pair<std::string, std::string>>{{"NODE_FAIL", "node_failure"},
                                                                                          {"BOOT_FAIL", "node_failure"},
                                                                                          {"TIMEOUT", "time_limit"},
                                                                                          {"DEADLINE", "time_limit"},
                                                                                          {"PREEMPTED", "preempted"}}) {
        FailureFacts facts = failed_with("torch.OutOfMemoryError: CUDA out of memory.");
        facts.scheduler_state = state;
        CHECK(classify_failure(facts).name == expected);
    }
    FailureFacts preempted = failed_with("slurmstepd: error: *** JOB 77 ON node1 CANCELLED AT 2026-11-24T09:33:39 DUE TO "
                                         "PREEMPTION ***");
    preempted.state = "cancelled";
    preempted.scheduler_state = "CANCELLED";
    CHECK(classify_failure(preempted).name == "preempted");
}

TEST_CASE("failure class: cancelled, timed out, and the harness's own steps") {
    FailureFacts cancelled = failed_with("KeyboardInterrupt");
    cancelled.state = "cancelled";
    cancelled.reason = "interrupted by Ctrl-C (SIGINT)";
    CHECK(classify_failure(cancelled).name == "cancelled");
    CHECK(classify_failure(cancelled).evidence == "state cancelled: \"interrupted by Ctrl-C (SIGINT)\"");
    FailureFacts timeout = failed_with("");
    timeout.state = "timeout";
    CHECK(classify_failure(timeout).name == "time_limit");
    for (const auto& [stage, expected] :
         std::vector<std::pair<FailureStage, std::string>>{{FailureStage::image, "image_failure"},
                                                           {FailureStage::preflight, "framework_refused_flag"},
                                                           {FailureStage::submission, "launch_failure"},
                                                           {FailureStage::traces, "missing_traces"}}) {
        FailureFacts facts = failed_with("");
        facts.stage = stage;
        facts.reason = "what the harness said\nsecond line";
        CHECK(classify_failure(facts).name == expected);
        CHECK(classify_failure(facts).evidence.find("\"what the harness said\"") != std::string::npos);
    }
    CHECK(class_of("Error: initializing source docker://docker.io/library/nosuch:latest: reading manifest latest in "
                   "docker.io/library/nosuch: requested access to the resource is denied") == "image_failure");
}

TEST_CASE("failure class: unknown says what was looked at") {
    const FailureClass decided = classify_failure(failed_with("rank 1: simulated crash", 3));
    CHECK(decided.name == "unknown");
    CHECK(decided.evidence == "state failed; rank_1 exit 3; no known signature in 2 line(s) of 1 log(s) and the reason");
    FailureFacts nothing;
    nothing.state = "failed";
    CHECK(classify_failure(nothing).name == "unknown");
}

TEST_CASE("failure class: every class and signature is in docs/failures.md, and no other class") {
    std::ifstream in(std::string(CCL_HARNESS_SOURCE_DIR) + "/docs/failures.md");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    for (const FailureClassInfo& info : failure_classes()) {
        INFO(info.name);
        CHECK(doc.find(std::string("| `") + info.name + "` | ") != std::string::npos);
        CHECK(is_failure_class(info.name));
    }
    for (const FailureSignature& signature : failure_signatures()) {
        INFO(signature.text);
        CHECK(is_failure_class(signature.failure_class));
        CHECK(doc.find(std::string("| `") + signature.failure_class + "` | `" + signature.text + "`") != std::string::npos);
    }
    // Every row of the doc's tables names a class of the code.
    std::size_t at = 0;
    while ((at = doc.find("\n| `", at)) != std::string::npos) {
        at += 4;
        const std::string name = doc.substr(at, doc.find('`', at) - at);
        INFO(name);
        CHECK(is_failure_class(name));
    }
}

TEST_CASE("failure class: gathered from a run directory, recorded in run.json") {
    TempDir dir;
    dir.write("logs/rank_0.log", "rank 0 stopped\n");
    dir.write("logs/rank_1.log", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB\n");
    dir.write("rendered/logs/tiny-77.out", "slurm batch output\n");
    fs::create_symlink("/etc/passwd", dir.path() / "logs" / "linked.log");
    RunRecord record;
    record.run_id = "r";
    record.ranks = {{0, 143, 15, "logs/rank_0.log", 1}, {1, 1, 0, "logs/rank_1.log", 1}};
    const FailureFacts facts = gather_failure_facts(record, "failed", dir.path(), FailureStage::job);
    REQUIRE(facts.logs.size() == 3);
    CHECK(facts.logs[0].first == "logs/rank_0.log");  // both ranks failed: in name order
    CHECK(facts.logs[2].first == "logs/tiny-77.out"); // where the run's end moves it
    record.transition(RunState::running, dir.path());
    record.transition(RunState::failed, dir.path(), "rank_1 ended with exit 1");
    CHECK(record.failure_class == "out_of_memory_device");
    const RunRecord loaded = RunRecord::load(dir.path());
    CHECK(loaded.failure_class == "out_of_memory_device");
    CHECK(loaded.failure_evidence == record.failure_evidence);

    Json json = record.to_json();
    json["failure_class"] = "gremlins";
    CHECK_THROWS_WITH(RunRecord::from_json(json), Catch::Contains("run.json: failure_class: unknown failure class \"gremlins\""));
    json["failure_class"] = 3;
    CHECK_THROWS_WITH(RunRecord::from_json(json), Catch::Contains("failure_class: expected a string"));
    // A record an older harness wrote has neither key.
    Json::Object older = record.to_json().as_object();
    older.erase("failure_class");
    older.erase("failure_evidence");
    CHECK(RunRecord::from_json(Json(older)).failure_class.empty());
    // Evidence quoting a secret a Slurm job printed (its logs are scrubbed only once gathered).
    TempDir leaky;
    leaky.write("rendered/logs/rank_0.log", "torch.OutOfMemoryError: CUDA out of memory; token hf_supersecret123\n");
    SecretScrubber secrets;
    secrets.add("hf_supersecret123");
    RunRecord scrubbed;
    scrubbed.run_id = "s";
    scrubbed.secrets = &secrets;
    scrubbed.transition(RunState::failed, leaky.path(), "job 77 FAILED");
    CHECK(scrubbed.failure_class == "out_of_memory_device");
    CHECK(scrubbed.failure_evidence.find("hf_supersecret123") == std::string::npos);
    CHECK(scrubbed.failure_evidence.find("[REDACTED]") != std::string::npos);
    // A completed run has none.
    RunRecord completed;
    completed.run_id = "c";
    completed.transition(RunState::completed, dir.path());
    CHECK(completed.to_json().find("failure_class") == nullptr);
}
