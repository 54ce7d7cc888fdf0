#include "run/executor.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <netinet/in.h>
#include <ostream>
#include <poll.h>
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

/// One rank's output: scrubbed as it arrives, appended to its log, and forwarded to the
/// terminal line by line with a rank prefix. Nothing unscrubbed is ever written anywhere.
class RankOutput {
public:
    RankOutput(std::string label, const fs::path& log, const SecretScrubber& secrets)
        : m_label(std::move(label)), m_log(log), m_scrubber(secrets) {
        // Appended, so a requeued or restarted rank keeps its earlier output.
        m_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (m_fd < 0) {
            throw HarnessError(fmt::format("{}: cannot open log: {}", log.string(), std::strerror(errno)));
        }
    }
    ~RankOutput() {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
    }
    RankOutput(const RankOutput&) = delete;
    RankOutput& operator=(const RankOutput&) = delete;

    void take(std::string_view chunk, std::ostream& out) { emit(m_scrubber.feed(chunk), out, false); }
    /// Releases what the scrubber held back and any unfinished line.
    void flush(std::ostream& out) { emit(m_scrubber.finish(), out, true); }
    std::size_t redacted() const { return m_scrubber.replaced(); }

private:
    void emit(const std::string& text, std::ostream& out, bool flush_partial) {
        write_all(text);
        m_pending += text;
        std::size_t newline = 0;
        while ((newline = m_pending.find('\n')) != std::string::npos) {
            out << fmt::format("[{}] {}\n", m_label, std::string_view(m_pending).substr(0, newline));
            m_pending.erase(0, newline + 1);
        }
        if (flush_partial && !m_pending.empty()) {
            out << fmt::format("[{}] {}\n", m_label, m_pending);
            m_pending.clear();
        }
        out.flush();
    }

    void write_all(const std::string& text) {
        if (const int error_number = write_fully(m_fd, text.data(), text.size()); error_number != 0) {
            throw HarnessError(fmt::format("{}: cannot write log: {}", m_log.string(), std::strerror(error_number)));
        }
    }

    std::string m_label;
    fs::path m_log;
    StreamScrubber m_scrubber;
    int m_fd = -1;
    std::string m_pending;
};

/// Waits up to `timeout_ms` for output from any process still holding its pipe open.
void wait_for_output(const std::vector<std::unique_ptr<RunningProcess>>& processes, int timeout_ms) {
    std::vector<pollfd> fds;
    for (const auto& process : processes) {
        if (process->output_fd() >= 0) {
            fds.push_back(pollfd{process->output_fd(), POLLIN, 0});
        }
    }
    if (fds.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
        return;
    }
    ::poll(fds.data(), fds.size(), timeout_ms);
}

} // namespace

long long parse_time_limit(const std::string& text) {
    if (text.empty() || text == "UNLIMITED" || text == "INFINITE") {
        return 0;
    }
    const auto bad = [&](const char* why) {
        return input_error(
            fmt::format("time limit {}: {} (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)", enquote(text), why));
    };
    // Each field is a few digits: no sign, no fraction, nothing stoll would wrap or refuse.
    const auto field = [&](const std::string& digits) {
        if (digits.empty() || digits.size() > 9 || !all_digits(digits)) {
            throw bad("not a Slurm time limit");
        }
        return std::stoll(digits);
    };
    long long days = 0;
    std::string rest = text;
    const auto dash = rest.find('-');
    if (dash != std::string::npos) {
        days = field(rest.substr(0, dash));
        rest = rest.substr(dash + 1);
    }
    const auto parts = split(rest, ':');
    if (parts.size() > 3) {
        throw bad("not a Slurm time limit");
    }
    std::vector<long long> values;
    for (const auto& part : parts) {
        values.push_back(field(part));
    }
    long long seconds = 0;
    if (dash != std::string::npos) {
        // days-hours[:minutes[:seconds]]
        const long long units[] = {3600, 60, 1};
        for (std::size_t i = 0; i < values.size(); ++i) {
            seconds += values[i] * units[i];
        }
    } else if (values.size() == 1) {
        seconds = values[0] * 60; // plain minutes, as Slurm reads them
    } else if (values.size() == 2) {
        seconds = values[0] * 60 + values[1]; // minutes:seconds
    } else {
        seconds = values[0] * 3600 + values[1] * 60 + values[2];
    }
    if (days > k_max_time_limit_seconds / 86400 || days * 86400 + seconds > k_max_time_limit_seconds) {
        throw bad(fmt::format("more than {} days", k_max_time_limit_seconds / 86400).c_str());
    }
    return days * 86400 + seconds;
}

void check_grace_seconds(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0 || seconds > k_max_grace_seconds) {
        throw input_error(fmt::format("--grace {}: expected a number of seconds from 0 to {:.0f}", seconds, k_max_grace_seconds));
    }
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
    std::vector<std::unique_ptr<RankOutput>> outputs;
    record.ranks.clear();
    record.scheduler["pids"] = Json::array();
    for (std::size_t i = 0; i < commands.size(); ++i) {
        const fs::path log = context.dir.logs() / fmt::format("{}.log", labels[i]);
        outputs.push_back(std::make_unique<RankOutput>(labels[i], log, context.secrets));
        processes.push_back(std::make_unique<RunningProcess>(commands[i]));
        RankOutcome outcome;
        outcome.rank = static_cast<int>(i);
        outcome.log = fs::relative(log, context.dir.path).string();
        record.ranks.push_back(outcome);
        record.scheduler["pids"].push_back(processes.back()->pid());
    }
    record.transition(RunState::running, context.dir.path);

    const auto drain = [&](std::size_t i) { outputs[i]->take(processes[i]->read_output(), context.out); };
    const auto start = std::chrono::steady_clock::now();
    std::optional<RunState> ending;
    std::string why;
    std::optional<std::chrono::steady_clock::time_point> terminated_at;
    bool killed = false;
    while (true) {
        std::size_t running = 0;
        for (std::size_t i = 0; i < processes.size(); ++i) {
            drain(i);
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
                    drain(i);
                    outputs[i]->flush(context.out);
                    why = fmt::format("{} ended with {}; last lines of {}:\n{}", labels[i], status->describe(), outcome.log,
                                      tail_lines(context.dir.path / outcome.log, 10));
                }
            }
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
        wait_for_output(processes, 100);
    }
    // What the ranks wrote last (a descendant still holding the pipe is not waited for).
    for (std::size_t i = 0; i < processes.size(); ++i) {
        drain(i);
        outputs[i]->flush(context.out);
        context.redacted += outputs[i]->redacted();
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
        // The card's secret env reaches the ranks here, never through a file (env.sh names it only).
        Environment overrides = context.job_secrets;
        overrides.insert(overrides.end(), {{"RANK", std::to_string(rank)},
                                           {"LOCAL_RANK", std::to_string(rank % plan.ranks_per_node)},
                                           {"WORLD_SIZE", std::to_string(plan.world_size)},
                                           {"LOCAL_WORLD_SIZE", std::to_string(plan.ranks_per_node)},
                                           {"MASTER_ADDR", "127.0.0.1"},
                                           {"MASTER_PORT", std::to_string(port)},
                                           {"CCL_RUN_DIR", context.dir.rendered().string()}});
        command.env = current_environment(overrides);
        commands.push_back(std::move(command));
        labels.push_back(fmt::format("rank_{}", rank));
    }
    supervise_processes(context, commands, labels);
}

} // namespace harness
