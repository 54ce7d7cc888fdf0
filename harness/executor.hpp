#pragma once
// Executors take a rendered run to a final state: local (ranks as child processes), slurm
// (sbatch and follow), tpu-vm (the rendered gcloud lifecycle). Each records into RunRecord.
#include "cluster.hpp"
#include "render.hpp"
#include "run_directory.hpp"
#include "run_record.hpp"
#include "util/process.hpp"

#include <iosfwd>

namespace harness {

struct ExecutionContext {
    const RenderedRun& run;
    const ClusterProfile& cluster;
    const RunDirectory& dir;
    RunRecord& record;
    std::ostream& out;          ///< rank output and progress
    bool interactive = false;   ///< a terminal: live progress line
    double grace_seconds = 5;   ///< between SIGTERM and SIGKILL
    bool teardown = false;      ///< delete cloud resources the run created
};

void execute_local(ExecutionContext& context);
/// Starts every command (each in its own process group, output to logs/<label>.log, echoed with
/// a [label] prefix) and waits: the first failure, Ctrl-C or the time limit stops them all
/// (SIGTERM, then SIGKILL after the grace period).
void supervise_processes(ExecutionContext& context, const std::vector<Command>& commands,
                         const std::vector<std::string>& labels);
void execute_slurm(ExecutionContext& context);
void execute_tpu(ExecutionContext& context);

/// Slurm-style time limit ("90", "01:30:00", "1-00:00:00") in seconds; 0 when empty.
long long parse_time_limit(const std::string& text);

/// The last `lines` lines of a file, for failure messages.
std::string tail_lines(const fs::path& file, std::size_t lines);

} // namespace harness
