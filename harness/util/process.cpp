#include "util/process.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace harness {

namespace bp = boost::process;

namespace {

bp::environment to_boost(const Environment& env) {
    bp::environment out;
    out.clear();
    for (const auto& [key, value] : env) {
        // Not out[key]: Boost 1.74's environment::find compares "key=" past the end of a shorter
        // entry (boost/process/environment.hpp:266, a heap overflow ASan reports); set() checks.
        out.set(key, value);
    }
    return out;
}

std::string resolve(const Command& command) {
    if (command.argv.empty()) {
        throw HarnessError("cannot run an empty command");
    }
    const std::string& program = command.argv.front();
    if (program.find('/') != std::string::npos) {
        return program;
    }
    std::string path;
    for (const auto& [key, value] : command.env) {
        if (key == "PATH") {
            path = value;
        }
    }
    for (const auto& dir : split(path, ':')) {
        const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate.string();
        }
    }
    throw HarnessError(fmt::format("cannot run {}: not found on PATH", enquote(program)));
}

ExitStatus from_wait_status(int status) {
    ExitStatus out;
    if (WIFSIGNALED(status)) {
        out.signal = WTERMSIG(status);
        out.code = 128 + out.signal;
    } else {
        out.code = WEXITSTATUS(status);
    }
    return out;
}

/// Between fork and exec: every descriptor above stderr is marked close-on-exec, so the child
/// starts with stdin, stdout and stderr only, whatever the harness's caller left open (a CI
/// runner, ctest, a multiplexer). An inherited descriptor is not harmless: mmdebstrap numbers
/// its pipes from the lowest free descriptor and hands one above 9 to apt's `cat >&N` hook,
/// which dash refuses ("Bad fd number"). Marking rather than closing keeps Boost's own
/// exec-error pipe working until exec. Only raw system calls here: the parent may have threads,
/// so nothing that allocates may run after fork.
void mark_descriptors_cloexec() {
#ifdef SYS_close_range
    constexpr unsigned k_close_range_cloexec = 1U << 2U; // CLOSE_RANGE_CLOEXEC, Linux 5.11
    if (::syscall(SYS_close_range, 3U, ~0U, k_close_range_cloexec) == 0) {
        return;
    }
#endif
    const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        alignas(8) char buffer[4096];
        for (;;) {
            const long got = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer);
            if (got <= 0) {
                break;
            }
            for (long at = 0; at < got;) {
                const auto* entry = reinterpret_cast<const struct dirent64*>(buffer + at); // NOLINT: the kernel's layout
                int fd = 0;
                bool digits = entry->d_name[0] != '\0';
                for (const char* c = entry->d_name; *c != '\0'; ++c) {
                    digits = digits && *c >= '0' && *c <= '9';
                    fd = digits ? fd * 10 + (*c - '0') : fd;
                }
                if (digits && fd > STDERR_FILENO && fd != dir) {
                    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
                }
                at += entry->d_reclen;
            }
        }
        ::close(dir);
        return;
    }
    struct rlimit limit {};
    const rlim_t most = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur : 65536;
    for (rlim_t fd = STDERR_FILENO + 1; fd < most && fd < 1048576; ++fd) {
        ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    }
}

/// Children of run_command start with the three standard descriptors only.
struct CleanDescriptors : bp::extend::handler {
    template <typename Executor> void on_exec_setup(Executor& /*unused*/) const { mark_descriptors_cloexec(); }
};

/// Between fork and exec: a process group of its own, death with the harness, output to the pipe.
struct RankSetup : bp::extend::handler {
    int output = -1; ///< the pipe's write end
    pid_t parent = 0;

    template <typename Executor> void on_exec_setup(Executor& /*unused*/) const {
        ::setpgid(0, 0);
        // SIGKILL: a rank that ignores SIGTERM must not outlive a harness that cannot stop it.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127); // the harness died before the signal was armed
        }
        ::dup2(output, STDOUT_FILENO);
        ::dup2(output, STDERR_FILENO);
        // The harness handles SIGINT for the whole run; children start with default handling.
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGPIPE, SIG_DFL);
        mark_descriptors_cloexec();
    }
};

} // namespace

std::string ExitStatus::describe() const {
    if (signal != 0) {
        return fmt::format("signal {} ({})", signal, strsignal(signal));
    }
    return fmt::format("exit {}", code);
}

Environment current_environment(const Environment& overrides) {
    Environment env;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string text = *entry;
        const auto eq = text.find('=');
        if (eq != std::string::npos) {
            env.emplace_back(text.substr(0, eq), text.substr(eq + 1));
        }
    }
    for (const auto& [key, value] : overrides) {
        bool replaced = false;
        for (auto& entry : env) {
            if (entry.first == key) {
                entry.second = value;
                replaced = true;
            }
        }
        if (!replaced) {
            env.emplace_back(key, value);
        }
    }
    return env;
}

