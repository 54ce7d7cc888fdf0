#pragma once
// Child processes: argv vectors and explicit environments, never a shell string built from
// user data. "Could not spawn" is an error; "ran and exited non-zero" is a normal ExitStatus.
#include "util/fs.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

using Environment = std::vector<std::pair<std::string, std::string>>;

struct Command {
    std::vector<std::string> argv;
    Environment env; ///< the child's whole environment
    fs::path cwd;    ///< empty: inherit
};

struct ExitStatus {
    int code = 0;       ///< exit code when it exited
    int signal = 0;     ///< terminating signal, 0 when it exited
    std::string output; ///< stdout and stderr, interleaved (run_command only)
    double seconds = 0;

    bool ok() const { return signal == 0 && code == 0; }
    /// "exit 3", "signal 9 (Killed)"
    std::string describe() const;
};

/// This process's environment with `overrides` applied (later entries win).
Environment current_environment(const Environment& overrides = {});

/// Runs to completion and captures its output. Throws HarnessError when it cannot start.
ExitStatus run_command(const Command& command);

/// A child started in its own process group, so it and everything it starts can be signalled
/// together, and with a parent-death signal (SIGKILL), so that it dies with the harness even
/// when the harness is killed with SIGKILL and cannot stop it. Its stdout and stderr go to one
/// pipe that the owner drains with read_output: nothing reaches a file or a terminal unseen.
class RunningProcess {
public:
    explicit RunningProcess(const Command& command);
    ~RunningProcess();
    RunningProcess(const RunningProcess&) = delete;
    RunningProcess& operator=(const RunningProcess&) = delete;

    int pid() const;
    /// Non-blocking: the status once it has ended.
    std::optional<ExitStatus> poll();
    /// Signals the whole process group.
    void signal_group(int signal_number);

    /// The read end of the output pipe (non-blocking), for poll(2); -1 once it reached its end.
    int output_fd() const;
    /// What the child (and its descendants) wrote since the last call, without blocking; empty
    /// when nothing is waiting. Reaching the end closes the pipe (output_fd() becomes -1).
    std::string read_output();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// When `pid` started, in clock ticks since boot (/proc/<pid>/stat field 22): with the pid it
/// names one process, never a later one that reuses the pid. nullopt when no such process.
std::optional<unsigned long long> process_start_time(int pid);

/// The seam for commands that cannot run here (gcloud, xpk): tests substitute a recording double.
class ProcessRunner {
public:
    virtual ~ProcessRunner() = default;
    virtual ExitStatus run(const Command& command) = 0;
};

class SystemProcessRunner : public ProcessRunner {
public:
    ExitStatus run(const Command& command) override { return run_command(command); }
};

} // namespace harness
