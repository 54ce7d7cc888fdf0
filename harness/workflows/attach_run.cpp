#include "workflows/attach_run.hpp"
#include "workflows/stage_card.hpp"

#include "card/card.hpp"
#include "card/yaml_document.hpp"
#include "plan/resolve.hpp"
#include "provenance/secret_scrub.hpp"
#include "render/render.hpp"
#include "run/executor.hpp"
#include "run/record_provenance.hpp"
#include "run/run_directory.hpp"
#include "run/slurm_client.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/safe_name.hpp"
#include "util/scratch_dir.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/terminal.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <ostream>
#include <sys/file.h>

namespace harness {

namespace {

/// The run directory, locked against a second attach for as long as this one follows it. The
/// lock is flock(2) on the directory itself: no file is added to what gets packed, and the
/// kernel drops it when the process dies, however it dies.
class RunDirectoryLock {
public:
    explicit RunDirectoryLock(const fs::path& dir) : m_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (m_fd.get() < 0) {
            throw input_error(fmt::format("{}: {}", dir.string(), std::strerror(errno)));
        }
        if (::flock(m_fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) {
                throw HarnessError(
                    fmt::format("{}: another `ccl-harness attach` is following this run; it is left to that one", dir.string()));
            }
            throw HarnessError(fmt::format("{}: cannot lock: {}", dir.string(), std::strerror(errno)));
        }
    }

private:
    Fd m_fd;
};

/// The source commit plan.json recorded: the run was pinned once, before it was rendered.
std::string pinned_source_commit(const fs::path& run_dir) {
    try {
        const Json plan = Json::parse(read_file(run_dir / run_files::k_plan));
        if (const Json* source = plan.find("source"); source != nullptr && source->is_object()) {
            return source->string_or("commit");
        }
    } catch (const std::exception& error) {
        throw input_error(fmt::format("{}: {}", (run_dir / run_files::k_plan).string(), error.what()));
    }
    return "";
}

/// The names of the files this harness renders differently from what ran.
std::vector<std::string> rendered_differences(const RenderedRun& run, const fs::path& rendered) {
    std::vector<std::string> differing;
    for (const RenderedFile& file : run.files) {
        std::error_code ec;
        const fs::path on_disk = rendered / file.name;
        if (!fs::is_regular_file(on_disk, ec) || read_file(on_disk) != file.content) {
            differing.push_back(file.name);
        }
    }
    return differing;
}

/// A run that ended before: what its record and directory say, nothing changed.
AttachOutcome final_outcome(const RunRecord& record, const fs::path& run_dir) {
    AttachOutcome outcome;
    outcome.already_final = true;
    outcome.job = record.job_ids.empty() ? "" : record.job_ids.back();
    RunOutcome& run = outcome.run;
    run.card = record.card;
    run.target = record.target;
    run.run_id = record.run_id;
    run.run_dir = run_dir;
    run.state = record.state;
    run.reason = record.reason;
    run.failure_class = record.failure_class;
    run.failure_evidence = record.failure_evidence;
    run.exit_code = record.state == RunState::completed ? k_exit_ok : k_exit_failure;
    for (const std::string& trace : record.traces) {
        run.traces.push_back(run_dir / run_files::k_traces / trace);
    }
    // pack's default output: <run-id>.tar.zst beside the run directory.
    const fs::path bundle = run_dir.parent_path() / (run_dir.filename().string() + ".tar.zst");
    std::error_code ec;
    if (record.state == RunState::completed && fs::is_regular_file(bundle, ec)) {
        run.bundle = PackedBundle{bundle, sha256_file(bundle), 0};
    }
    return outcome;
}

/// Refuses to follow a run that a live harness follows already.
void check_no_live_harness(const RunRecord& record, bool force) {
    if (record.harness_pid == 0) {
        return; // detached: nobody follows it
    }
    RunRecord self;
    self.claim();
    if (record.harness_host != self.harness_host) {
        if (!force) {
            throw HarnessError(fmt::format("run.json names harness pid {} on host {} as following this run, which cannot be "
                                           "checked from {}; if it is gone, attach with --force",
                                           record.harness_pid, record.harness_host, self.harness_host));
        }
        return;
    }
    if (!recorded_harness_gone(record.to_json())) {
        throw HarnessError(fmt::format("harness pid {} still follows this run; it is left to that one", record.harness_pid));
    }
}

} // namespace

