#include "run/slurm_array.hpp"

#include "run/executor.hpp"
#include "run/slurm_job_end.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace harness {

std::string array_index_list(std::vector<std::size_t> indices) {
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < indices.size();) {
        std::size_t j = i;
        while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) {
            ++j;
        }
        parts.push_back(j == i ? std::to_string(indices[i]) : fmt::format("{}-{}", indices[i], indices[j]));
        i = j + 1;
    }
    return join(parts, ",");
}

namespace {

std::size_t index_of(const std::string& text, const std::string& whole) {
    if (text.empty() || text.size() > 9 || !all_digits(text)) {
        throw input_error(fmt::format("array task ids {}: {} is not an index", enquote(whole), enquote(text)));
    }
    return static_cast<std::size_t>(std::stoul(text));
}

} // namespace

std::vector<std::size_t> parse_array_indices(const std::string& text, std::size_t max_count) {
    // "%K" is the throttle, not an index (sbatch(1), --array "A maximum number of simultaneously
    // running tasks ... may be specified using a % separator").
    std::string list = split(text, '%').front();
    if (!list.empty() && list.front() == '[' && list.back() == ']') {
        list = list.substr(1, list.size() - 2);
    }
    std::vector<std::size_t> out;
    for (const auto& range : split(list, ',')) {
        const auto colon = range.find(':');
        const std::string span = range.substr(0, colon);
        const std::size_t step = colon == std::string::npos ? 1 : index_of(range.substr(colon + 1), text);
        const auto dash = span.find('-');
        const std::size_t first = index_of(span.substr(0, dash), text);
        const std::size_t last = dash == std::string::npos ? first : index_of(span.substr(dash + 1), text);
        if (last < first || step == 0) {
            throw input_error(fmt::format("array task ids {}: {} is not a range", enquote(text), enquote(range)));
        }
        for (std::size_t i = first; i <= last; i += step) {
            if (out.size() >= max_count) {
                throw input_error(fmt::format("array task ids {}: more than {} indices", enquote(text), max_count));
            }
            out.push_back(i);
        }
    }
    return out;
}

ArrayView parse_array_view(const std::string& output, const std::string& array_id) {
    ArrayView view;
    for (const auto& line : split(output, '\n')) {
        if (trim(line).empty()) {
            continue;
        }
        auto fields = parse_scontrol_job(line);
        if (fields["ArrayJobId"] != array_id) {
            continue;
        }
        view.known = true;
        const std::string& ids = fields["ArrayTaskId"];
        // A task split out of the array prints its own index; the pending remainder prints a
        // list (src/api/job_info.c slurm_sprint_job_info: array_task_str when it is set).
        const bool single = !ids.empty() && all_digits(ids);
        for (const std::size_t index : parse_array_indices(ids)) {
            ArrayTask task;
            task.index = index;
            task.job_id = single ? fields["JobId"] : "";
            task.state = fields["JobState"];
            task.reason = fields["Reason"];
            task.exit_code = fields["ExitCode"];
            task.nodes = fields["NodeList"];
            view.tasks.push_back(std::move(task));
        }
    }
    return view;
}

std::vector<std::string> sbatch_directives_of(const std::string& script) {
    std::vector<std::string> out;
    for (const auto& raw : split(script, '\n')) {
        const std::string line = trim(raw);
        if (line.empty()) {
            continue;
        }
        if (line.front() != '#') {
            break;
        }
        if (starts_with(line, "#SBATCH ")) {
            out.push_back(trim(line.substr(8)));
        }
    }
    return out;
}

std::string array_geometry_key(const std::vector<std::string>& directives) {
    std::vector<std::string> kept;
    for (const auto& directive : directives) {
        if (!starts_with(directive, "--job-name=") && !starts_with(directive, "--output=")) {
            kept.push_back(directive);
        }
    }
    return join(kept, "\n");
}

std::string array_wrapper_script(const std::vector<std::string>& directives, const std::map<std::size_t, fs::path>& rendered_dirs,
                                 const std::string& launch_script, const std::string& job_name) {
    std::string text = "#!/bin/bash\n"
                       "# A ccl-harness sweep as one Slurm job array: task N runs point N's rendered launch script in\n"
                       "# its own run directory, as `ccl-harness run` would have submitted it alone.\n";
    for (const auto& directive : directives) {
        if (!starts_with(directive, "--output=")) {
            text += "#SBATCH " + directive + "\n";
        }
    }
    text += "#SBATCH --output=logs/%x-%A_%a.out\n"
            "set -euo pipefail\n"
            "declare -A runs=(\n";
    for (const auto& [index, dir] : rendered_dirs) {
        text += fmt::format("    [{}]={}\n", index, shell_quote(dir.string()));
    }
    text += ")\n"
            "CCL_RUN_DIR=\"${runs[$SLURM_ARRAY_TASK_ID]:-}\"\n"
            "if [ -z \"$CCL_RUN_DIR\" ]; then\n"
            "    echo \"no sweep point for array index $SLURM_ARRAY_TASK_ID\" >&2\n"
            "    exit 2\n"
            "fi\n"
            "export CCL_RUN_DIR\n"
            "mkdir -p \"$CCL_RUN_DIR/logs\"\n"
            "cd \"$CCL_RUN_DIR\"\n";
    text += fmt::format("exec bash {} >\"$CCL_RUN_DIR/logs/{}-${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}.out\" 2>&1\n",
                        shell_quote("./" + launch_script), job_name);
    return text;
}

