#include "workflows/reproduce.hpp"
#include "workflows/stage_card.hpp"

#include "run/container_provenance.hpp"

#include "bundle/bundle_verify.hpp"
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "card/yaml_document.hpp"
#include "plan/plan.hpp"
#include "provenance/git_pin.hpp"
#include "provenance/provenance.hpp"
#include "run/record_provenance.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/process.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/scratch_dir.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/walk.hpp"
#include "workflows/run_workload.hpp"
#include "workflows/slurm_dry_run.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

namespace harness {

namespace {

struct BundledFile {
    std::string content;
    bool executable = false;
};

/// Every regular file under `dir`, by path relative to it. Links and special files are not
/// followed: verify has already refused a bundle holding any.
std::map<std::string, BundledFile> read_tree(const fs::path& dir) {
    std::map<std::string, BundledFile> files;
    const Tree tree = walk_tree(dir);
    for (const TreeEntry& entry : tree.entries) {
        if (entry.type == fs::file_type::regular) {
            files[entry.relative] = BundledFile{read_file(entry.path), entry.executable};
        }
    }
    if (tree.error) {
        throw HarnessError(fmt::format("{}: cannot read: {}", dir.string(), tree.error.message()));
    }
    return files;
}

} // namespace

ScriptComparison compare_scripts(const fs::path& bundled_scripts, const RenderedRun& rendered) {
    const auto bundled = read_tree(bundled_scripts);
    ScriptComparison comparison;
    std::set<std::string> rendered_names;
    for (const auto& file : rendered.files) {
        rendered_names.insert(file.name);
        const auto found = bundled.find(file.name);
        if (found == bundled.end()) {
            comparison.only_rendered.push_back(file.name);
        } else if (found->second.content != file.content || found->second.executable != file.executable) {
            comparison.differing.push_back(file.name);
        }
    }
    for (const auto& [name, file] : bundled) {
        if (rendered_names.count(name) == 0) {
            comparison.only_in_bundle.push_back(name);
        }
    }
    std::sort(comparison.only_rendered.begin(), comparison.only_rendered.end());
    std::sort(comparison.differing.begin(), comparison.differing.end());
    return comparison;
}

std::string scripts_diff(const fs::path& bundled_scripts, const RenderedRun& rendered, const fs::path& scratch) {
    const fs::path out = scratch / "rendered";
    std::error_code ec;
    fs::remove_all(out, ec);
    fs::create_directories(out);
    for (const auto& file : rendered.files) {
        fs::create_directories((out / file.name).parent_path());
        write_file_atomic(out / file.name, file.content, file.executable);
    }
    // diff(1) rather than a diff algorithm of our own: it is in every Debian base system and
    // people already read its output.
    Command command;
    command.argv = {"diff", "-ruN", bundled_scripts.string(), out.string()};
    command.env = current_environment({{"LC_ALL", "C"}});
    const ExitStatus status = run_command(command);
    if (status.signal != 0 || status.code > 1) {
        throw HarnessError(fmt::format("diff failed ({}): {}", status.describe(), status.output));
    }
    std::string text = status.output;
    // Show stable names, not scratch paths.
    const auto replace_all = [&text](const std::string& from, const std::string& to) {
        for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
            text.replace(at, from.size(), to);
        }
    };
    replace_all(bundled_scripts.string(), "bundle/scripts");
    replace_all(out.string(), "rendered");
    // File times in the headers are the scratch copies', meaningless here.
    std::string shown;
    std::vector<std::string> lines = split(text, '\n');
    if (!lines.empty() && lines.back().empty()) {
        lines.pop_back();
    }
    for (const auto& line : lines) {
        const bool header = starts_with(line, "--- ") || starts_with(line, "+++ ");
        shown += (header ? line.substr(0, line.find('\t')) : line) + '\n';
    }
    return shown;
}

