#include "executor.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <chrono>
#include <fmt/format.h>
#include <map>
#include <set>
#include <ostream>
#include <thread>

namespace harness {

namespace {

using Clock = std::chrono::steady_clock;

/// `scontrol show job -o` prints one line of KEY=VALUE pairs.
std::map<std::string, std::string> parse_scontrol(const std::string& line) {
    std::map<std::string, std::string> fields;
    for (const auto& word : split(trim(line), ' ')) {
        const auto eq = word.find('=');
        if (eq != std::string::npos && fields.count(word.substr(0, eq)) == 0) {
            fields[word.substr(0, eq)] = word.substr(eq + 1);
        }
    }
    return fields;
}

struct JobView {
    bool known = false;        ///< the controller answered about this job
    bool unreachable = false;  ///< the controller did not answer at all
    std::string state;
    std::string reason;
    std::string elapsed;
    std::string nodes;
    std::string exit_code;  ///< "code:signal"
    long long restarts = 0; ///< times Slurm requeued it
    std::string raw;
};

class SlurmClient {
public:
    explicit SlurmClient(const ClusterProfile& cluster) {
        Environment overrides;
        if (!cluster.slurm_conf.empty()) {
            overrides.emplace_back("SLURM_CONF", cluster.slurm_conf);
        }
        m_env = current_environment(overrides);
    }

    ExitStatus run(std::vector<std::string> argv, const fs::path& cwd = {}, const Environment& extra = {}) const {
        Command command{std::move(argv), m_env, cwd};
        for (const auto& [key, value] : extra) {
            command.env.emplace_back(key, value);
        }
        return run_command(command);
    }

