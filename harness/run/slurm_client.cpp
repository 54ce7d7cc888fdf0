#include "run/slurm_client.hpp"

#include "card/user_defaults.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fmt/format.h>
#include <regex>
#include <set>
#include <thread>

namespace harness {

namespace {

/// Whether `word` starts a new KEY=VALUE pair of scontrol's output rather than continuing a
/// value with spaces. Every key scontrol prints starts with an upper-case letter
/// (src/scontrol/info_job.c); keys such as "AllocNode:Sid" and "Socks/Node" hold ':' and '/'.
std::size_t key_length(const std::string& word) {
    if (word.empty() || std::isupper(static_cast<unsigned char>(word.front())) == 0) {
        return 0;
    }
    for (std::size_t i = 1; i < word.size(); ++i) {
        const auto c = static_cast<unsigned char>(word[i]);
        if (c == '=') {
            return i;
        }
        if (std::isalnum(c) == 0 && c != '_' && c != ':' && c != '/') {
            return 0;
        }
    }
    return 0;
}

std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::string current;
    for (const char c : text) {
        if (std::isspace(static_cast<unsigned char>(c)) != 0) {
            if (!current.empty()) {
                out.push_back(std::move(current));
                current.clear();
            }
        } else {
            current += c;
        }
    }
    if (!current.empty()) {
        out.push_back(std::move(current));
    }
    return out;
}

bool has_reason(const std::string& reason) { return !reason.empty() && reason != "None"; }

/// A job id checked before it reaches a Slurm tool, so that the tool sees one job and never an
/// option: run.json's reader refused the record already; this refuses what else gets here.
const std::string& checked_job(const std::string& job) {
    if (const std::string problem = slurm_job_id_problem(job); !problem.empty()) {
        const std::string shown = job.size() > k_max_slurm_job_id_bytes ? job.substr(0, k_max_slurm_job_id_bytes) + "..." : job;
        throw input_error(fmt::format("job id {}: {}; not passed to Slurm", json_string(shown), problem));
    }
    return job;
}

} // namespace

std::string slurm_job_id_problem(const std::string& id) {
    if (id.size() > k_max_slurm_job_id_bytes) {
        return fmt::format("{} bytes, longer than a Slurm job id ({} at most)", id.size(), k_max_slurm_job_id_bytes);
    }
    // A job id is a 32-bit number: at most 10 digits, as is an array index or a het offset.
    const auto number = [](const std::string& text) { return !text.empty() && text.size() <= 10 && all_digits(text); };
    const std::size_t separator = id.find_first_of("_+");
    if (!number(id.substr(0, separator)) || (separator != std::string::npos && !number(id.substr(separator + 1)))) {
        return "not a Slurm job id (digits, then _INDEX for an array task or +OFFSET for a heterogeneous job's component)";
    }
    return "";
}

std::map<std::string, std::string> parse_scontrol_job(const std::string& output) {
    std::map<std::string, std::string> fields;
    std::string key;
    std::string value;
    const auto flush = [&] {
        if (!key.empty() && fields.count(key) == 0) {
            fields[key] = value;
        }
    };
    for (const auto& word : words(output)) {
        if (const std::size_t length = key_length(word); length != 0) {
            flush();
            key = word.substr(0, length);
            value = word.substr(length + 1);
        } else if (!key.empty()) {
            value += ' ' + word;
        }
    }
    flush();
    return fields;
}

Environment slurm_client_environment(const ClusterProfile& cluster) {
    Environment overrides;
    if (!cluster.slurm_conf.empty()) {
        overrides.emplace_back("SLURM_CONF", cluster.slurm_conf);
    }
    Environment env = current_environment(overrides);
    const auto& read = sbatch_input_variables();
    env.erase(std::remove_if(env.begin(), env.end(),
                             [&](const auto& entry) {
                                 return std::any_of(read.begin(), read.end(),
                                                    [&](const auto& variable) { return variable.first == entry.first; });
                             }),
              env.end());
    return env;
}

