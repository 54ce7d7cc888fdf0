#include "run/failure_class.hpp"

#include "run/run_record.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>

namespace harness {

namespace {

// Slurm commit 284c3b95 (2026-08-20) is the one the citations below read.
const std::vector<FailureClassInfo> k_classes = {
    {"cancelled", "the run was stopped on purpose: Ctrl-C or SIGTERM to the harness, or scancel",
     "run.json state cancelled, unless Slurm says PREEMPTED"},
    {"preempted", "Slurm took the job's nodes for another job", "Slurm state PREEMPTED; slurmstepd's \"DUE TO PREEMPTION\""},
    {"image_failure", "the run's image could not be built or pulled", "the harness's image step; podman's \"initializing source\""},
    {"framework_refused_flag", "the framework refused the launch's arguments",
     "the preflight's refusal; argparse's \"error: unrecognized arguments\" or \"invalid choice\"; a rank's exit 2"},
    {"launch_failure", "the job never started its ranks",
     "sbatch's refusal; srun's \"Task launch for ... failed\"; a rank's exit 233"},
    {"missing_traces", "the job succeeded but the traces the plan expects were not there", "the harness's trace collection"},
    {"node_failure", "a node of the job failed", "Slurm state NODE_FAIL or BOOT_FAIL; slurmstepd's \"DUE TO NODE FAILURE\""},
    {"time_limit", "the job ran past its time limit",
     "run.json state timeout; Slurm state TIMEOUT or DEADLINE; slurmstepd's \"DUE TO TIME LIMIT\""},
    {"out_of_memory_host", "the host's memory (the job's cgroup) ran out",
     "Slurm state OUT_OF_MEMORY; Slurm's \"oom_kill event\"; exit 137 (SIGKILL) only with one of those"},
    {"out_of_memory_device", "an accelerator's memory ran out",
     "PyTorch's \"CUDA out of memory\" / torch.OutOfMemoryError, XLA's RESOURCE_EXHAUSTED, vLLM's KV cache refusal"},
    {"rendezvous_failure", "the ranks could not meet to start",
     "torch elastic's RendezvousTimeoutError, DistNetworkError, \"Address already in use\""},
    {"collective_timeout", "a collective did not finish in time (often another rank's death, seen from the survivors)",
     "NCCL watchdog's \"Watchdog caught collective operation timeout\"; gloo's \"Connection closed by peer\", \"Timed out waiting\""},
    {"unknown", "nothing in the table matched", "the evidence says what was looked at"},
};

// Root causes before symptoms: a rank that ran out of memory makes the others' collectives time
// out, and Slurm's own verdict in the log outranks what a dying framework says after it.
const std::vector<FailureSignature> k_signatures = {
    {"out_of_memory_device", "CUDA out of memory", "",
     "PyTorch c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc: TORCH_CHECK_WITH(OutOfMemoryError, false, "
     "\"CUDA out of memory. Tried to allocate \", ...)"},
    {"out_of_memory_device", "torch.OutOfMemoryError", "",
     "PyTorch torch/csrc/Exceptions.cpp: c10::OutOfMemoryError raised in Python as torch.OutOfMemoryError"},
    {"out_of_memory_device", "RESOURCE_EXHAUSTED", "",
     "XLA's status code for a failed allocation, as JAX raises it (\"jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: "
     "Allocation ...\", quoted at AI-Hypercomputer/maxtext src/maxtext/trainers/pre_train/train_compile.py:310, e591f30cb)"},
    {"out_of_memory_device", "No available memory for the cache blocks", "",
     "vLLM vllm/worker/worker.py, raise_if_cache_size_invalid"},
    {"out_of_memory_host", "oom_kill event", "",
     "Slurm src/plugins/task/cgroup/task_cgroup_memory.c:291: \"Detected %\"PRIu64\" oom_kill event%s in %ps. Some of the step "
     "tasks have been OOM Killed.\""},
    {"time_limit", "DUE TO TIME LIMIT", "",
     "Slurm src/slurmd/slurmstepd/req.c:1122: \"*** %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***\""},
    {"preempted", "DUE TO PREEMPTION", "",
     "Slurm src/slurmd/slurmstepd/req.c:1126: \"*** %s ON %s CANCELLED AT %s DUE TO PREEMPTION ***\""},
    {"node_failure", "DUE TO NODE FAILURE", "",
     "Slurm src/slurmd/slurmstepd/req.c:1130: \"*** %s ON %s CANCELLED AT %s DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS "
     "***\""},
    {"launch_failure", "Task launch for ", " failed",
     "Slurm src/api/step_launch.c:1670: \"Task launch for %ps failed on node %s: %m\""},
    {"image_failure", "initializing source ", "",
     "containers/image (podman's image library) copy/copy.go:237: fmt.Errorf(\"initializing source %s: %w\", ...), vendored in "
     "containers/common f437c58a"},
    {"rendezvous_failure", "RendezvousTimeoutError", "",
     "PyTorch torch/distributed/elastic/rendezvous/api.py: class RendezvousTimeoutError(RendezvousError)"},
    {"rendezvous_failure", "DistNetworkError", "",
     "PyTorch torch/csrc/distributed/c10d/exception.h: DistNetworkError, raised by the TCPStore; NVIDIA/Megatron-LM "
     "tests/test_utils/python_scripts/launch_jet_workload.py:362 (d98e8a64dd) treats it as an infrastructure failure"},
    {"rendezvous_failure", "Address already in use", "",
     "PyTorch torch/csrc/distributed/c10d/socket.cpp: the TCPStore's server socket failing to bind (errno 98); vLLM's ZMQ "
     "\"zmq.error.ZMQError: Address already in use\" (Megatron-LM launch_jet_workload.py:371)"},
    {"framework_refused_flag", "error: unrecognized arguments", "",
     "CPython Lib/argparse.py (3.11.7):1876 \"unrecognized arguments: %s\", printed by error():2633 as \"%(prog)s: error: "
     "%(message)s\" with exit 2; vLLM's and SGLang's parsers are argparse's"},
    {"framework_refused_flag", "error: argument ",
     "invalid choice: ", "CPython Lib/argparse.py (3.11.7):2557 \"invalid choice: %(value)r (choose from %(choices)s)\""},
    {"collective_timeout", "Watchdog caught collective operation timeout", "",
     "PyTorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout: \"Watchdog caught collective operation "
     "timeout: \" (Megatron-LM tests/test_utils/python_scripts/launch_nemo_run_workload.py:60 matches the same text)"},
    {"collective_timeout", "Connection closed by peer", "",
     "gloo gloo/transport/tcp/pair.cc (PyTorch third_party/gloo): \"Connection closed by peer \" and the peer's address"},
    {"collective_timeout", "Timed out waiting ", "for recv operation",
     "gloo gloo/transport/tcp/unbound_buffer.cc, UnboundBuffer::waitRecv: \"Timed out waiting \", ms, \"ms for recv operation to "
     "complete\""},
};

constexpr std::size_t k_quoted_line_bytes = 240;

/// One log line as evidence quotes it: trimmed, one line, cut where it is long.
std::string quoted(const std::string& line) {
    std::string text = trim(line);
    // A progress bar's carriage returns: its last state is what was said last.
    if (const std::size_t cr = text.rfind('\r'); cr != std::string::npos) {
        text = trim(text.substr(cr + 1));
    }
    if (text.size() > k_quoted_line_bytes) {
        text = text.substr(0, k_quoted_line_bytes) + "...";
    }
    return json_string(text);
}

struct Found {
    const FailureSignature* signature = nullptr;
    std::string where;
    std::string line;
};

/// The first signature, in table order, that a line of the logs (then the reason) holds.
Found find_signature(const FailureFacts& facts) {
    std::vector<std::pair<std::string, std::vector<std::string>>> texts;
    for (const auto& [name, text] : facts.logs) {
        texts.emplace_back(name, split(text, '\n'));
    }
    texts.emplace_back("run.json reason", split(facts.reason, '\n'));
    for (const FailureSignature& signature : k_signatures) {
        for (const auto& [name, lines] : texts) {
            for (const std::string& line : lines) {
                if (line.find(signature.text) != std::string::npos &&
                    (*signature.also == '\0' || line.find(signature.also) != std::string::npos)) {
                    return {&signature, name, line};
                }
            }
        }
    }
    return {};
}

std::string described(const RankExit& rank) {
    if (rank.signal != 0) {
        return fmt::format("{} killed by signal {}", rank.label, rank.signal);
    }
    return rank.exit_code ? fmt::format("{} exit {}", rank.label, *rank.exit_code) : fmt::format("{} did not end", rank.label);
}

/// The first rank (or Slurm's exit, "code:signal") that ended with `code`.
std::string exit_with(const FailureFacts& facts, int code) {
    for (const RankExit& rank : facts.ranks) {
        if (rank.signal == 0 && rank.exit_code && *rank.exit_code == code) {
            return described(rank);
        }
    }
    if (starts_with(facts.scheduler_exit, std::to_string(code) + ":")) {
        return fmt::format("Slurm exit code {}", facts.scheduler_exit);
    }
    return "";
}

/// The reason's first line: the harness's own words about a step it ran.
std::string first_line(const std::string& text) {
    return json_string(trim(split(text, '\n').empty() ? "" : split(text, '\n').front()));
}

std::string looked_at(const FailureFacts& facts) {
    std::vector<std::string> ends;
    for (const RankExit& rank : facts.ranks) {
        if (rank.signal != 0 || (rank.exit_code && *rank.exit_code != 0)) {
            ends.push_back(described(rank));
        }
    }
    std::size_t lines = 0;
    for (const auto& log : facts.logs) {
        const std::string& text = log.second;
        lines += static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) +
                 (ends_with(text, "\n") || text.empty() ? 0 : 1);
    }
    return fmt::format("state {}{}{}; {}; no known signature in {} line(s) of {} log(s) and the reason", facts.state,
                       facts.scheduler_state.empty() ? "" : ", Slurm state " + facts.scheduler_state,
                       facts.scheduler_exit.empty() ? "" : " exit " + facts.scheduler_exit,
                       ends.empty() ? "no rank ended badly" : join(ends, ", "), lines, facts.logs.size());
}

} // namespace

