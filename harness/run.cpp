#include "run.hpp"

#include "bundle_metrics.hpp"
#include "bundle_pack.hpp"
#include "card.hpp"
#include "cluster.hpp"
#include "executor.hpp"
#include "git_pin.hpp"
#include "home.hpp"
#include "plan.hpp"
#include "provenance.hpp"
#include "render.hpp"
#include "run_directory.hpp"
#include "trace_collect.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/strings.hpp"
#include "util/terminal.hpp"

#include <fmt/format.h>
#include <iostream>

namespace harness {

namespace {

std::string submission(const RenderedRun& run, const ClusterProfile& cluster, const fs::path& dir) {
    const Plan& plan = run.plan;
    if (cluster.scheduler == "slurm") {
        return fmt::format("sbatch --parsable {} (in {}{})", run.launch_script, dir.string(),
                           cluster.slurm_conf.empty() ? "" : ", SLURM_CONF=" + cluster.slurm_conf);
    }
    if (cluster.scheduler == "local") {
        return fmt::format("{} local ranks: bash {} with RANK=0..{} (in {})", plan.world_size, run.launch_script,
                           plan.world_size - 1, dir.string());
    }
    return fmt::format("bash {} (gcloud: {} {} in {}, project {})", run.launch_script, plan.tpu_name, plan.tpu_accelerator_type,
                       plan.tpu_zone, plan.tpu_project);
}

/// Moves what the job wrote beside its scripts into the run directory, so rendered/ stays
/// exactly what ran.
void gather_logs(const RunDirectory& dir) {
    std::error_code ec;
    const fs::path produced = dir.rendered() / "logs";
    if (!fs::is_directory(produced, ec)) {
        return;
    }
    for (const auto& entry : fs::directory_iterator(produced, ec)) {
        fs::rename(entry.path(), dir.logs() / entry.path().filename(), ec);
    }
}

/// metrics.json beside the traces. A trace the metrics cannot read does not fail a run that
/// completed: the bundle then has no metrics.json and `ccl-harness metrics` says what is wrong.
void record_metrics(const fs::path& run_dir, std::ostream& out) {
    try {
        write_file_atomic(run_dir / k_metrics_name, bundle_metrics(run_dir).dump());
    } catch (const HarnessError& error) {
        out << fmt::format("warning: no metrics.json: {}\n", error.what());
    }
}

int exit_code_for(RunState state) {
    switch (state) {
    case RunState::completed: return k_exit_ok;
    case RunState::cancelled: return k_exit_interrupted;
    default: return k_exit_failure;
    }
}

} // namespace

int run_workload(const RunOptions& options, std::ostream& out) {
    // Progress must reach a log file or pipe as it happens, not when the buffer fills.
    out << std::unitbuf;
    const fs::path home = harness_home();
    const WorkloadCard card = WorkloadCard::load(options.card, options.overrides);
    Diagnostics diagnostics = card.diagnostics();
    if (diagnostics.has_errors()) {
        std::cerr << diagnostics.format();
        return k_exit_usage;
    }
    const std::string target = options.cluster.empty() ? infer_target(card) : options.cluster;
    const ClusterProfile cluster = ClusterProfile::load(home / "clusters", target);
    Plan plan = make_plan(card, cluster, true, diagnostics);
    std::cerr << diagnostics.format();
    if (diagnostics.has_errors()) {
        return k_exit_usage;
    }
    if (!plan.source_repo.empty()) {
        // Before the run directory exists: a ref that does not resolve leaves nothing behind.
        try {
            plan.source_commit =
                pin_source(plan.source_repo, plan.source_ref, options.git_cache.empty() ? default_git_cache() : options.git_cache)
                    .commit;
            out << fmt::format("pinned {} {} -> {}\n", plan.source_repo, plan.source_ref, plan.source_commit.substr(0, 12));
        } catch (const HarnessError& error) {
            // A preview must work offline; a real run never goes ahead unpinned.
            if (!options.dry_run) {
                throw;
            }
            std::cerr << fmt::format("ccl-harness: warning: {}\n  the dry run shows the ref as written, not a pinned commit\n",
                                     error.what());
        }
    }
    const RenderedRun run = render_run(card, cluster, plan, home);
    if (options.dry_run) {
        const fs::path where = options.dry_run_out.empty() ? options.results / "<run-id>" / "rendered" : options.dry_run_out;
        if (!options.dry_run_out.empty()) {
            write_rendered(run, options.dry_run_out);
        }
        out << fmt::format("dry run: {} on {} ({} node(s) x {} rank(s), {} steps, traces: {})\n", card.name(), target,
                           plan.nodes, plan.ranks_per_node, plan.steps, join(plan.trace_kinds, ", "));
        out << fmt::format("would submit: {}\n", submission(run, cluster, where));
        out << fmt::format("would record the run in {}/<run-id>/\n", options.results.string());
        return k_exit_ok;
    }

    return execute_rendered_run(card, cluster, target, run, options, std::nullopt, out);
}

int execute_rendered_run(const WorkloadCard& card, const ClusterProfile& cluster, const std::string& target, const RenderedRun& run,
                         const RunOptions& options, const std::optional<ReproducedBundle>& reproduces, std::ostream& out) {
    out << std::unitbuf;
    const Plan& plan = run.plan;
    install_interrupt_handlers();
    // Before the job runs: an edit to a template or the checkout meanwhile must not change it.
    ProvenanceFacts facts = collect_provenance_facts(run, harness_home());
    facts.reproduces = reproduces;
    const RunDirectory dir = create_run_directory(options.results, run);
    RunRecord record;
    record.run_id = dir.id;
    record.card = card.name();
    record.target = target;
    record.executor = cluster.scheduler;
    record.transition(RunState::rendered, dir.path);
    out << fmt::format("run {}: {} on {} -> {}\n", dir.id, card.name(), target, dir.path.string());

    ExecutionContext context{run, cluster, dir, record, out, progress_wanted(), options.grace_seconds,
                             options.teardown};
    if (cluster.scheduler == "local") {
        execute_local(context);
    } else if (cluster.scheduler == "slurm") {
        execute_slurm(context);
    } else {
        execute_tpu(context);
    }
    gather_logs(dir);

    const CollectedTraces traces = collect_traces(plan, dir.rendered() / "traces", dir.traces());
    record.traces = traces.files;
    std::error_code ec;
    fs::remove_all(dir.rendered() / "traces", ec);
    if (!is_final(record.state)) {
        if (traces.missing_message.empty()) {
            record.transition(RunState::completed, dir.path, record.reason);
        } else {
            record.transition(RunState::failed, dir.path, "traces missing: " + traces.missing_message);
        }
    } else {
        record.save(dir.path);
    }
    if (record.state == RunState::completed) {
        record_metrics(dir.path, out);
    }
    record_provenance(dir.path, run, record, facts, out);
    out << fmt::format("run {} {}{}\n", dir.id, to_string(record.state), record.reason.empty() ? "" : ": " + record.reason);
    out << fmt::format("  run directory: {}\n  traces: {}\n", dir.path.string(),
                       traces.files.empty() ? "(none)" : join(traces.files, ", "));
    if (record.state != RunState::completed || !options.pack) {
        return exit_code_for(record.state);
    }
    try {
        const PackResult bundle = pack_run(dir.path);
        out << fmt::format("  bundle: {} ({} files, sha256 {})\n", bundle.bundle.string(), bundle.files, bundle.sha256);
    } catch (const HarnessError& error) {
        // The run itself is intact; say how to retry the packing alone.
        std::cerr << fmt::format("ccl-harness: error: packing failed: {}\n  the run directory is intact; retry with: "
                                 "ccl-harness pack {}\n",
                                 error.what(), dir.path.string());
        return error.code() == k_exit_interrupted ? k_exit_interrupted : k_exit_failure;
    }
    return k_exit_ok;
}

} // namespace harness