SlurmArrayClient::SlurmArrayClient(ProcessRunner& runner, const ClusterProfile& cluster)
    : m_runner(runner), m_env(slurm_client_environment(cluster)) {}

SlurmSubmission SlurmArrayClient::submit(const fs::path& script, const fs::path& cwd, const Environment& extra,
                                         const std::vector<std::size_t>& indices, std::size_t max_parallel) const {
    std::string array = "--array=" + array_index_list(indices);
    if (max_parallel > 0) {
        array += fmt::format("%{}", max_parallel);
    }
    Command command{{"sbatch", "--parsable", array, script.string()}, m_env, cwd};
    for (const auto& [key, value] : extra) {
        command.env.emplace_back(key, value);
    }
    const ExitStatus status = m_runner.run(command);
    SlurmSubmission out;
    if (!status.ok()) {
        out.error = trim(status.output);
        return out;
    }
    // "JOBID" or "JOBID;CLUSTER", as for a single job (src/sbatch/sbatch.c).
    out.job_id = trim(split(trim(status.output), ';').front());
    if (out.job_id.empty() || !all_digits(out.job_id)) {
        out.error = "sbatch printed no job id: " + trim(status.output);
        out.job_id.clear();
    }
    return out;
}

ArrayView SlurmArrayClient::query(const std::string& array_id) const {
    if (const std::string problem = slurm_job_id_problem(array_id); !problem.empty()) {
        throw input_error(fmt::format("job array id {}: {}; not passed to Slurm",
                                      json_string(array_id.substr(0, k_max_slurm_job_id_bytes)), problem));
    }
    const ExitStatus status = m_runner.run(Command{{"scontrol", "show", "job", "-o", array_id}, m_env, {}});
    if (!status.ok()) {
        ArrayView view;
        // "Invalid job id": every record aged out, not an unreachable controller.
        view.unreachable = to_lower(status.output).find("invalid job id") == std::string::npos;
        return view;
    }
    return parse_array_view(status.output, array_id);
}

namespace {

bool has_reason(const std::string& reason) { return !reason.empty() && reason != "None"; }

template <typename Callback, typename... Values> void notify(const Callback& callback, Values&&... values) {
    if (callback) {
        callback(std::forward<Values>(values)...);
    }
}

/// What the loop remembers of one task between polls.
struct TaskMemory {
    std::string array_id;
    std::string job_id;
    std::string last_state;
    std::string last_reason;
    bool started = false;
};

std::string task_name(const std::string& array_id, std::size_t index) { return fmt::format("{}_{}", array_id, index); }

} // namespace