const std::vector<FailureClassInfo>& failure_classes() { return k_classes; }

bool is_failure_class(const std::string& name) {
    return std::any_of(k_classes.begin(), k_classes.end(), [&](const FailureClassInfo& info) { return name == info.name; });
}

const std::vector<FailureSignature>& failure_signatures() { return k_signatures; }

FailureClass classify_failure(const FailureFacts& facts) {
    const std::string& slurm = facts.scheduler_state;
    const Found found = find_signature(facts);
    const auto from_log = [&found] {
        return FailureClass{found.signature->failure_class,
                            fmt::format("{}: {} ({})", found.where, quoted(found.line), found.signature->source)};
    };
    const bool preemption_said = found.signature != nullptr && std::string(found.signature->failure_class) == "preempted";
    if (slurm == "PREEMPTED") {
        return {"preempted", "Slurm state PREEMPTED"};
    }
    if (facts.state == "cancelled") {
        if (preemption_said) {
            return from_log();
        }
        return {"cancelled", "state cancelled: " + first_line(facts.reason) + (slurm.empty() ? "" : " (Slurm state " + slurm + ")")};
    }
    switch (facts.stage) {
    case FailureStage::image: return {"image_failure", "the image step: " + first_line(facts.reason)};
    case FailureStage::preflight: return {"framework_refused_flag", "the preflight: " + first_line(facts.reason)};
    case FailureStage::submission: return {"launch_failure", "the submission: " + first_line(facts.reason)};
    case FailureStage::traces: return {"missing_traces", "the job succeeded; " + first_line(facts.reason)};
    case FailureStage::job: break;
    }
    if (slurm == "NODE_FAIL" || slurm == "BOOT_FAIL") {
        return {"node_failure", "Slurm state " + slurm};
    }
    if (slurm == "TIMEOUT" || slurm == "DEADLINE") {
        return {"time_limit", "Slurm state " + slurm};
    }
    if (slurm == "OUT_OF_MEMORY") {
        return {"out_of_memory_host", "Slurm state OUT_OF_MEMORY"};
    }
    if (facts.state == "timeout") {
        return {"time_limit", "state timeout: " + first_line(facts.reason)};
    }
    if (found.signature != nullptr) {
        return from_log();
    }
    // argparse's exit status for a usage error (Lib/argparse.py:2633), as the framework CLIs use it.
    if (const std::string two = exit_with(facts, 2); !two.empty()) {
        return {"framework_refused_flag",
                two + " (argparse's exit status for refused arguments), with no known signature in the logs"};
    }
    if (const std::string launch = exit_with(facts, 233); !launch.empty()) {
        return {"launch_failure", launch};
    }
    return {"unknown", looked_at(facts)};
}