    JobView view(const std::string& job) const {
        JobView out;
        const ExitStatus status = run({"scontrol", "show", "job", "-o", job});
        out.raw = status.output;
        if (!status.ok()) {
            const std::string text = to_lower(status.output);
            // "Invalid job id" means the record aged out: the job is over, ask the completion log.
            out.unreachable = text.find("invalid job id") == std::string::npos;
            return out;
        }
        const auto fields = parse_scontrol(status.output);
        const auto get = [&](const char* key) {
            const auto it = fields.find(key);
            return it == fields.end() ? std::string() : it->second;
        };
        out.known = true;
        out.state = get("JobState");
        out.reason = get("Reason");
        out.elapsed = get("RunTime");
        out.nodes = get("NodeList");
        out.exit_code = get("ExitCode");
        try {
            out.restarts = std::stoll(get("Restarts"));
        } catch (const std::exception&) {
            out.restarts = 0;
        }
        return out;
    }

private:
    Environment m_env;
};

/// Where a Slurm state leaves the run; nullopt while the job may still run (incl. REQUEUED).
std::optional<RunState> final_state(const std::string& state) {
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

void save_accounting(const SlurmClient& slurm, const std::string& job, const fs::path& run_dir, RunRecord& record,
                     const SecretScrubber& secrets) {
    const fs::path dir = run_dir / "accounting";
    fs::create_directories(dir);
    const ExitStatus scontrol = slurm.run({"scontrol", "show", "job", job});
    write_file_atomic(dir / "scontrol.txt", secrets.scrub(scontrol.output));
    // Without slurmdbd plain sacct is disabled; -c reads the job completion file instead.
    ExitStatus sacct = slurm.run({"sacct", "-j", job, "--parsable2", "--format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,AllocCPUS,AllocTRES"});
    std::string source = "sacct";
    if (!sacct.ok() || sacct.output.find("disabled") != std::string::npos) {
        sacct = slurm.run({"sacct", "-c", "-j", job, "--parsable2"});
        source = "sacct -c";
    }
    write_file_atomic(dir / "sacct.txt", secrets.scrub(sacct.output));
    record.scheduler["accounting"] = Json(Json::Object{{"source", source}, {"sacct", "accounting/sacct.txt"},
                                                       {"scontrol", "accounting/scontrol.txt"}});
}

} // namespace

void execute_slurm(ExecutionContext& context) {
    RunRecord& record = context.record;
    const SlurmClient slurm(context.cluster);
    const fs::path rendered = context.dir.rendered();
    // sbatch hands the submitter's environment to the job (--export=ALL): the card's secrets
    // reach it that way, never through a file of the run directory.
    Environment extra = context.job_secrets;
    extra.emplace_back("CCL_RUN_DIR", rendered.string());
    const ExitStatus submitted = slurm.run({"sbatch", "--parsable", context.run.launch_script}, rendered, extra);
    if (!submitted.ok()) {
        record.transition(RunState::failed, context.dir.path, "sbatch refused the job: " + trim(submitted.output));
        return;
    }
    const std::string job = trim(split(trim(submitted.output), ';').front());
    record.job_ids.push_back(job);
    // Slurm, not this process, runs the job from here on: it outlives the harness by design.
    record.detached_job = job;
    record.transition(RunState::submitted, context.dir.path);
    context.out << fmt::format("submitted job {} ({})\n", job, context.cluster.name);

    // Poll one scontrol call at a time, backing off from 1 s to 10 s while nothing changes, and
    // never mistake an unreachable controller for a job failure.
    double interval = 1.0;
    std::string last_line;
    std::string last_state;
    bool cancel_sent = false;
    long long restarts = 0;
    std::optional<RunState> result;
    std::string reason;
    auto unreachable_since = std::optional<Clock::time_point>();
    const long long limit = parse_time_limit(context.run.plan.time_limit);
    const double unreachable_budget = static_cast<double>(std::max(600LL, limit));
    while (!result) {
        if (interrupt_signal() != 0 && !cancel_sent) {
            context.out << fmt::format("\ninterrupted: cancelling job {}\n", job);
            slurm.run({"scancel", job});
            cancel_sent = true;
            interval = 1.0;
        }
        const JobView view = slurm.view(job);
        if (view.unreachable) {
            if (!unreachable_since) {
                unreachable_since = Clock::now();
                context.out << "slurm controller unreachable; retrying\n";
            }
            if (std::chrono::duration<double>(Clock::now() - *unreachable_since).count() > unreachable_budget) {
                result = RunState::failed;
                reason = fmt::format("slurm controller unreachable for {:.0f} s while following job {}", unreachable_budget, job);
                break;
            }
        } else if (!view.known) {
            // Aged out of the controller: the completion log has the last word.
            const ExitStatus sacct = slurm.run({"sacct", "-c", "-j", job, "--parsable2", "--noheader", "--format=State"});
            const std::string state = trim(split(trim(sacct.output), '\n').front());
            result = final_state(split(state, ' ').front()).value_or(RunState::failed);
            reason = fmt::format("job {} ended {}", job, state.empty() ? "without a record" : state);
            break;
        } else {
            unreachable_since.reset();
            // A requeue can come and go between two polls; the restart count keeps it.
            if (view.restarts > restarts) {
                restarts = view.restarts;
                record.scheduler["restarts"] = restarts;
                record.save(context.dir.path);
                context.out << fmt::format("job {}: requeued (restart {})\n", job, restarts);
            }
            if (view.state != last_state) {
                interval = 1.0;
                last_state = view.state;
                // A short job can start and end between two polls: any state past RUNNING
                // means it ran (a job cancelled while pending never reaches these).
                static const std::set<std::string> k_has_run = {"RUNNING", "COMPLETING", "COMPLETED", "FAILED",
                                                                "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"};
                if (k_has_run.count(view.state) != 0 && record.state == RunState::submitted) {
                    record.scheduler["nodes"] = view.nodes;
                    record.transition(RunState::running, context.dir.path);
                }
                if (!context.interactive) {
                    context.out << fmt::format("job {}: {}{}\n", job, view.state,
                                               view.reason.empty() || view.reason == "None" ? "" : " (" + view.reason + ")");
                }
            }
            if (const auto done = final_state(view.state)) {
                result = done;
                reason = fmt::format("job {} {} with exit code {}{}", job, view.state, view.exit_code,
                                     view.reason.empty() || view.reason == "None" ? "" : ", reason " + view.reason);
                break;
            }
            const std::string line = fmt::format("job {}: {} {} elapsed {} {}", job, view.state,
                                                 view.reason == "None" ? "" : view.reason, view.elapsed, view.nodes);
            if (context.interactive && line != last_line) {
                context.out << "\r\033[K" << line << std::flush;
                last_line = line;
            }
        }
        // Sleep in short slices so Ctrl-C is acted on at once.
        for (double slept = 0; slept < interval && (interrupt_signal() == 0 || cancel_sent); slept += 0.1) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        interval = std::min(10.0, interval * 1.5);
    }
    if (context.interactive) {
        context.out << "\n";
    }
    save_accounting(slurm, job, context.dir.path, record, context.secrets);
    if (cancel_sent) {
        result = RunState::cancelled;
        reason = fmt::format("interrupted; job {} cancelled with scancel", job);
    }
    if (*result == RunState::failed || *result == RunState::timeout) {
        // The batch script's own output says what went wrong; quote its end.
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(rendered / "logs", ec)) {
            if (ends_with(entry.path().filename().string(), "-" + job + ".out")) {
                reason += fmt::format("; last lines of {}:\n{}", entry.path().filename().string(), tail_lines(entry.path(), 10));
            }
        }
    }
    if (*result == RunState::completed) {
        record.reason = reason;
        record.save(context.dir.path);  // collection decides between completed and failed
    } else {
        record.transition(*result, context.dir.path, reason);
    }
}

} // namespace harness
