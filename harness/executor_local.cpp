#include "executor.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <fmt/format.h>
#include <fstream>
#include <netinet/in.h>
#include <ostream>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace harness {

namespace {

/// A port nobody listens on right now; the ranks' rendezvous binds it a moment later.
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        throw HarnessError("cannot open a socket to find a free port");
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        ::close(fd);
        throw HarnessError("cannot find a free port");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

/// Follows a rank's log file and forwards complete lines with a rank prefix.
class LogFollower {
public:
    LogFollower(std::string label, fs::path file) : m_label(std::move(label)), m_file(std::move(file)) {}

    void pump(std::ostream& out, bool flush_partial = false) {
        std::ifstream in(m_file, std::ios::binary);
        if (!in) {
            return;
        }
        in.seekg(static_cast<std::streamoff>(m_offset));
        std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        m_offset += chunk.size();
        m_pending += chunk;
        std::size_t newline = 0;
        while ((newline = m_pending.find('\n')) != std::string::npos) {
            out << fmt::format("[{}] {}\n", m_label, m_pending.substr(0, newline));
            m_pending.erase(0, newline + 1);
        }
        if (flush_partial && !m_pending.empty()) {
            out << fmt::format("[{}] {}\n", m_label, m_pending);
            m_pending.clear();
        }
        out.flush();
    }

private:
    std::string m_label;
    fs::path m_file;
    std::size_t m_offset = 0;
    std::string m_pending;
};

} // namespace

long long parse_time_limit(const std::string& text) {
    if (text.empty()) {
        return 0;
    }
    long long days = 0;
    std::string rest = text;
    const auto dash = rest.find('-');
    if (dash != std::string::npos) {
        days = std::stoll(rest.substr(0, dash));
        rest = rest.substr(dash + 1);
    }
    const auto parts = split(rest, ':');
    long long seconds = 0;
    if (parts.size() == 1 && dash == std::string::npos) {
        seconds = std::stoll(parts[0]) * 60;  // plain minutes, as Slurm reads them
    } else {
        for (const auto& part : parts) {
            seconds = seconds * 60 + std::stoll(part);
        }
        if (parts.size() == 2) {
            seconds *= 60;  // HH:MM after a day count
        }
    }
    return days * 86400 + seconds;
}

std::string tail_lines(const fs::path& file, std::size_t lines) {
    std::ifstream in(file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') {
        --pos;
    }
    for (std::size_t seen = 0; pos > 0; --pos) {
        if (text[pos - 1] == '\n' && ++seen == lines) {
            break;
        }
    }
    return trim(text.substr(pos));
}

void supervise_processes(ExecutionContext& context, const std::vector<Command>& commands, const std::vector<std::string>& labels) {
    const Plan& plan = context.run.plan;
    RunRecord& record = context.record;
    const long long limit = parse_time_limit(plan.time_limit);
    std::vector<std::unique_ptr<RunningProcess>> processes;
    std::vector<LogFollower> followers;
    record.ranks.clear();
    record.scheduler["pids"] = Json::array();
    for (std::size_t i = 0; i < commands.size(); ++i) {
        const fs::path log = context.dir.logs() / fmt::format("{}.log", labels[i]);
        processes.push_back(std::make_unique<RunningProcess>(commands[i], log));
        followers.emplace_back(labels[i], log);
        RankOutcome outcome;
        outcome.rank = static_cast<int>(i);
        outcome.log = fs::relative(log, context.dir.path).string();
        record.ranks.push_back(outcome);
        record.scheduler["pids"].push_back(processes.back()->pid());
    }
    record.transition(RunState::running, context.dir.path);

    const auto start = std::chrono::steady_clock::now();
    std::optional<RunState> ending;
    std::string why;
    std::optional<std::chrono::steady_clock::time_point> terminated_at;
    bool killed = false;
    while (true) {
        std::size_t running = 0;
        for (std::size_t i = 0; i < processes.size(); ++i) {
            const auto status = processes[i]->poll();
            if (!status) {
                ++running;
                continue;
            }
            RankOutcome& outcome = record.ranks[i];
            if (!outcome.exit_code) {
                outcome.exit_code = status->code;
                outcome.signal = status->signal;
                outcome.seconds = status->seconds;
                if (!status->ok() && !ending) {
                    ending = RunState::failed;
                    followers[i].pump(context.out, true);
                    why = fmt::format("{} ended with {}; last lines of {}:\n{}", labels[i], status->describe(), outcome.log,
                                      tail_lines(context.dir.path / outcome.log, 10));
                }
            }
        }
        for (auto& follower : followers) {
            follower.pump(context.out);
        }
        if (running == 0) {
            break;
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!ending && interrupt_signal() != 0) {
            ending = RunState::cancelled;
            why = fmt::format("interrupted by {}", interrupt_signal() == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM");
        }
        if (!ending && limit > 0 && elapsed > static_cast<double>(limit)) {
            ending = RunState::timeout;
            why = fmt::format("time limit {} ({} s) reached", plan.time_limit, limit);
        }
        if (ending && !terminated_at) {
            // The others are stopped too: a half-finished collective would only hang.
            for (auto& process : processes) {
                process->signal_group(SIGTERM);
            }
            terminated_at = std::chrono::steady_clock::now();
        } else if (terminated_at && !killed &&
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - *terminated_at).count() > context.grace_seconds) {
            for (auto& process : processes) {
                process->signal_group(SIGKILL);
            }
            killed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto& follower : followers) {
        follower.pump(context.out, true);
    }
    if (ending) {
        record.transition(*ending, context.dir.path, why);
    } else {
        // Trace collection decides between completed and failed.
        record.save(context.dir.path);
    }
}

void execute_local(ExecutionContext& context) {
    const Plan& plan = context.run.plan;
    const fs::path script = context.dir.rendered() / context.run.launch_script;
    const int port = free_port();
    context.record.scheduler["master_port"] = port;
    std::vector<Command> commands;
    std::vector<std::string> labels;
    for (long long rank = 0; rank < plan.world_size; ++rank) {
        Command command;
        command.argv = {"/bin/bash", script.string()};
        command.cwd = context.dir.rendered();
        command.env = current_environment({{"RANK", std::to_string(rank)},
                                           {"LOCAL_RANK", std::to_string(rank % plan.ranks_per_node)},
                                           {"WORLD_SIZE", std::to_string(plan.world_size)},
                                           {"LOCAL_WORLD_SIZE", std::to_string(plan.ranks_per_node)},
                                           {"MASTER_ADDR", "127.0.0.1"},
                                           {"MASTER_PORT", std::to_string(port)},
                                           {"CCL_RUN_DIR", context.dir.rendered().string()}});
        commands.push_back(std::move(command));
        labels.push_back(fmt::format("rank_{}", rank));
    }
    supervise_processes(context, commands, labels);
}

} // namespace harness