namespace {

std::string file_tail(const fs::path& file) {
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    const std::streamoff size = in.tellg();
    if (!in || size <= 0) {
        return "";
    }
    const std::streamoff start = std::max<std::streamoff>(0, size - static_cast<std::streamoff>(k_failure_log_tail_bytes));
    in.seekg(start);
    std::string text(static_cast<std::size_t>(size - start), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (start > 0) {
        // A cut first line is not a line the log said.
        const std::size_t newline = text.find('\n');
        text.erase(0, newline == std::string::npos ? text.size() : newline + 1);
    }
    return text;
}

} // namespace

FailureFacts gather_failure_facts(const RunRecord& record, const std::string& state, const fs::path& run_dir, FailureStage stage) {
    FailureFacts facts;
    facts.state = state;
    facts.stage = stage;
    facts.reason = record.reason;
    if (record.scheduler.is_object()) {
        // sacct's state of a cancelled job carries who did it ("CANCELLED by 1000").
        const std::vector<std::string> words = split(record.scheduler.string_or("slurm_state"), ' ');
        facts.scheduler_state = words.empty() ? "" : words.front();
        facts.scheduler_exit = record.scheduler.string_or("exit_code");
    }
    std::vector<std::string> failing;
    for (const RankOutcome& rank : record.ranks) {
        RankExit exit;
        exit.label = fmt::format("rank_{}", rank.rank);
        exit.exit_code = rank.exit_code;
        exit.signal = rank.signal;
        facts.ranks.push_back(exit);
        if (rank.signal != 0 || (rank.exit_code && *rank.exit_code != 0)) {
            failing.push_back(exit.label + ".log");
        }
    }
    std::vector<std::pair<bool, fs::path>> files; // (not a failing rank's, path): failing ranks first
    std::error_code ec;
    for (const fs::path& dir : {run_dir / "logs", run_dir / "rendered" / "logs"}) {
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            if (fs::is_regular_file(fs::symlink_status(it->path(), ec))) {
                const std::string name = it->path().filename().string();
                files.emplace_back(std::find(failing.begin(), failing.end(), name) == failing.end(), it->path());
            }
        }
        ec.clear();
    }
    std::sort(files.begin(), files.end());
    for (const auto& entry : files) {
        const fs::path& file = entry.second;
        if (facts.logs.size() == k_failure_log_files) {
            break;
        }
        // What the job wrote beside its scripts is moved into logs/ when the run ends
        // (run_workload's gather_logs): the evidence names it where it will be.
        facts.logs.emplace_back((fs::path("logs") / file.filename()).string(), file_tail(file));
    }
    return facts;
}

} // namespace harness