std::shared_ptr<StagedRun> staged_run_from_directory(const fs::path& run_dir, const RunOptions& options) {
    const fs::path rendered = run_dir / run_files::k_rendered;
    std::error_code ec;
    if (!fs::is_regular_file(run_dir / run_files::k_record, ec) || !fs::is_regular_file(rendered / run_files::k_card, ec)) {
        throw input_error(fmt::format("{}: not a run directory (it needs run.json and rendered/card.yaml)", run_dir.string()));
    }
    RunRecord record = RunRecord::load(run_dir);
    if (record.target.empty()) {
        throw input_error(fmt::format("{}: run.json names no target", run_dir.string()));
    }
    const ScratchDir scratch({}, "attach");
    const fs::path card_file = stage_card({rendered, record.card, "run directory", false}, scratch.path());
    Resolved resolved = resolve({card_file, {}, record.target, false, options.home});
    if (!resolved.ok()) {
        throw input_error(
            fmt::format("{}: its card no longer resolves on {}:\n{}", run_dir.string(), record.target, resolved.diagnostics.format()));
    }
    Plan& plan = *resolved.plan;
    plan.source_commit = pinned_source_commit(run_dir);
    RenderedRun run = render_run(resolved.card, *resolved.profile, plan, options.home);
    auto staged = std::make_shared<StagedRun>(resolved.card, *resolved.profile, resolved.target, run, options);
    ProvenanceFacts& facts = staged->facts;
    facts = collect_provenance_facts(staged->run, options.home);
    facts.secrets = run_secrets(facts.harness_environment, staged->run.plan.env, options.secret_names);
    if (const auto differing = rendered_differences(staged->run, rendered); !differing.empty()) {
        // What ran is rendered/ on disk, kept as it is; the inputs recorded are today's.
        facts.warnings.push_back(fmt::format("attached by a harness that renders {} differently from what ran: the inputs "
                                             "recorded are this harness's",
                                             join(differing, ", ")));
    }
    staged->dir = RunDirectory{record.run_id.empty() ? run_dir.filename().string() : record.run_id, run_dir};
    staged->record = std::move(record);
    staged->record.secrets = &facts.secrets;
    return staged;
}

AttachOutcome attach_run(const AttachOptions& options, std::ostream& out) {
    out << std::unitbuf;
    fs::path run_dir = absolute_path(options.run_dir).lexically_normal();
    if (run_dir.filename().empty()) {
        run_dir = run_dir.parent_path(); // "results/<id>/": its name, not "", is the run's
    }
    std::error_code ec;
    if (!fs::is_directory(run_dir, ec) || !fs::is_regular_file(run_dir / run_files::k_record, ec)) {
        throw input_error(fmt::format("{}: not a run directory (no {})", options.run_dir.string(), run_files::k_record));
    }
    const RunDirectoryLock lock(run_dir);
    // Input, checked before anything acts on it: no folder linked elsewhere, every field of
    // run.json its declared type (a job id that is one), before any Slurm tool runs.
    refuse_linked_entries(run_dir);
    const RunRecord before = RunRecord::load(run_dir);
    if (is_final(before.state)) {
        return final_outcome(before, run_dir);
    }
    if (before.executor != to_string(Scheduler::slurm)) {
        throw HarnessError(fmt::format("run {} ran on {} ({}), whose ranks end with their harness: there is no job to attach to",
                                       before.run_id, before.target, before.executor));
    }
    const std::string job = !before.detached_job.empty() ? before.detached_job
                            : before.job_ids.empty()     ? std::string()
                                                         : before.job_ids.back();
    if (job.empty()) {
        throw HarnessError(
            fmt::format("run {} is {} and was never submitted: run its card again", before.run_id, to_string(before.state)));
    }
    check_no_live_harness(before, options.force);

    RunOptions run_options;
    run_options.home = options.home;
    run_options.secret_names = options.secret_names;
    run_options.pack = options.pack;
    run_options.results = run_dir.parent_path();
    const std::shared_ptr<StagedRun> staged = staged_run_from_directory(run_dir, run_options);
    install_interrupt_handlers();
    RunRecord& record = staged->record;
    record.claim();
    record.save(run_dir);
    out << fmt::format("attached to run {}: job {} on {} ({})\n", staged->dir.id, job, staged->target, to_string(record.state));

    AttachOutcome outcome;
    outcome.job = job;
    ExecutionContext context{staged->run,        staged->cluster,           staged->dir, staged->record, out,
                             progress_wanted(),  run_options.grace_seconds, false,       false,          staged->facts.secrets,
                             staged->job_secrets};
    if (follow_slurm_run(context, job)) {
        outcome.run = detached_run_outcome(*staged);
        return outcome;
    }
    staged->facts.redacted_while_running = context.redacted;
    outcome.run = finish_staged_run(*staged, out);
    return outcome;
}

Json attach_outcome_to_json(const AttachOutcome& outcome) {
    Json json = run_outcome_to_json(outcome.run);
    json["job"] = outcome.job.empty() ? Json() : Json(outcome.job);
    json["already_final"] = outcome.already_final;
    return json;
}

std::string format_attach_outcome(const AttachOutcome& outcome) {
    std::string text = format_run_outcome(outcome.run);
    if (outcome.already_final) {
        text = fmt::format("run {} had already ended; nothing changed\n", outcome.run.run_id) + text;
    }
    return text;
}

} // namespace harness
