#include "util/process.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
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
        out[key] = value;
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

/// Puts the child in a process group of its own before exec.
struct NewProcessGroup : bp::extend::handler {
    template <typename Executor>
    void on_exec_setup(Executor& /*unused*/) const {
        ::setpgid(0, 0);
        // The harness handles SIGINT for the whole run; children start with default handling.
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
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
        child = bp::child(bp::exe = program, bp::args = args, bp::env = to_boost(command.env),
                          (bp::std_out & bp::std_err) > output, bp::std_in < bp::null, ec);
    } else {
        child = bp::child(bp::exe = program, bp::args = args, bp::env = to_boost(command.env),
                          bp::start_dir = command.cwd.string(), (bp::std_out & bp::std_err) > output, bp::std_in < bp::null, ec);
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
};

RunningProcess::RunningProcess(const Command& command, const fs::path& log) : m_impl(std::make_unique<Impl>()) {
    const std::string program = resolve(command);
    std::vector<std::string> args(command.argv.begin() + 1, command.argv.end());
    std::error_code ec;
    const std::string cwd = command.cwd.empty() ? fs::current_path().string() : command.cwd.string();
    // Opened in append mode so a requeued or restarted rank keeps its earlier output.
    FILE* out = std::fopen(log.c_str(), "ab");
    if (out == nullptr) {
        throw HarnessError(fmt::format("{}: cannot open log: {}", log.string(), std::strerror(errno)));
    }
    m_impl->start = std::chrono::steady_clock::now();
    m_impl->child = bp::child(bp::exe = program, bp::args = args, bp::env = to_boost(command.env), bp::start_dir = cwd,
                              bp::std_out > out, bp::std_err > out, bp::std_in < bp::null, NewProcessGroup{}, ec);
    std::fclose(out);
    if (ec) {
        throw HarnessError(fmt::format("cannot run {}: {}", enquote(program), ec.message()));
    }
}

RunningProcess::~RunningProcess() {
    if (m_impl && !m_impl->status) {
        signal_group(SIGKILL);
        std::error_code ec;
        m_impl->child.wait(ec);
    }
}

int RunningProcess::pid() const { return m_impl->child.id(); }

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

} // namespace harness
