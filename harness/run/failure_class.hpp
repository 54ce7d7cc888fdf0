#pragma once
// Why a run ended badly, as one class from a fixed table (docs/failures.md is its prose, and
// tests/unit/failure_class_test.cpp checks the two name the same classes): decided from the evidence a run
// leaves (the harness's step that failed, Slurm's final state, the ranks' exit codes and
// signals, the known last words of PyTorch, NCCL, gloo, vLLM, XLA and Slurm in the logs), with
// the evidence that decided it, so "unknown" still says what was looked at.
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct RunRecord;

/// Which step of the harness's own ended the run: only `job` leaves it to the job's evidence.
enum class FailureStage {
    job,        ///< the job ran (or was being followed) and ended badly
    image,      ///< the run's image could not be built or pulled
    preflight,  ///< the job's preflight, in the image, refused the rendered launch
    submission, ///< the scheduler refused the job (sbatch)
    traces,     ///< the job succeeded, but the traces the plan expects were not there
};

/// One class of the table: its name as run.json spells it, what it means, what decides it.
struct FailureClassInfo {
    const char* name;
    const char* meaning;
    const char* decided_by;
};

/// The classes, in the order `classify_failure` tries them. The one table.
const std::vector<FailureClassInfo>& failure_classes();

/// Whether `name` is a class of the table (run.json's failure_class is checked against it).
bool is_failure_class(const std::string& name);

/// A log line a framework writes when it fails in a known way, and where its source writes it.
struct FailureSignature {
    const char* failure_class;
    const char* text; ///< matched as a substring of one line, case and all
    const char* also; ///< a second substring the same line must hold, or ""
    const char* source;
};

/// The signatures, in the order they are looked for: a root cause (device memory) before its
/// symptoms on the other ranks (a collective that timed out waiting for the dead one).
const std::vector<FailureSignature>& failure_signatures();

/// A rank's end as the executor recorded it.
struct RankExit {
    std::string label; ///< "rank_1"
    std::optional<int> exit_code;
    int signal = 0;
};

/// What a run left to decide its failure class from.
struct FailureFacts {
    std::string state; ///< run.json's final state: failed, cancelled or timeout
    FailureStage stage = FailureStage::job;
    std::string reason;          ///< run.json's reason (the harness's, Slurm's and srun's words)
    std::string scheduler_state; ///< Slurm's JobState at the end ("OUT_OF_MEMORY"); "" when none
    std::string scheduler_exit;  ///< Slurm's ExitCode at the end ("2:0"); "" when none
    std::vector<RankExit> ranks;
    /// (name, text): the last part of each log, the failing ranks' first.
    std::vector<std::pair<std::string, std::string>> logs;
};

struct FailureClass {
    std::string name;     ///< a class of failure_classes()
    std::string evidence; ///< which line, state or exit decided it; for unknown, what was looked at
};

/// The class `facts` make: pure, and the same facts always give the same answer.
FailureClass classify_failure(const FailureFacts& facts);

/// The facts of `record`, ending as `state`, in `run_dir`: its ranks, Slurm's final state and
/// exit (scheduler.slurm_state, scheduler.exit_code), and the last k_failure_log_tail_bytes of
/// each regular file in logs/ and rendered/logs/ (links are not followed), at most
/// k_failure_log_files of them, the failing ranks' first.
FailureFacts gather_failure_facts(const RunRecord& record, const std::string& state, const fs::path& run_dir, FailureStage stage);

inline constexpr std::size_t k_failure_log_tail_bytes = std::size_t{64} << 10;
inline constexpr std::size_t k_failure_log_files = 64;

} // namespace harness