ExitStatus run_command(const Command& command) {
    const std::string program = resolve(command);
    const auto start = std::chrono::steady_clock::now();
    bp::ipstream output;
    std::error_code ec;
    std::vector<std::string> args(command.argv.begin() + 1, command.argv.end());
    bp::child child;
    if (command.cwd.empty()) {
        child = bp::child(bp::exe = program, bp::args = args, bp::env = to_boost(command.env), (bp::std_out & bp::std_err) > output,
                          bp::std_in < bp::null, CleanDescriptors{}, ec);
    } else {
        child = bp::child(bp::exe = program, bp::args = args, bp::env = to_boost(command.env), bp::start_dir = command.cwd.string(),
                          (bp::std_out & bp::std_err) > output, bp::std_in < bp::null, CleanDescriptors{}, ec);
    }
    if (ec) {
        throw HarnessError(fmt::format("cannot run {}: {}", enquote(program), ec.message()));
    }
    std::string text((std::istreambuf_iterator<char>(output)), std::istreambuf_iterator<char>());
    child.wait(ec);
    ExitStatus status = from_wait_status(child.native_exit_code());
    status.output = std::move(text);
    status.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return status;
}

struct RunningProcess::Impl {
    bp::child child;
    std::chrono::steady_clock::time_point start;
    std::optional<ExitStatus> status;
    int output = -1; ///< the pipe's read end
};

RunningProcess::RunningProcess(const Command& command) : m_impl(std::make_unique<Impl>()) {
    const std::string program = resolve(command);
    std::vector<std::string> args(command.argv.begin() + 1, command.argv.end());
    std::error_code ec;
    const std::string cwd = command.cwd.empty() ? fs::current_path().string() : command.cwd.string();
    // Close-on-exec on both ends: no other child inherits this rank's pipe (it would keep it
    // open past the rank's end); the child gets the write end as its stdout and stderr only.
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        throw HarnessError(fmt::format("cannot run {}: cannot create a pipe: {}", enquote(program), std::strerror(errno)));
    }
    RankSetup setup;
    setup.output = fds[1];
    setup.parent = ::getpid();
    m_impl->start = std::chrono::steady_clock::now();
    m_impl->child = bp::child(bp::exe = program, bp::args = args, bp::env = to_boost(command.env), bp::start_dir = cwd,
                              bp::std_in < bp::null, setup, ec);
    ::close(fds[1]);
    if (ec) {
        ::close(fds[0]);
        throw HarnessError(fmt::format("cannot run {}: {}", enquote(program), ec.message()));
    }
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    m_impl->output = fds[0];
}

RunningProcess::~RunningProcess() {
    if (m_impl && !m_impl->status) {
        signal_group(SIGKILL);
        std::error_code ec;
        m_impl->child.wait(ec);
    }
    if (m_impl && m_impl->output >= 0) {
        ::close(m_impl->output);
    }
}

int RunningProcess::pid() const { return m_impl->child.id(); }

int RunningProcess::output_fd() const { return m_impl->output; }

std::string RunningProcess::read_output() {
    std::string text;
    // Bounded per call, so one chatty rank cannot starve the others or the time limit.
    constexpr std::size_t k_most = std::size_t{1} << 20;
    char buffer[65536];
    while (m_impl->output >= 0 && text.size() < k_most) {
        const ssize_t n = ::read(m_impl->output, buffer, sizeof buffer);
        if (n > 0) {
            text.append(buffer, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            ::close(m_impl->output);
            m_impl->output = -1;
        }
        break;
    }
    return text;
}

std::optional<ExitStatus> RunningProcess::poll() {
    if (m_impl->status) {
        return m_impl->status;
    }
    int raw = 0;
    pid_t done = 0;
    do {
        done = ::waitpid(m_impl->child.id(), &raw, WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done == 0) {
        return std::nullopt;
    }
    ExitStatus status = done > 0 ? from_wait_status(raw) : ExitStatus{};
    status.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_impl->start).count();
    m_impl->status = status;
    m_impl->child.detach();
    return status;
}

void RunningProcess::signal_group(int signal_number) {
    if (!m_impl->status) {
        ::kill(-m_impl->child.id(), signal_number);
    }
}

std::optional<unsigned long long> process_start_time(int pid) {
    if (pid <= 0) {
        return std::nullopt;
    }
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string text;
    if (!in || !std::getline(in, text)) {
        return std::nullopt;
    }
    // Field 2, the command name, is in parentheses and may hold spaces or ')': count from the last.
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) {
        return std::nullopt;
    }
    const std::vector<std::string> fields = split(trim(text.substr(close + 1)), ' ');
    // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
    if (fields.size() < 20) {
        return std::nullopt;
    }
    try {
        return std::stoull(fields[19]);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace harness