std::map<std::size_t, SlurmOutcome> follow_slurm_arrays(const SlurmArrayClient& arrays, const SlurmClient& client,
                                                        const std::vector<FollowedArray>& followed, SlurmWaiter& waiter,
                                                        double unreachable_budget, const ArrayFollowEvents& events) {
    std::map<std::size_t, TaskMemory> remaining;
    for (const auto& array : followed) {
        for (const std::size_t index : array.indices) {
            remaining[index].array_id = array.array_id;
        }
    }
    std::map<std::size_t, SlurmOutcome> results;
    const auto finish = [&](std::size_t index, SlurmOutcome outcome) {
        notify(events.done, remaining[index].array_id, index, outcome);
        results[index] = std::move(outcome);
        remaining.erase(index);
    };
    // Tasks that ran and are past RUNNING's start (a short task can start and end between polls).
    static const std::set<std::string> k_has_run = {"RUNNING", "COMPLETING",    "COMPLETED", "FAILED",
                                                    "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"};
    bool cancel_sent = false;
    double cancel_sent_at = 0;
    int signals_at_cancel = 0;
    // A plain value, not std::optional: GCC's -Wmaybe-uninitialized misreads the optional here.
    bool unreachable = false;
    double unreachable_since = 0;
    double interval = 1.0;
    while (!remaining.empty()) {
        if (!cancel_sent && waiter.interrupted()) {
            notify(events.cancelling);
            for (const auto& array : followed) {
                client.cancel(array.array_id);
            }
            cancel_sent = true;
            cancel_sent_at = waiter.now();
            signals_at_cancel = waiter.interrupt_count();
            interval = 1.0;
        } else if (cancel_sent &&
                   (waiter.interrupt_count() > signals_at_cancel || waiter.now() - cancel_sent_at > k_cancel_wait_seconds)) {
            // As for one job (follow_slurm_job): the wait after scancel is bounded and a second
            // Ctrl-C or SIGTERM ends it. The tasks' runs stay open, their job ids kept, for attach.
            std::vector<std::string> pending;
            for (const auto& [index, memory] : remaining) {
                pending.push_back(task_name(memory.array_id, index));
            }
            throw HarnessError(fmt::format("interrupted; scancel sent, but job(s) {} had not ended when the harness stopped "
                                           "waiting: cancel pending; `ccl-harness attach RUN_DIR` finishes each run",
                                           join(pending, ", ")),
                               k_exit_interrupted);
        }
        for (const auto& array : followed) {
            const ArrayView view = arrays.query(array.array_id);
            if (view.unreachable) {
                if (!unreachable) {
                    unreachable = true;
                    unreachable_since = waiter.now();
                    notify(events.controller_unreachable);
                }
                continue;
            }
            unreachable = false;
            std::map<std::size_t, const ArrayTask*> by_index;
            for (const auto& task : view.tasks) {
                by_index[task.index] = &task;
            }
            for (const std::size_t index : array.indices) {
                const auto memory = remaining.find(index);
                if (memory == remaining.end()) {
                    continue;
                }
                TaskMemory& seen = memory->second;
                const auto it = by_index.find(index);
                if (it == by_index.end()) {
                    // Aged out of the controller (MinJobAge): the completion log has the last
                    // word, by the task's own job id; one never split out left no record we can ask.
                    SlurmOutcome out;
                    const std::string final = seen.job_id.empty() ? "" : client.completed_state(seen.job_id);
                    out.slurm_state = final;
                    out.state = slurm_final_state(split(final, ' ').front()).value_or(RunState::failed);
                    out.reason = fmt::format("job {} ended {}", task_name(array.array_id, index),
                                             final.empty() ? "without a record" : final);
                    finish(index, std::move(out));
                    continue;
                }
                const ArrayTask& task = *it->second;
                if (!task.job_id.empty()) {
                    seen.job_id = task.job_id;
                }
                if (task.state != seen.last_state || task.reason != seen.last_reason) {
                    seen.last_state = task.state;
                    seen.last_reason = task.reason;
                    if (k_has_run.count(task.state) != 0 && !seen.started) {
                        seen.started = true;
                        notify(events.started, array.array_id, task);
                    }
                    notify(events.state_changed, array.array_id, task);
                }
                if (const auto done = slurm_final_state(task.state)) {
                    SlurmOutcome out;
                    out.state = *done;
                    out.slurm_state = task.state;
                    out.exit_code = task.exit_code;
                    out.nodes = task.nodes;
                    out.reason = fmt::format("job {} {} with exit code {}{}", task_name(array.array_id, index), task.state,
                                             task.exit_code, has_reason(task.reason) ? ", reason " + task.reason : "");
                    if (cancel_sent && *done == RunState::cancelled) {
                        out.reason = fmt::format("interrupted; job {} cancelled with scancel", task_name(array.array_id, index));
                        out.interrupted = true;
                    }
                    finish(index, std::move(out));
                }
            }
        }
        if (remaining.empty()) {
            break;
        }
        if (unreachable && waiter.now() - unreachable_since > unreachable_budget) {
            for (auto it = remaining.begin(); it != remaining.end(); it = remaining.begin()) {
                SlurmOutcome out;
                out.state = RunState::failed;
                out.reason = fmt::format("slurm controller unreachable for {:.0f} s while following job {}", unreachable_budget,
                                         task_name(it->second.array_id, it->first));
                finish(it->first, std::move(out));
            }
            break;
        }
        waiter.sleep(interval, !cancel_sent);
        interval = std::min(10.0, interval * 1.5);
    }
    return results;
}

void record_array_task_end(const SlurmClient& client, const std::string& task_id, const SlurmOutcome& outcome, const fs::path& run_dir,
                           RunRecord& record, const SecretScrubber& secrets) {
    record.scheduler["array_task"] = task_id;
    if (!outcome.nodes.empty()) {
        record.scheduler["nodes"] = outcome.nodes;
    }
    record_slurm_job_end(client, task_id, outcome, run_dir, record, secrets);
}

} // namespace harness