namespace {

Json read_json_file(const fs::path& file) {
    try {
        return Json::parse(read_file(file));
    } catch (const std::exception& error) {
        throw input_error(fmt::format("{}: {}", file.string(), error.what()));
    }
}

/// The commit the bundle pinned for `repo`, from provenance.json's sources.
std::string pinned_commit(const Json& provenance, const std::string& repo) {
    if (const Json* sources = provenance.find("sources"); sources != nullptr && sources->is_array()) {
        for (const Json& source : sources->as_array()) {
            if (source.string_or("repo") == repo) {
                return source.string_or("commit");
            }
        }
    }
    return "";
}

RenderedRun bundled_scripts_run(const RenderedRun& rerendered, const fs::path& scripts) {
    RenderedRun run = rerendered;
    run.files.clear();
    for (auto& [name, file] : read_tree(scripts)) {
        run.files.push_back({name, std::move(file.content), file.executable});
    }
    if (run.find(run.launch_script) == nullptr) {
        throw input_error(fmt::format("bundle: scripts/ has no {}, the launch script this harness would start", run.launch_script));
    }
    return run;
}

/// What the steps of a reproduction share.
struct Reproduction {
    const ReproduceOptions& options;
    std::ostream& out;
    ReproduceOutcome& outcome;
    fs::path scratch;
    fs::path bundle_dir; ///< the verified, unpacked bundle
    Json provenance;
    ReproducedBundle reproduces;
};

/// 1. Unpacks (safely, into the scratch directory only) and verifies in one go; false when the
/// bundle is invalid (the outcome says why).
bool verify_step(Reproduction& r) {
    VerifyOptions verify;
    verify.unpack_into = r.scratch / "bundle";
    const BundleReport report = verify_bundle(r.options.bundle, verify);
    r.outcome.name = report.name;
    r.outcome.valid = report.valid();
    r.outcome.problems = report.problems;
    if (!report.valid()) {
        r.outcome.error = fmt::format("{}: invalid bundle ({} problem{}); not reproducing it", r.options.bundle.string(),
                                      report.problems.size(), report.problems.size() == 1 ? "" : "s");
        r.outcome.exit_code = k_exit_failure;
        return false;
    }
    r.bundle_dir = report.directory;
    r.provenance = read_json_file(r.bundle_dir / "provenance.json");
    const Json* run_facts = r.provenance.find("run");
    r.outcome.original_cluster = run_facts != nullptr ? run_facts->string_or("cluster") : "";
    r.reproduces.bundle = fs::is_directory(r.options.bundle) ? report.name + ".tar.zst" : r.options.bundle.filename().string();
    r.reproduces.manifest_sha256 = sha256_file(r.bundle_dir / "manifest.json");
    r.outcome.manifest_sha256 = r.reproduces.manifest_sha256;
    r.out << fmt::format("bundle {}: valid ({} files, {} trace{}), manifest sha256 {}\n", terminal_text(report.name), report.files,
                         report.traces.size(), report.traces.size() == 1 ? "" : "s", r.reproduces.manifest_sha256.substr(0, 16));
    return true;
}

/// 2. The bundled card, planned against the cluster it ran on (or the one asked for).
Plan plan_bundled_card(Reproduction& r, const WorkloadCard& card, const ClusterProfile& cluster) {
    Diagnostics diagnostics = card.diagnostics();
    Plan plan = make_plan(card, cluster, true, diagnostics);
    if (r.options.diagnostics != nullptr) {
        *r.options.diagnostics << diagnostics.format();
    }
    if (diagnostics.has_errors()) {
        throw input_error(fmt::format("{}: the bundled card cannot run on {} ({})", r.options.bundle.string(), r.outcome.target,
                                      r.options.diagnostics != nullptr ? "see above" : diagnostics.format()));
    }
    // 3. The pinned commit, never the ref again: the branch may have moved since.
    if (!plan.source_repo.empty()) {
        const std::string commit = pinned_commit(r.provenance, plan.source_repo);
        if (commit.empty()) {
            throw input_error(
                fmt::format("{}: provenance.json pins no commit for launch.source {}", r.options.bundle.string(), plan.source_repo));
        }
        plan.source_commit = pin_exact(plan.source_repo, plan.source_ref, commit,
                                       r.options.git_cache.empty() ? default_git_cache() : r.options.git_cache)
                                 .commit;
        r.out << fmt::format("pinned {} at {} (as the bundle ran it; ref {} not re-resolved)\n", plan.source_repo,
                             plan.source_commit.substr(0, 12), plan.source_ref);
    }
    return plan;
}

/// 4. Compares the re-render with the bundled scripts byte for byte; false when they differ and
/// the bundled scripts were not asked for (the outcome says why). `run` becomes the bundled
/// scripts when they were.
bool compare_step(Reproduction& r, RenderedRun& run) {
    const fs::path scripts = r.bundle_dir / "scripts";
    if (r.outcome.target != r.outcome.original_cluster) {
        r.out << fmt::format("re-rendered for {} (the bundle ran on {}): scripts not compared\n", r.outcome.target,
                             r.outcome.original_cluster);
        return true;
    }
    r.outcome.scripts_compared = true;
    r.outcome.comparison = compare_scripts(scripts, run);
    if (r.outcome.comparison.identical()) {
        r.out << fmt::format("scripts: {} files identical to the bundle's\n", run.files.size());
        return true;
    }
    r.outcome.diff = scripts_diff(scripts, run, r.scratch);
    // The bundled scripts' text: shown escaped, never interpreted by the terminal.
    r.out << terminal_text(r.outcome.diff, true);
    std::vector<std::string> changed = r.outcome.comparison.differing;
    for (const auto& name : r.outcome.comparison.only_in_bundle) {
        changed.push_back(name + " (only in the bundle)");
    }
    for (const auto& name : r.outcome.comparison.only_rendered) {
        changed.push_back(name + " (only in the re-render)");
    }
    if (!r.options.use_bundled_scripts) {
        r.outcome.error = fmt::format(
            "the templates changed since this bundle was made: {} differ{}.\n"
            "  Run the bundled scripts as they are with --use-bundled-scripts, or use the harness version in its "
            "provenance.json.",
            join(changed, ", "), changed.size() == 1 ? "s" : "");
        r.outcome.exit_code = k_exit_failure;
        return false;
    }
    r.out << "running the bundled scripts as they are (--use-bundled-scripts)\n";
    r.outcome.used_bundled_scripts = true;
    run = bundled_scripts_run(run, scripts);
    return true;
}

/// The image the bundle's run ran, when the harness built it: the new run's image is held to it.
std::optional<ExpectedImage> expected_image(const Reproduction& r, const ReproduceOptions& options) {
    const Json* container = r.provenance.find("container");
    std::error_code ec;
    if (container == nullptr || !container->is_object() || !fs::is_regular_file(r.bundle_dir / k_image_packages_name, ec)) {
        return std::nullopt;
    }
    ExpectedImage expected;
    expected.bundle = r.reproduces.bundle;
    const Json* id = container->find("image_id");
    expected.image_id = id != nullptr && id->is_string() ? id->as_string() : "";
    expected.packages = read_file(r.bundle_dir / k_image_packages_name);
    expected.allow_drift = options.allow_image_drift;
    if (fs::is_regular_file(r.bundle_dir / k_image_archive_name, ec)) {
        expected.archive = r.bundle_dir / k_image_archive_name;
    }
    return expected;
}

} // namespace

