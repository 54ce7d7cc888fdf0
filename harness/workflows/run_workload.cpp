#include "workflows/run_workload.hpp"

#include "bundle/bundle_metrics.hpp"
#include "bundle/bundle_pack.hpp"
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "image/base_image.hpp"
#include "image/image_context.hpp"
#include "plan/plan.hpp"
#include "plan/resolve.hpp"
#include "plan/trace_expectation.hpp"
#include "provenance/git_pin.hpp"
#include "provenance/secret_scrub.hpp"
#include "render/render.hpp"
#include "run/executor.hpp"
#include "run/record_provenance.hpp"
#include "run/run_directory.hpp"
#include "trace/trace_collect.hpp"
#include "workflows/image_preflight.hpp"
#include "workflows/run_image.hpp"
#include "workflows/run_reuse.hpp"
#include "workflows/slurm_dry_run.hpp"
#include "workflows/tpu_dry_run.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"
#include "util/terminal.hpp"

#include <fmt/format.h>
#include <optional>
#include <sstream>

namespace harness {

namespace {

/// `slurm`: the Slurm preview, whose sbatch line is the executor's own.
std::string submission(const RenderedRun& run, const ClusterProfile& cluster, const fs::path& dir,
                       const std::optional<SlurmDryRun>& slurm) {
    const Plan& plan = run.plan;
    if (slurm) {
        return fmt::format("{} (in {}{})", slurm->sbatch_command, dir.string(),
                           cluster.slurm_conf.empty() ? "" : ", SLURM_CONF=" + cluster.slurm_conf);
    }
    if (cluster.scheduler == Scheduler::local) {
        return fmt::format("{} local ranks: bash {} with RANK=0..{} (in {})", plan.world_size, run.launch_script, plan.world_size - 1,
                           dir.string());
    }
    return fmt::format("bash {} (gcloud: {} {} in {}, project {})", run.launch_script, plan.tpu_name, plan.tpu_accelerator_type,
                       plan.tpu_zone, plan.tpu_project);
}

/// Moves what the job wrote beside its scripts into the run directory, so rendered/ stays
/// exactly what ran; scrubbed on the way (a Slurm job writes its output files itself).
void gather_logs(const RunDirectory& dir, const SecretScrubber& secrets) {
    std::error_code ec;
    const fs::path produced = dir.rendered() / "logs";
    if (!fs::is_directory(produced, ec)) {
        return;
    }
    for (const auto& entry : fs::directory_iterator(produced, ec)) {
        const fs::path target = dir.logs() / entry.path().filename();
        fs::rename(entry.path(), target, ec);
        if (!ec && fs::is_regular_file(fs::symlink_status(target, ec))) {
            secrets.scrub_file(target);
        }
    }
}

/// metrics.json beside the traces. A trace the metrics cannot read does not fail a run that
/// completed: the bundle then has no metrics.json and `ccl-harness metrics` says what is wrong.
/// Returns the warning, or empty; `headline` gets the numbers a run ends by saying.
std::string record_metrics(const fs::path& run_dir, std::vector<std::pair<std::string, double>>& headline) {
    try {
        const Json metrics = bundle_metrics(run_dir);
        write_file_atomic(run_dir / k_metrics_name, metrics.dump());
        const Json* all = metrics.find("metrics");
        for (const char* name : k_headline_metrics) {
            const Json* metric = all != nullptr ? all->find(name) : nullptr;
            const Json* value = metric != nullptr ? metric->find("value") : nullptr;
            if (value != nullptr && value->is_number()) {
                headline.emplace_back(name, value->as_double());
            }
        }
    } catch (const HarnessError& error) {
        return fmt::format("no metrics.json: {}", error.what());
    }
    return "";
}

std::shared_ptr<StagedRun> stage_rendered_run(const WorkloadCard& card, const ClusterProfile& cluster, const std::string& target,
                                              const RenderedRun& run, const RunOptions& options,
                                              const std::optional<ReproducedBundle>& reproduces, std::ostream& out);

/// The command that takes a detached run to its end, as a user pastes it.
std::string attach_command(const fs::path& run_dir) { return "ccl-harness attach " + shell_quote(run_dir.string()); }

int exit_code_for(RunState state) {
    switch (state) {
    case RunState::completed: return k_exit_ok;
    case RunState::cancelled: return k_exit_interrupted;
    default: return k_exit_failure;
    }
}

/// The job's preflight, run now in the card's image when this machine has it built.
std::string dry_run_preflight(const RenderedRun& run, const RunOptions& options) {
    const Plan& plan = run.plan;
    if (!builds_run_image(plan)) {
        return "";
    }
    SystemProcessRunner runner;
    ImageContext context(runner);
    context.use_runtime(plan.container_runtime);
    bool built = false;
    try {
        built = image_exists(plan.container_build, context);
    } catch (const HarnessError& error) {
        return fmt::format("not checked here: {} cannot say whether {} is built ({})", plan.container_runtime, plan.container_build,
                           error.what());
    }
    if (!built) {
        return fmt::format("not checked here: the image {} is not built on this machine (`ccl-harness build` builds it, and "
                           "`run` checks before it submits); the job checks it anyway",
                           plan.container_build);
    }
    std::optional<ScratchDir> scratch;
    fs::path rendered = options.dry_run_out;
    if (rendered.empty()) {
        scratch.emplace(fs::path(), "preflight");
        rendered = scratch->path() / "rendered";
        write_rendered(run, rendered);
    }
    const ImagePreflight preflight = preflight_in_image(plan, rendered, runner);
    const char* verdict = preflight.result == ImagePreflight::Result::passed    ? "passed"
                          : preflight.result == ImagePreflight::Result::refused ? "REFUSED (the job would stop here)"
                                                                                : "not checked";
    return fmt::format("{} in {}:\n{}", verdict, plan.container_build, preflight.text);
}

/// What a dry run shows instead of running: where things would go, what would be submitted and,
/// for a TPU, every gcloud command and what bills; for Slurm, the bill, image work and sbatch line.
DryRunPreview dry_run_preview(const RenderedRun& run, const ClusterProfile& cluster, const RunOptions& options) {
    const Plan& plan = run.plan;
    DryRunPreview preview;
    preview.results = absolute_path(options.results);
    preview.rendered = options.dry_run_out.empty() ? preview.results / "<run-id>" / "rendered" : absolute_path(options.dry_run_out);
    if (!options.dry_run_out.empty()) {
        write_rendered(run, options.dry_run_out);
    }
    preview.nodes = plan.nodes;
    preview.ranks_per_node = plan.ranks_per_node;
    preview.steps = plan.steps;
    preview.trace_kinds = plan.trace_kinds;
    preview.preflight = dry_run_preflight(run, options);
    if (is_tpu(cluster.scheduler)) {
        TpuDryRun tpu = preview_tpu_run(run, options.home, options.teardown, preview.rendered);
        preview.commands = std::move(tpu.commands);
        preview.billing = std::move(tpu.billing);
        preview.commands_problem = std::move(tpu.problem);
    }
    if (cluster.scheduler == Scheduler::slurm) {
        preview.slurm = preview_slurm_run(run, cluster, options.home, options.requeue, preview.rendered);
    }
    preview.submission = submission(run, cluster, preview.rendered, preview.slurm);
    return preview;
}

} // namespace

RunOutcome run_workload(const RunOptions& options, std::ostream& out) {
    // Progress must reach a log file or pipe as it happens, not when the buffer fills.
    out << std::unitbuf;
    check_grace_seconds(options.grace_seconds);
    run_secrets(process_environment(), {}, options.secret_names); // a bad --secret is refused, dry run or not
    const fs::path& home = options.home;
    if (const std::string problem = workload_name_problem(options.name); !options.name.empty() && !problem.empty()) {
        throw input_error(fmt::format("--name {}: {}", enquote(options.name), problem));
    }
    Resolved resolved = resolve(
        {options.card, options.overrides, options.cluster, true, home, options.name.empty() ? row_name(options.card) : options.name});
    RunOutcome invalid;
    invalid.card = resolved.card.name();
    invalid.exit_code = k_exit_usage;
    invalid.invalid_input = true;
    invalid.target = resolved.target;
    invalid.diagnostics = resolved.diagnostics.format();
    if (options.diagnostics != nullptr) {
        *options.diagnostics << invalid.diagnostics;
    }
    if (!resolved.ok()) {
        return invalid;
    }
    const WorkloadCard& card = resolved.card;
    const ClusterProfile& cluster = *resolved.profile;
    const std::string& target = resolved.target;
    if (options.detach && cluster.scheduler != Scheduler::slurm) {
        // Only a batch scheduler keeps the job going without the harness: local ranks die with
        // it, and a TPU run's lifecycle (the slice's teardown included) is the harness's script.
        throw input_error(fmt::format("--detach needs a Slurm target: {} schedules with {}, whose job ends with the harness", target,
                                      to_string(cluster.scheduler)));
    }
    Plan& plan = *resolved.plan;
    std::vector<std::string> warnings;
    if (!plan.source_repo.empty()) {
        // Before the run directory exists: a ref that does not resolve leaves nothing behind.
        try {
            plan.source_commit = pin_source(plan.source_repo, plan.source_ref,
                                            options.git_cache.empty() ? default_git_cache() : options.git_cache)
                                     .commit;
            out << fmt::format("pinned {} {} -> {}\n", plan.source_repo, plan.source_ref, plan.source_commit.substr(0, 12));
        } catch (const HarnessError& error) {
            // A preview must work offline; a real run never goes ahead unpinned.
            if (!options.dry_run) {
                throw;
            }
            warnings.push_back(fmt::format("{}; the dry run shows the ref as written, not a pinned commit", error.what()));
            out << fmt::format("warning: {}\n", warnings.back());
        }
    }
    parse_time_limit(plan.time_limit); // a limit the executor could not keep is refused, dry run or not
    const RenderedRun run = render_run(card, cluster, plan, home);
    // A sweep's Slurm points are staged first (stage_only): a point reused here is settled and
    // never joins the job array.
    if (options.reuse) {
        if (std::optional<RunOutcome> reused = reuse_earlier_run(run, card.name(), target, out)) {
            reused->diagnostics = invalid.diagnostics;
            reused->warnings = warnings;
            return *reused;
        }
    }
    if (options.dry_run) {
        RunOutcome outcome;
        outcome.diagnostics = invalid.diagnostics;
        outcome.card = card.name();
        outcome.target = target;
        outcome.warnings = warnings;
        outcome.dry_run = dry_run_preview(run, cluster, options);
        return outcome;
    }

    if (options.stage_only) {
        RunOutcome outcome;
        outcome.diagnostics = invalid.diagnostics;
        outcome.card = card.name();
        outcome.target = target;
        outcome.warnings = warnings;
        outcome.staged = stage_rendered_run(card, cluster, target, run, options, std::nullopt, out);
        outcome.run_id = outcome.staged->dir.id;
        outcome.run_dir = absolute_path(outcome.staged->dir.path);
        outcome.state = outcome.staged->record.state;
        return outcome;
    }
    RunOutcome outcome = execute_rendered_run(card, cluster, target, run, options, std::nullopt, out);
    outcome.diagnostics = invalid.diagnostics;
    return outcome;
}

StagedRun::StagedRun(WorkloadCard card_, ClusterProfile cluster_, std::string target_, RenderedRun run_, RunOptions options_)
    : card(std::move(card_)), cluster(std::move(cluster_)), target(std::move(target_)), run(std::move(run_)),
      options(std::move(options_)) {}

namespace {

/// The first half of execute_rendered_run: everything before the executor.
std::shared_ptr<StagedRun> stage_rendered_run(const WorkloadCard& card, const ClusterProfile& cluster, const std::string& target,
                                              const RenderedRun& run, const RunOptions& options,
                                              const std::optional<ReproducedBundle>& reproduces, std::ostream& out) {
    out << std::unitbuf;
    // Input that cannot run is refused before a run directory exists.
    check_grace_seconds(options.grace_seconds);
    parse_time_limit(run.plan.time_limit);
    install_interrupt_handlers();
    auto staged = std::make_shared<StagedRun>(card, cluster, target, run, options);
    // Before the job runs: an edit to a template or the checkout meanwhile must not change it.
    ProvenanceFacts& facts = staged->facts;
    facts = collect_provenance_facts(staged->run, options.home);
    facts.reproduces = reproduces;
    facts.secrets = run_secrets(facts.harness_environment, run.plan.env, options.secret_names);
    // A bundle's [REDACTED] entry takes its value from the environment, whose secret-named
    // values run_secrets has learnt already.
    staged->job_secrets = secret_job_environment(run.plan.env, facts.harness_environment);
    staged->dir = create_run_directory(options.results, staged->run, options.run_label);
    RunRecord& record = staged->record;
    record.run_id = staged->dir.id;
    record.card = card.name();
    record.overrides = options.overrides;
    record.target = target;
    record.executor = to_string(cluster.scheduler);
    record.secrets = &facts.secrets;
    record.claim();
    record.transition(RunState::rendered, staged->dir.path);
    out << fmt::format("run {}: {} on {} -> {}\n", staged->dir.id, card.name(), target, staged->dir.path.string());
    if (builds_run_image(staged->run.plan)) {
        SystemProcessRunner runner;
        try {
            const std::string refused = prepare_run_image(staged->run.plan, staged->dir, options.home, runner, options.expected_image,
                                                          out);
            if (!refused.empty()) {
                record.transition(RunState::failed, staged->dir.path,
                                  fmt::format("image {}: {}", staged->run.plan.container_build, refused), FailureStage::image);
            } else {
                // The job's own preflight, here and now: a flag the image's framework lacks is
                // refused before the job queues rather than after.
                const ImagePreflight preflight = preflight_in_image(staged->run.plan, staged->dir.rendered(), runner);
                for (const std::string& line : split(preflight.text, '\n')) {
                    out << "  " << (starts_with(line, "preflight: ") ? line : "preflight: " + line) << "\n";
                }
                if (preflight.result == ImagePreflight::Result::refused) {
                    record.transition(RunState::failed, staged->dir.path,
                                      fmt::format("the image's framework refuses the rendered launch (preflight in {}): {}",
                                                  staged->run.plan.container_build, preflight.text),
                                      FailureStage::preflight);
                }
            }
        } catch (const HarnessError& error) {
            // Nothing ran: the run ends here, recorded, with the runtime's words.
            record.transition(error.code() == k_exit_interrupted ? RunState::cancelled : RunState::failed, staged->dir.path,
                              error.what(), FailureStage::image);
        }
    }
    return staged;
}

} // namespace

RunOutcome execute_rendered_run(const WorkloadCard& card, const ClusterProfile& cluster, const std::string& target,
                                const RenderedRun& run, const RunOptions& options, const std::optional<ReproducedBundle>& reproduces,
                                std::ostream& out) {
    const std::shared_ptr<StagedRun> staged = stage_rendered_run(card, cluster, target, run, options, reproduces, out);
    ExecutionContext context{staged->run,        staged->cluster,       staged->dir,      staged->record,  out,
                             progress_wanted(),  options.grace_seconds, options.teardown, options.requeue, staged->facts.secrets,
                             staged->job_secrets};
    if (!is_final(staged->record.state)) {
        if (options.detach) {
            request_detach(); // the follow loop, once the job is submitted, returns at once
        }
        executor_for(cluster.scheduler).execute(context);
    }
    staged->facts.redacted_while_running = context.redacted;
    if (detach_requested() && !is_final(staged->record.state) && !staged->record.detached_job.empty()) {
        return detached_run_outcome(*staged);
    }
    return finish_staged_run(*staged, out);
}

RunOutcome finish_staged_run(StagedRun& staged, std::ostream& out) {
    const Plan& plan = staged.run.plan;
    const RunDirectory& dir = staged.dir;
    RunRecord& record = staged.record;
    ProvenanceFacts& facts = staged.facts;
    gather_logs(dir, facts.secrets);
    SystemProcessRunner runner;
    for (std::string& problem : gather_ran_containers(plan, dir, runner)) {
        facts.warnings.push_back(std::move(problem));
    }

    const CollectedTraces traces = collect_traces(trace_expectation(plan), dir.rendered() / "traces", dir.traces());
    record.traces = traces.files;
    std::error_code ec;
    fs::remove_all(dir.rendered() / "traces", ec);
    if (!is_final(record.state)) {
        if (traces.missing_message.empty()) {
            record.transition(RunState::completed, dir.path, record.reason);
        } else {
            record.transition(RunState::failed, dir.path, "traces missing: " + traces.missing_message, FailureStage::traces);
        }
    } else {
        record.save(dir.path);
    }

    RunOutcome outcome;
    outcome.card = staged.card.name();
    outcome.target = staged.target;
    outcome.run_id = dir.id;
    outcome.run_dir = absolute_path(dir.path);
    outcome.state = record.state;
    outcome.reason = record.reason;
    outcome.failure_class = record.failure_class;
    outcome.failure_evidence = record.failure_evidence;
    outcome.exit_code = exit_code_for(record.state);
    for (const auto& name : traces.files) {
        outcome.traces.push_back(outcome.run_dir / "traces" / name);
    }
    if (record.state == RunState::completed) {
        if (std::string warning = record_metrics(dir.path, outcome.headline); !warning.empty()) {
            out << fmt::format("warning: {}\n", warning);
            outcome.warnings.push_back(std::move(warning));
        }
    }
    // Its notes are warnings (no probe report) or notices (secrets scrubbed): kept as data too,
    // for a caller that shows no progress.
    std::ostringstream provenance_notes;
    record_provenance(dir.path, staged.run, record, facts, provenance_notes);
    out << provenance_notes.str();
    for (const auto& line : split(provenance_notes.str(), '\n')) {
        if (!trim(line).empty()) {
            outcome.warnings.push_back(trim(line));
        }
    }
    if (record.state != RunState::completed || !staged.options.pack) {
        return outcome;
    }
    try {
        const PackResult bundle = pack_run(dir.path);
        outcome.bundle = PackedBundle{absolute_path(bundle.bundle), bundle.sha256, bundle.files};
    } catch (const HarnessError& error) {
        // The run itself is intact; the caller says how to retry the packing alone.
        outcome.pack_error = error.what();
        outcome.exit_code = error.code() == k_exit_interrupted ? k_exit_interrupted : k_exit_failure;
    }
    return outcome;
}

RunOutcome detached_run_outcome(const StagedRun& staged) {
    RunOutcome outcome;
    outcome.card = staged.card.name();
    outcome.target = staged.target;
    outcome.run_id = staged.dir.id;
    outcome.run_dir = absolute_path(staged.dir.path);
    outcome.state = staged.record.state;
    outcome.detached_job = staged.record.detached_job;
    outcome.exit_code = k_exit_ok;
    return outcome;
}

Json run_outcome_to_json(const RunOutcome& outcome) {
    Json json = Json::object();
    json["card"] = outcome.card;
    json["target"] = outcome.target;
    json["run_id"] = outcome.run_id.empty() ? Json() : Json(outcome.run_id);
    json["run_dir"] = outcome.run_dir.empty() ? Json() : Json(outcome.run_dir.string());
    json["state"] = outcome.state ? Json(to_string(*outcome.state)) : Json();
    json["reason"] = outcome.reason;
    json["failure_class"] = outcome.failure_class.empty() ? Json() : Json(outcome.failure_class);
    json["failure_evidence"] = outcome.failure_class.empty() ? Json() : Json(outcome.failure_evidence);
    json["exit_code"] = outcome.exit_code;
    json["reused"] = outcome.reused;
    json["traces"] = Json::array();
    for (const auto& trace : outcome.traces) {
        json["traces"].push_back(trace.string());
    }
    json["bundle"] = outcome.bundle ? Json(Json::Object{{"path", outcome.bundle->path.string()},
                                                        {"sha256", outcome.bundle->sha256},
                                                        {"files", static_cast<long long>(outcome.bundle->files)}})
                                    : Json();
    json["pack_error"] = outcome.pack_error.empty() ? Json() : Json(outcome.pack_error);
    json["warnings"] = json_string_array(outcome.warnings);
    json["dry_run"] = outcome.dry_run.has_value();
    if (outcome.dry_run) {
        const DryRunPreview& preview = *outcome.dry_run;
        const Json slurm = preview.slurm ? slurm_dry_run_to_json(*preview.slurm) : Json();
        const auto slurm_key = [&slurm](const char* key) { return slurm.is_object() ? *slurm.find(key) : Json(); };
        json["preview"] = Json(
            Json::Object{{"submission", preview.submission},
                         {"rendered", preview.rendered.string()},
                         {"results", preview.results.string()},
                         {"nodes", preview.nodes},
                         {"ranks_per_node", preview.ranks_per_node},
                         {"steps", preview.steps},
                         {"trace_kinds", json_string_array(preview.trace_kinds)},
                         {"commands", json_string_array(preview.commands)},
                         {"billing", preview.billing.empty() ? Json() : Json(preview.billing)},
                         {"commands_problem", preview.commands_problem.empty() ? Json() : Json(preview.commands_problem)},
                         {"preflight", preview.preflight.empty() ? Json() : Json(preview.preflight)},
                         {"bill", slurm_key("bill")},
                         {"image", slurm_key("image")},
                         {"sbatch", slurm_key("sbatch")}});
    } else {
        json["preview"] = Json();
    }
    // Only a detached run has these: every other outcome's JSON stays as it was.
    if (!outcome.detached_job.empty()) {
        json["detached_job"] = outcome.detached_job;
        json["attach"] = attach_command(outcome.run_dir);
    }
    return json;
}

std::string format_run_outcome(const RunOutcome& outcome) {
    if (outcome.dry_run) {
        const DryRunPreview& preview = *outcome.dry_run;
        std::string text = fmt::format("dry run: {} on {} ({} node(s) x {} rank(s), {} steps, traces: {})\n"
                                       "would submit: {}\n"
                                       "would record the run in {}/<run-id>/\n",
                                       outcome.card, outcome.target, preview.nodes, preview.ranks_per_node, preview.steps,
                                       join(preview.trace_kinds, ", "), preview.submission, preview.results.string());
        if (!preview.commands.empty()) {
            text += "would run, in this order:\n";
            for (const std::string& command : preview.commands) {
                text += "  " + command + "\n";
            }
        }
        if (!preview.commands_problem.empty()) {
            text += "warning: " + preview.commands_problem + "\n";
        }
        if (!preview.billing.empty()) {
            text += preview.billing + "\n";
        }
        if (!preview.preflight.empty()) {
            text += "preflight: " + preview.preflight + "\n";
        }
        if (preview.slurm) {
            text += format_slurm_dry_run(*preview.slurm);
        }
        return text;
    }
    if (!outcome.state) {
        return "";
    }
    std::vector<std::string> traces;
    for (const auto& trace : outcome.traces) {
        traces.push_back(trace.filename().string());
    }
    if (!outcome.detached_job.empty()) {
        return fmt::format(
            "run {} {}: detached from Slurm job {}, which goes on\n  run directory: {}\n  follow it to the end with: {}\n",
            outcome.run_id, to_string(*outcome.state), outcome.detached_job, outcome.run_dir.string(),
            attach_command(outcome.run_dir));
    }
    // The reason quotes the job's log (colour codes, tqdm's carriage returns): escaped, its lines kept.
    std::string text = fmt::format("run {} {}{}{}\n  run directory: {}\n  traces: {}\n", terminal_text(outcome.run_id),
                                   outcome.reused ? "completed earlier, reused (run --reuse: nothing ran)" : to_string(*outcome.state),
                                   outcome.failure_class.empty() ? "" : " (" + terminal_text(outcome.failure_class) + ")",
                                   outcome.reason.empty() ? "" : ": " + terminal_text(outcome.reason, true),
                                   terminal_text(outcome.run_dir.string()),
                                   traces.empty() ? "(none)" : terminal_text(join(traces, ", ")));
    if (!outcome.failure_evidence.empty()) {
        text += fmt::format("  failure class {}: {} (docs/failures.md)\n", terminal_text(outcome.failure_class),
                            terminal_text(outcome.failure_evidence));
    }
    if (!outcome.headline.empty()) {
        std::vector<std::string> numbers;
        for (const auto& [name, value] : outcome.headline) {
            numbers.push_back(name == "avg_step_time" ? fmt::format("{} {:.6f} s", name, value)
                                                      : fmt::format("{} {:.1f}%", name, value));
        }
        text += fmt::format("  metrics: {} (all: ccl-harness metrics {})\n", join(numbers, ", "),
                            outcome.bundle ? outcome.bundle->path.string() : outcome.run_dir.string());
    }
    if (outcome.bundle && outcome.bundle->files == 0) {
        // An existing bundle found, not packed now (attach of a run that had ended): uncounted.
        text += fmt::format("  bundle: {} (sha256 {})\n", outcome.bundle->path.string(), outcome.bundle->sha256);
    } else if (outcome.bundle) {
        text += fmt::format("  bundle: {} ({} files, sha256 {})\n", outcome.bundle->path.string(), outcome.bundle->files,
                            outcome.bundle->sha256);
    }
    return text;
}

} // namespace harness