SlurmClient::SlurmClient(ProcessRunner& runner, const ClusterProfile& cluster)
    : m_runner(runner), m_env(slurm_client_environment(cluster)) {}

ExitStatus SlurmClient::run(std::vector<std::string> argv, const fs::path& cwd, const Environment& extra) const {
    Command command{std::move(argv), m_env, cwd};
    for (const auto& [key, value] : extra) {
        command.env.emplace_back(key, value);
    }
    return m_runner.run(command);
}

SlurmSubmission SlurmClient::submit(const fs::path& script, const fs::path& cwd, const Environment& extra,
                                    const std::vector<std::string>& options) const {
    std::vector<std::string> argv{"sbatch", "--parsable"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(script.string());
    const ExitStatus status = run(std::move(argv), cwd, extra);
    SlurmSubmission out;
    if (!status.ok()) {
        out.error = trim(status.output);
        return out;
    }
    // "JOBID" or "JOBID;CLUSTER" (sbatch.c prints the cluster after a federation submit).
    out.job_id = trim(split(trim(status.output), ';').front());
    if (out.job_id.empty()) {
        out.error = "sbatch printed no job id";
    }
    return out;
}

SlurmJob SlurmClient::query(const std::string& job) const {
    SlurmJob out;
    const ExitStatus status = run({"scontrol", "show", "job", "-o", checked_job(job)});
    out.raw = status.output;
    if (!status.ok()) {
        // "Invalid job id" means the record aged out: the job is over, ask the completion log.
        out.unreachable = to_lower(status.output).find("invalid job id") == std::string::npos;
        return out;
    }
    const auto fields = parse_scontrol_job(status.output);
    const auto get = [&](const char* key) {
        const auto it = fields.find(key);
        return it == fields.end() ? std::string() : it->second;
    };
    out.known = true;
    out.state = get("JobState");
    out.reason = get("Reason");
    out.elapsed = get("RunTime");
    out.nodes = get("NodeList");
    out.partition = get("Partition");
    out.exit_code = get("ExitCode");
    try {
        out.restarts = std::stoll(get("Restarts"));
    } catch (const std::exception&) {
        out.restarts = 0;
    }
    return out;
}

// "--" ends scancel's options (getopt_long): whatever follows is a job id, never an option.
void SlurmClient::cancel(const std::string& job) const { run({"scancel", "--", checked_job(job)}); }

std::string SlurmClient::completed_state(const std::string& job) const {
    const ExitStatus sacct = run({"sacct", "-c", "-j", checked_job(job), "--parsable2", "--noheader", "--format=State"});
    return trim(split(trim(sacct.output), '\n').front());
}

SlurmAccounting SlurmClient::accounting(const std::string& job) const {
    SlurmAccounting out;
    out.scontrol = run({"scontrol", "show", "job", checked_job(job)}).output;
    // Without slurmdbd plain sacct is disabled; -c reads the job completion file instead.
    ExitStatus sacct = run(
        {"sacct", "-j", job, "--parsable2", "--format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES"});
    out.source = "sacct";
    if (!sacct.ok() || sacct.output.find("disabled") != std::string::npos) {
        sacct = run({"sacct", "-c", "-j", job, "--parsable2"});
        out.source = "sacct -c";
    }
    out.sacct = std::move(sacct.output);
    return out;
}

SrunReport parse_srun_report(const std::string& batch_output) {
    // srun's own words (src/srun/libsrun/launch.c, _task_finish): error("%s: %s %s: Exited with
    // exit code %d", hosts, "task"|"tasks", ids, rc), error("%s: %s %s: %s%s", ..., strsignal(sig),
    // core) and error("%s: %s %s: Out Of Memory"); _node_fail_handler: error("Node failure on
    // %s", nodelist). error() prefixes "srun: error: ".
    static const std::regex task_end(R"(^srun: error: (\S+): tasks? ([0-9,\-]+): (.+)$)");
    static const std::regex node_failure(R"(^srun: error: Node failure on (\S+)$)");
    SrunReport out;
    for (const std::string& raw : split(batch_output, '\n')) {
        const std::string line = trim(raw);
        std::smatch match;
        if (std::regex_match(line, match, task_end)) {
            out.task_ends.push_back({match[1].str(), match[2].str(), match[3].str()});
        } else if (std::regex_match(line, match, node_failure)) {
            out.failed_nodes.push_back(match[1].str());
        }
    }
    return out;
}

std::vector<SacctRow> parse_sacct_rows(const std::string& table) {
    std::vector<SacctRow> rows;
    std::vector<std::string> header;
    for (const std::string& raw : split(table, '\n')) {
        const std::string line = trim(raw);
        if (line.empty()) {
            continue;
        }
        const std::vector<std::string> cells = split(line, '|');
        if (header.empty()) {
            header = cells;
            continue;
        }
        SacctRow row;
        for (std::size_t i = 0; i < cells.size() && i < header.size(); ++i) {
            if (header[i] == "JobID") {
                row.job_id = cells[i];
            } else if (header[i] == "State") {
                row.state = cells[i];
            } else if (header[i] == "ExitCode") {
                row.exit_code = cells[i];
            } else if (header[i] == "NodeList") {
                row.nodes = cells[i];
            }
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::optional<SrunTaskEnd> first_failed_task(const SrunReport& report) {
    for (const SrunTaskEnd& end : report.task_ends) {
        if (starts_with(end.how, "Exited with exit code")) {
            return end;
        }
    }
    if (!report.task_ends.empty()) {
        return report.task_ends.front();
    }
    return std::nullopt;
}

std::string describe_job_failure(const SrunReport& report, const std::vector<SacctRow>& rows, bool tasks_are_ranks) {
    std::vector<std::string> parts;
    for (const std::string& node : report.failed_nodes) {
        parts.push_back(fmt::format("node {} failed (srun: Node failure on {})", node, node));
    }
    // After a node failure srun ends the surviving tasks itself ("Terminated"): they did not fail.
    const auto task = first_failed_task(report);
    const bool task_is_cause = task && (report.failed_nodes.empty() || starts_with(task->how, "Exited with exit code"));
    if (task_is_cause) {
        const bool one = task->tasks.find_first_of(",-") == std::string::npos;
        const char* noun = tasks_are_ranks ? (one ? "rank" : "ranks") : (one ? "srun task" : "srun tasks");
        parts.push_back(fmt::format("{} {} on {}: {}", noun, task->tasks, task->nodes, task->how));
    }
    // The job's own row repeats the verdict and the batch step only says the script ended;
    // the numbered steps are the srun steps the ranks ran in.
    for (const SacctRow& row : rows) {
        const std::size_t dot = row.job_id.find('.');
        if (dot == std::string::npos || !all_digits(row.job_id.substr(dot + 1)) || row.state == "COMPLETED") {
            continue;
        }
        parts.push_back(fmt::format("step {} {} with exit code {} on {}", row.job_id, row.state, row.exit_code, row.nodes));
    }
    return join(parts, "; ");
}

std::vector<SlurmNodeReason> SlurmClient::node_reasons(const std::string& nodes) const { return sinfo_reasons("-n", nodes); }

std::vector<SlurmNodeReason> SlurmClient::out_of_service(const SlurmJob& pending) const {
    if (const std::string nodes = unavailable_nodes(pending.reason); !nodes.empty()) {
        return node_reasons(nodes);
    }
    // "Nodes required for job are DOWN, DRAINED%s or reserved for jobs in higher priority
    // partitions" (src/slurmctld/job_scheduler.c:1747), spaces made '_' as above.
    if (starts_with(pending.reason, "Nodes_required_for_job_are_DOWN") && !pending.partition.empty()) {
        return sinfo_reasons("-p", pending.partition);
    }
    return {};
}

std::vector<SlurmNodeReason> SlurmClient::sinfo_reasons(const char* selector, const std::string& value) const {
    const ExitStatus status = run({"sinfo", "-h", "-R", selector, value, "-o", "%n|%T|%E"});
    std::vector<SlurmNodeReason> out;
    if (!status.ok()) {
        return out;
    }
    for (const std::string& line : split(trim(status.output), '\n')) {
        const std::size_t first = line.find('|');
        const std::size_t second = first == std::string::npos ? first : line.find('|', first + 1);
        if (second == std::string::npos) {
            continue;
        }
        // The reason is free text and may hold '|' itself: it is all that follows.
        out.push_back({trim(line.substr(0, first)), trim(line.substr(first + 1, second - first - 1)), trim(line.substr(second + 1))});
    }
    return out;
}

std::string unavailable_nodes(const std::string& reason) {
    // "ReqNodeNotAvail, UnavailableNodes:%s" (src/slurmctld/node_scheduler.c:2877), its spaces
    // made '_' by scontrol (src/scontrol/info_job.c:236-242).
    static const std::string k_marker = "UnavailableNodes:";
    const std::size_t at = reason.find(k_marker);
    if (at == std::string::npos) {
        return {};
    }
    return trim(reason.substr(at + k_marker.size()));
}

std::optional<RunState> slurm_final_state(const std::string& state) {
    if (state == "COMPLETED") {
        return RunState::completed;
    }
    if (state == "TIMEOUT" || state == "DEADLINE") {
        return RunState::timeout;
    }
    if (state == "CANCELLED") {
        return RunState::cancelled;
    }
    if (state == "FAILED" || state == "NODE_FAIL" || state == "OUT_OF_MEMORY" || state == "BOOT_FAIL") {
        return RunState::failed;
    }
    // PENDING, CONFIGURING, RUNNING, COMPLETING, SUSPENDED, REQUEUED, REQUEUE_HOLD, REQUEUE_FED,
    // RESIZING, STOPPED, SIGNALING, and PREEMPTED (which Slurm follows with a requeue or a cancel).
    return std::nullopt;
}

double SystemSlurmWaiter::now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void SystemSlurmWaiter::sleep(double seconds, bool wake_on_interrupt) {
    // Short slices so Ctrl-C is acted on at once; a new one always wakes (it ends a cancel's wait).
    const int signals = interrupt_count();
    for (double slept = 0;
         slept < seconds && interrupt_count() == signals && (!wake_on_interrupt || (interrupt_signal() == 0 && !detach_requested()));
         slept += 0.1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

bool SystemSlurmWaiter::interrupted() { return interrupt_signal() != 0; }

int SystemSlurmWaiter::interrupt_count() { return harness::interrupt_count(); }

bool SystemSlurmWaiter::detached() { return detach_requested(); }

namespace {

template <typename... Args, typename... Values> void notify(const std::function<void(Args...)>& callback, Values&&... values) {
    if (callback) {
        callback(std::forward<Values>(values)...);
    }
}

/// The loop's memory between polls.
struct FollowState {
    std::string last_state;
    std::string last_reason;
    bool started = false;
    bool cancel_sent = false;
    double cancel_sent_at = 0;
    int signals_at_cancel = 0;
    std::optional<double> unreachable_since;
    double interval = 1.0;
};

/// One answered poll of a job the controller knows; the outcome once it is final.
std::optional<SlurmOutcome> observe(const std::string& job, const SlurmJob& view, FollowState& state, SlurmOutcome& seen,
                                    const SlurmFollowEvents& events) {
    // A requeue can come and go between two polls; the restart count keeps it.
    if (view.restarts > seen.restarts) {
        seen.restarts = view.restarts;
        notify(events.requeued, seen.restarts);
    }
    seen.nodes = view.nodes;
    if (view.state != state.last_state) {
        state.interval = 1.0;
        state.last_state = view.state;
        // A short job can start and end between two polls: any state past RUNNING means it
        // ran (a job cancelled while pending never reaches these).
        static const std::set<std::string> k_has_run = {"RUNNING", "COMPLETING",    "COMPLETED", "FAILED",
                                                        "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"};
        if (k_has_run.count(view.state) != 0 && !state.started) {
            state.started = true;
            notify(events.started, view);
        }
        notify(events.state_changed, view);
    } else if (view.reason != state.last_reason) {
        // A pending job's Reason is why it waits (Priority, Resources, ReqNodeNotAvail...): a
        // user waiting hours needs to hear when it changes, not only the state.
        notify(events.state_changed, view);
    }
    state.last_reason = view.reason;
    if (const auto done = slurm_final_state(view.state)) {
        SlurmOutcome out = seen;
        out.state = *done;
        out.slurm_state = view.state;
        out.exit_code = view.exit_code;
        out.reason = fmt::format("job {} {} with exit code {}{}", job, view.state, view.exit_code,
                                 has_reason(view.reason) ? ", reason " + view.reason : "");
        return out;
    }
    notify(events.progress, view);
    return std::nullopt;
}

} // namespace

SlurmOutcome follow_slurm_job(const SlurmClient& client, const std::string& job, SlurmWaiter& waiter, double unreachable_budget,
                              const SlurmFollowEvents& events, double cancel_budget) {
    FollowState state;
    SlurmOutcome seen;
    std::optional<SlurmOutcome> result;
    while (!result) {
        // Once scancel is sent the end is the cancel's: following it is cheap and says how it ended.
        if (!state.cancel_sent && waiter.detached()) {
            seen.detached = true;
            seen.reason = fmt::format("detached from job {}", job);
            return seen;
        }
        if (!state.cancel_sent && waiter.interrupted()) {
            notify(events.cancelling);
            client.cancel(job);
            state.cancel_sent = true;
            state.cancel_sent_at = waiter.now();
            state.signals_at_cancel = waiter.interrupt_count();
            state.interval = 1.0;
        } else if (state.cancel_sent &&
                   (waiter.interrupt_count() > state.signals_at_cancel || waiter.now() - state.cancel_sent_at > cancel_budget)) {
            // Slurm has the cancel; a job stuck in COMPLETING, or a cancel that did not take, is
            // left to `attach` rather than holding the person who asked to stop.
            result = seen;
            result->cancel_pending = true;
            result->reason = fmt::format("interrupted; scancel sent to job {}, which had not ended when the harness stopped "
                                         "waiting {}: cancel pending",
                                         job,
                                         waiter.interrupt_count() > state.signals_at_cancel
                                             ? std::string("(interrupted again)")
                                             : fmt::format("(after {:.0f} s)", cancel_budget));
            return *result;
        }
        const SlurmJob view = client.query(job);
        if (view.unreachable) {
            if (!state.unreachable_since) {
                state.unreachable_since = waiter.now();
                notify(events.controller_unreachable);
            }
            if (waiter.now() - *state.unreachable_since > unreachable_budget) {
                result = seen;
                result->state = RunState::failed;
                result->reason = fmt::format("slurm controller unreachable for {:.0f} s while following job {}", unreachable_budget,
                                             job);
                break;
            }
        } else if (!view.known) {
            // Aged out of the controller: the completion log has the last word.
            const std::string final = client.completed_state(job);
            result = seen;
            result->slurm_state = final;
            result->state = slurm_final_state(split(final, ' ').front()).value_or(RunState::failed);
            result->reason = fmt::format("job {} ended {}", job, final.empty() ? "without a record" : final);
            break;
        } else {
            state.unreachable_since.reset();
            result = observe(job, view, state, seen, events);
            if (result) {
                break;
            }
        }
        waiter.sleep(state.interval, !state.cancel_sent);
        state.interval = std::min(10.0, state.interval * 1.5);
    }
    if (state.cancel_sent) {
        result->state = RunState::cancelled;
        result->reason = fmt::format("interrupted; job {} cancelled with scancel", job);
        result->interrupted = true;
    }
    return *result;
}

} // namespace harness