ReproduceOutcome reproduce_bundle(const ReproduceOptions& options, std::ostream& out) {
    out << std::unitbuf;
    install_interrupt_handlers();
    std::error_code ec;
    if (!fs::exists(options.bundle, ec)) {
        throw input_error(fmt::format("{}: no such bundle", options.bundle.string()));
    }
    const ScratchDir scratch({}, "reproduce");
    ReproduceOutcome outcome;
    outcome.bundle = options.bundle;
    outcome.dry_run = options.dry_run;
    Reproduction r{options, out, outcome, scratch.path(), {}, {}, {}};
    if (!verify_step(r)) {
        return outcome;
    }
    if (is_ingested_provenance(r.provenance)) {
        // Valid, but the harness neither rendered nor ran it: no scripts of its own to re-render and
        // compare, no pinned sources to fetch again.
        outcome.error = fmt::format("{}: an ingested bundle (provenance.json origin \"{}\": a job the harness did not run); "
                                    "nothing to re-render or compare and no pinned sources, so it cannot be reproduced. "
                                    "Run its card with `ccl-harness run` to make a reproducible data point",
                                    options.bundle.string(), k_origin_ingested);
        outcome.exit_code = k_exit_usage;
        return outcome;
    }
    const fs::path& home = options.home;
    const Json* run_facts = r.provenance.find("run");
    const WorkloadCard card = WorkloadCard::load(
        stage_card({r.bundle_dir / "scripts", run_facts != nullptr ? run_facts->string_or("card") : "", "bundle", true},
                   scratch.path() / "card"));
    outcome.target = options.cluster.empty() ? outcome.original_cluster : options.cluster;
    if (outcome.target.empty()) {
        throw input_error(fmt::format("{}: provenance.json names no cluster; pass --cluster", options.bundle.string()));
    }
    const ClusterProfile cluster = ClusterProfile::find(outcome.target, home);
    const Plan plan = plan_bundled_card(r, card, cluster);
    RenderedRun run = render_run(card, cluster, plan, home);
    if (!compare_step(r, run)) {
        return outcome;
    }
    if (options.dry_run) {
        outcome.preview = fmt::format("dry run: would run {} on {} ({} node(s) x {} rank(s)) into {}/<run-id>/, reproducing {}",
                                      card.name(), outcome.target, plan.nodes, plan.ranks_per_node,
                                      absolute_path(options.results).string(), r.reproduces.bundle);
        if (cluster.scheduler == Scheduler::slurm) {
            outcome.slurm_preview = preview_slurm_run(run, cluster, home, false,
                                                      absolute_path(options.results) / "<run-id>" / "rendered");
        }
        return outcome;
    }
    RunOptions run_options;
    run_options.results = options.results;
    run_options.grace_seconds = options.grace_seconds;
    run_options.secret_names = options.secret_names;
    run_options.git_cache = options.git_cache;
    run_options.home = home;
    run_options.expected_image = expected_image(r, options);
    outcome.run = execute_rendered_run(card, cluster, outcome.target, run, run_options, r.reproduces, out);
    outcome.exit_code = outcome.run->exit_code;
    if (outcome.run->state == RunState::completed) {
        // The numbers, against the bundle's: a reproduction that ran 15 % faster says so.
        try {
            outcome.verdict = reproduction_verdict(load_compared_run(r.bundle_dir), load_compared_run(outcome.run->run_dir));
            if (options.fail_outside_noise && outcome.verdict->judged && !outcome.verdict->within_noise) {
                outcome.exit_code = k_exit_failure;
            }
        } catch (const HarnessError& error) {
            outcome.verdict_error = error.what();
        }
    }
    return outcome;
}

