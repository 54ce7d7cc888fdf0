#include "run/executor.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "util/process.hpp"
#include "util/quote.hpp"
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
    /// A line as the terminal shows it: a progress bar's carriage returns leave only the last
    /// state, and what is left is escaped, because a workload's output (a stranger's, under
    /// `reproduce --use-bundled-scripts`) must not move the cursor or recolour the harness's lines.
    /// The log keeps the bytes as they came.
    static std::string shown(std::string_view line) {
        while (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (const std::size_t cr = line.rfind('\r'); cr != std::string_view::npos) {
            line.remove_prefix(cr + 1);
        }
        return terminal_text(line);
    }

    void emit(const std::string& text, std::ostream& out, bool flush_partial) {
        write_all(text);
        m_pending += text;
        std::size_t newline = 0;
        while ((newline = m_pending.find('\n')) != std::string::npos) {
            out << fmt::format("[{}] {}\n", m_label, shown(std::string_view(m_pending).substr(0, newline)));
            m_pending.erase(0, newline + 1);
        }
        if (flush_partial && !m_pending.empty()) {
            out << fmt::format("[{}] {}\n", m_label, shown(m_pending));
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

namespace {

/// The ranks of one local run, from start to a final state: each rank's output streamed to its
/// log, the first failure, Ctrl-C or the time limit ending the others (SIGTERM, then SIGKILL
/// after the grace period).
class Supervisor {
public:
    Supervisor(ExecutionContext& context, const std::vector<Command>& commands, const std::vector<std::string>& labels)
        : m_context(context), m_labels(labels), m_limit(parse_time_limit(context.run.plan.time_limit)) {
        RunRecord& record = context.record;
        record.ranks.clear();
        record.scheduler["pids"] = Json::array();
        for (std::size_t i = 0; i < commands.size(); ++i) {
            const fs::path log = context.dir.logs() / fmt::format("{}.log", labels[i]);
            m_outputs.push_back(std::make_unique<RankOutput>(labels[i], log, context.secrets));
            m_processes.push_back(std::make_unique<RunningProcess>(commands[i]));
            RankOutcome outcome;
            outcome.rank = static_cast<int>(i);
            outcome.log = fs::relative(log, context.dir.path).string();
            record.ranks.push_back(outcome);
            record.scheduler["pids"].push_back(m_processes.back()->pid());
        }
        record.transition(RunState::running, context.dir.path);
    }

    void run() {
        const auto start = std::chrono::steady_clock::now();
        while (poll_ranks() > 0) {
            decide_ending(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            stop_the_others();
            wait_for_output(m_processes, 100);
        }
        // What the ranks wrote last (a descendant still holding the pipe is not waited for).
        for (std::size_t i = 0; i < m_processes.size(); ++i) {
            drain(i);
            m_outputs[i]->flush(m_context.out);
            m_context.redacted += m_outputs[i]->redacted();
        }
        if (m_ending) {
            m_context.record.transition(*m_ending, m_context.dir.path, m_why);
        } else {
            // Trace collection decides between completed and failed.
            m_context.record.save(m_context.dir.path);
        }
    }

private:
    void drain(std::size_t i) { m_outputs[i]->take(m_processes[i]->read_output(), m_context.out); }

    /// Records the ranks that ended; the first to fail ends the run. Returns how many still run.
    std::size_t poll_ranks() {
        std::size_t running = 0;
        for (std::size_t i = 0; i < m_processes.size(); ++i) {
            drain(i);
            const auto status = m_processes[i]->poll();
            if (!status) {
                ++running;
                continue;
            }
            RankOutcome& outcome = m_context.record.ranks[i];
            if (outcome.exit_code) {
                continue;
            }
            outcome.exit_code = status->code;
            outcome.signal = status->signal;
            outcome.seconds = status->seconds;
            if (!status->ok() && !m_ending) {
                m_ending = RunState::failed;
                drain(i);
                m_outputs[i]->flush(m_context.out);
                m_why = fmt::format("{} ended with {}; last lines of {}:\n{}", m_labels[i], status->describe(), outcome.log,
                                    tail_lines(m_context.dir.path / outcome.log, 10));
            }
        }
        return running;
    }

    void decide_ending(double elapsed) {
        if (!m_ending && interrupt_signal() != 0) {
            m_ending = RunState::cancelled;
            m_why = fmt::format("interrupted by {}", interrupt_signal() == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM");
        }
        if (!m_ending && m_limit > 0 && elapsed > static_cast<double>(m_limit)) {
            m_ending = RunState::timeout;
            m_why = fmt::format("time limit {} ({} s) reached", m_context.run.plan.time_limit, m_limit);
        }
    }

    /// Once the run is ending, the others are stopped too: a half-finished collective would only hang.
    void stop_the_others() {
        if (m_ending && !m_terminated_at) {
            signal_all(SIGTERM);
            m_terminated_at = std::chrono::steady_clock::now();
        } else if (m_terminated_at && !m_killed &&
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - *m_terminated_at).count() >
                       m_context.grace_seconds) {
            signal_all(SIGKILL);
            m_killed = true;
        }
    }

    void signal_all(int signal) {
        for (auto& process : m_processes) {
            process->signal_group(signal);
        }
    }

    ExecutionContext& m_context;
    const std::vector<std::string>& m_labels;
    long long m_limit = 0;
    std::vector<std::unique_ptr<RunningProcess>> m_processes;
    std::vector<std::unique_ptr<RankOutput>> m_outputs;
    std::optional<RunState> m_ending;
    std::string m_why;
    std::optional<std::chrono::steady_clock::time_point> m_terminated_at;
    bool m_killed = false;
};

} // namespace

void supervise_processes(ExecutionContext& context, const std::vector<Command>& commands, const std::vector<std::string>& labels) {
    Supervisor(context, commands, labels).run();
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
