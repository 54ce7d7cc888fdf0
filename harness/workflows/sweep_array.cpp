#include "workflows/sweep_array.hpp"

#include "card/cluster.hpp"
#include "plan/resolve.hpp"
#include "run/executor.hpp"
#include "run/slurm_array.hpp"
#include "run/slurm_client.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <ostream>
#include <set>

namespace harness {

namespace {

using StagedPoints = std::map<std::size_t, std::shared_ptr<StagedRun>>;

std::string profile_of(const SweepRecord& record, const SweepPoint& point, const fs::path& home) {
    try {
        const Resolved resolved = resolve({record.card, point.overrides, record.cluster, true, home});
        if (resolved.profile && resolved.profile->scheduler == Scheduler::slurm) {
            return resolved.profile->name;
        }
        return resolved.profile ? "" : "?";
    } catch (const HarnessError&) {
        return "?";
    }
}

/// A point's run ended (or never started): finish it as a run, record it in sweep.json.
void finish_point(SweepRecord& record, const fs::path& dir, std::size_t index, StagedRun& staged, std::ostream& out) {
    SweepPoint& point = record.points[index];
    RunOutcome ran;
    std::string error;
    try {
        ran = finish_staged_run(staged, out);
        out << format_run_outcome(ran);
    } catch (const HarnessError& caught) {
        ran.exit_code = caught.code() == k_exit_interrupted ? k_exit_interrupted : k_exit_failure;
        error = caught.what();
    }
    settle_point(point, ran, error, out);
    if (!error.empty()) {
        point.run_dir = absolute_path(staged.dir.path).string();
    }
    record.save(dir);
}

/// Renders every pending point into its run directory (recorded `rendered`), in index order.
StagedPoints stage_points(SweepRecord& record, const fs::path& dir, const SweepOptions& options, std::ostream& out) {
    StagedPoints staged;
    for (std::size_t index = 0; index < record.points.size(); ++index) {
        SweepPoint& point = record.points[index];
        if (point.state != PointState::pending || interrupt_signal() != 0) {
            continue;
        }
        point = SweepPoint{point.overrides, PointState::pending, "", "", "", std::nullopt, "", "", false};
        out << fmt::format("sweep {}: rendering point {}: {}\n", record.id, index, point_label(point));
        RunOptions run = point_run_options(record, dir, options, point);
        run.stage_only = true;
        try {
            RunOutcome ran = run_workload(run, out);
            if (!ran.staged) {
                settle_point(point, ran, "", out);
            } else {
                point.run_dir = ran.run_dir.string();
                staged[index] = std::move(ran.staged);
            }
        } catch (const HarnessError& caught) {
            // One point's failure, whatever it is, never stops the others.
            RunOutcome failed;
            failed.exit_code = caught.code() == k_exit_interrupted ? k_exit_interrupted : k_exit_failure;
            settle_point(point, failed, caught.what(), out);
        }
        record.save(dir);
    }
    return staged;
}

struct ArrayGroup {
    std::vector<std::size_t> indices;
    std::vector<std::string> directives; ///< the first point's
    std::string launch_script;
};

/// Points whose launch scripts ask Slurm for the same resources share an array.
std::vector<ArrayGroup> group_points(const StagedPoints& staged) {
    std::vector<ArrayGroup> groups;
    std::map<std::string, std::size_t> by_key;
    for (const auto& [index, run] : staged) {
        const std::string script = fs::path(run->run.launch_script).filename().string();
        const auto directives = sbatch_directives_of(read_file(run->dir.rendered() / script));
        const std::string key = script + "\n" + array_geometry_key(directives);
        const auto [it, fresh] = by_key.emplace(key, groups.size());
        if (fresh) {
            groups.push_back({{}, directives, script});
        }
        groups[it->second].indices.push_back(index);
    }
    return groups;
}

std::string job_name_of(const std::vector<std::string>& directives) {
    for (const auto& directive : directives) {
        if (starts_with(directive, "--job-name=")) {
            return directive.substr(11);
        }
    }
    return "ccl-sweep";
}

/// array-1.sbatch, array-2.sbatch...: a resumed sweep keeps what it submitted before.
fs::path next_wrapper(const fs::path& dir) {
    for (int n = 1;; ++n) {
        fs::path path = dir / fmt::format("array-{}.sbatch", n);
        std::error_code ec;
        if (!fs::exists(path, ec)) {
            return path;
        }
    }
}

/// Submits one group; returns the array id, or empty when sbatch refused it (its points then
/// failed, each with sbatch's answer).
std::string submit_group(SweepRecord& record, const fs::path& dir, const ArrayGroup& group, StagedPoints& staged,
                         const SlurmArrayClient& arrays, const SweepOptions& options, std::ostream& out) {
    std::map<std::size_t, fs::path> rendered;
    // sbatch hands the submitter's environment to every task (--export=ALL): the cards'
    // secrets reach them that way, never through a file, as for one job.
    Environment extra;
    std::set<std::string> names;
    for (const std::size_t index : group.indices) {
        rendered[index] = absolute_path(staged.at(index)->dir.rendered());
        for (const auto& [key, value] : staged.at(index)->job_secrets) {
            if (names.insert(key).second) {
                extra.emplace_back(key, value);
            }
        }
    }
    const std::string job_name = job_name_of(group.directives);
    const fs::path wrapper = next_wrapper(dir);
    write_file_atomic(wrapper, array_wrapper_script(group.directives, rendered, group.launch_script, job_name));
    fs::create_directories(dir / "logs");
    const SlurmSubmission submitted = arrays.submit(wrapper, dir, extra, group.indices,
                                                    static_cast<std::size_t>(options.max_parallel));
    if (!submitted.ok()) {
        for (const std::size_t index : group.indices) {
            StagedRun& run = *staged.at(index);
            run.record.transition(RunState::failed, run.dir.path, "sbatch refused the job array: " + submitted.error);
            finish_point(record, dir, index, run, out);
        }
        return "";
    }
    out << fmt::format("sweep {}: submitted job array {} ({}, --array={}{}) for {} point(s)\n", record.id, submitted.job_id,
                       wrapper.filename().string(), array_index_list(group.indices),
                       options.max_parallel > 0 ? fmt::format("%{}", options.max_parallel) : "", group.indices.size());
    for (const std::size_t index : group.indices) {
        StagedRun& run = *staged.at(index);
        const std::string task = fmt::format("{}_{}", submitted.job_id, index);
        run.record.job_ids.push_back(task);
        // Slurm, not this process, runs the task from here on, as for one job.
        run.record.detached_job = task;
        run.record.transition(RunState::submitted, run.dir.path);
        record.points[index].job_id = task;
        record.points[index].state = PointState::running;
    }
    record.save(dir);
    return submitted.job_id;
}

} // namespace

bool sweep_targets_slurm(const SweepRecord& record, const fs::path& home) {
    std::set<std::string> profiles;
    for (const auto& point : record.points) {
        if (point.state == PointState::pending) {
            profiles.insert(profile_of(record, point, home));
        }
    }
    // One Slurm profile for every point: arrays on one controller. Anything else (local, a
    // mix, a point that does not resolve) runs point by point as before.
    return profiles.size() == 1 && !profiles.begin()->empty() && *profiles.begin() != "?";
}

void run_points_as_arrays(SweepRecord& record, const fs::path& dir, const SweepOptions& options, std::ostream& out) {
    StagedPoints staged = stage_points(record, dir, options, out);
    if (staged.empty()) {
        return;
    }
    if (interrupt_signal() != 0) {
        for (auto& [index, run] : staged) {
            run->record.transition(RunState::cancelled, run->dir.path, "interrupted before the job array was submitted");
            finish_point(record, dir, index, *run, out);
        }
        return;
    }
    const ClusterProfile cluster = staged.begin()->second->cluster;
    SystemProcessRunner runner;
    const SlurmArrayClient arrays(runner, cluster);
    const SlurmClient client(runner, cluster);
    std::vector<FollowedArray> followed;
    long long longest = 0;
    for (const ArrayGroup& group : group_points(staged)) {
        const std::string array = submit_group(record, dir, group, staged, arrays, options, out);
        if (!array.empty()) {
            followed.push_back({array, group.indices});
            for (const std::size_t index : group.indices) {
                longest = std::max(longest, parse_time_limit(staged.at(index)->run.plan.time_limit));
            }
        }
    }
    if (followed.empty()) {
        return;
    }

    ArrayFollowEvents events;
    events.controller_unreachable = [&out] { out << "slurm controller unreachable; retrying\n"; };
    events.started = [&staged](const std::string&, const ArrayTask& task) {
        StagedRun& run = *staged.at(task.index);
        if (run.record.state == RunState::submitted) {
            run.record.scheduler["nodes"] = task.nodes;
            run.record.transition(RunState::running, run.dir.path);
        }
    };
    events.state_changed = [&](const std::string& array, const ArrayTask& task) {
        out << fmt::format("job {}_{}: {}{}\n", array, task.index, task.state,
                           task.reason.empty() || task.reason == "None" ? "" : " (" + task.reason + ")");
        record.points[task.index].slurm_state = task.state;
        record.save(dir);
    };
    events.done = [&](const std::string& array, std::size_t index, const SlurmOutcome& outcome) {
        StagedRun& run = *staged.at(index);
        const std::string task = fmt::format("{}_{}", array, index);
        record.points[index].slurm_state = outcome.slurm_state;
        try {
            record_array_task_end(client, task, outcome, run.dir.path, run.record, run.facts.secrets);
        } catch (const std::exception& error) {
            if (!is_final(run.record.state)) {
                run.record.transition(RunState::failed, run.dir.path, fmt::format("recording job {}: {}", task, error.what()));
            }
        }
        finish_point(record, dir, index, run, out);
        // A point's job id names the task that ran it, also after the run reset the point.
        record.points[index].job_id = task;
        record.points[index].slurm_state = outcome.slurm_state;
        record.save(dir);
    };
    events.cancelling = [&out, &followed] {
        std::vector<std::string> ids;
        for (const auto& array : followed) {
            ids.push_back(array.array_id);
        }
        out << fmt::format("\ninterrupted: cancelling job array(s) {}\n", join(ids, ", "));
    };
    SystemSlurmWaiter waiter;
    try {
        follow_slurm_arrays(arrays, client, followed, waiter, static_cast<double>(std::max(600LL, longest)), events);
    } catch (const HarnessError& error) {
        if (error.code() != k_exit_interrupted) {
            throw;
        }
        // The wait after scancel was cut short: each task not yet ended keeps its run open with the
        // cancel pending, as a single run's does, so that `attach` sends it again and finishes it.
        for (const FollowedArray& array : followed) {
            for (const std::size_t index : array.indices) {
                StagedRun& run = *staged.at(index);
                if (!is_final(run.record.state)) {
                    record_cancel_pending(run.record, fmt::format("{}_{}", array.array_id, index), error.what(), run.dir.path);
                }
            }
        }
        throw;
    }
}

} // namespace harness