Json reproduce_outcome_to_json(const ReproduceOutcome& outcome) {
    Json json = Json::object();
    json["bundle"] = outcome.bundle.string();
    json["name"] = outcome.name;
    json["valid"] = outcome.valid;
    json["problems"] = Json::array();
    for (const auto& problem : outcome.problems) {
        json["problems"].push_back(Json(Json::Object{{"path", problem.path}, {"message", problem.message}}));
    }
    json["manifest_sha256"] = outcome.manifest_sha256;
    json["original_cluster"] = outcome.original_cluster;
    json["target"] = outcome.target;
    if (outcome.scripts_compared) {
        json["scripts"] = Json(Json::Object{{"identical", outcome.comparison.identical()},
                                            {"differing", json_string_array(outcome.comparison.differing)},
                                            {"only_in_bundle", json_string_array(outcome.comparison.only_in_bundle)},
                                            {"only_rendered", json_string_array(outcome.comparison.only_rendered)},
                                            {"diff", outcome.diff}});
    } else {
        json["scripts"] = Json();
    }
    json["used_bundled_scripts"] = outcome.used_bundled_scripts;
    json["dry_run"] = outcome.dry_run;
    json["preview"] = outcome.preview.empty() ? Json() : Json(outcome.preview);
    json["preview_slurm"] = outcome.slurm_preview ? slurm_dry_run_to_json(*outcome.slurm_preview) : Json();
    json["run"] = outcome.run ? run_outcome_to_json(*outcome.run) : Json();
    json["verdict"] = outcome.verdict ? reproduction_verdict_to_json(*outcome.verdict) : Json();
    json["verdict_error"] = outcome.verdict_error.empty() ? Json() : Json(outcome.verdict_error);
    json["error"] = outcome.error.empty() ? Json() : Json(outcome.error);
    json["exit_code"] = outcome.exit_code;
    return json;
}

} // namespace harness
