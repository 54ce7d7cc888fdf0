#include "card/card.hpp"
#include "card/cluster.hpp"
#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "plan/plan.hpp"
#include "plan/resolve.hpp"
#include "provenance/git_pin.hpp"
#include "render/render.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/home.hpp"
#include "util/json.hpp"
#include "util/sha256.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct RenderOptions {
    std::string card;
    std::string cluster;
    std::string out;
    std::vector<std::string> overrides;
    OverridePaths set_paths;
    bool strict = false;
    bool dry_run = false;
    bool quiet = false;
    bool json = false;
    bool pin = false;
    std::string git_cache;
};

/// `render --json`: what was written (or would be, with --dry-run), file by file.
Json render_to_json(const WorkloadCard& card, const std::string& target, const RenderedRun& run, const fs::path& out, bool dry_run) {
    Json json = Json::object();
    json["card"] = card.name();
    json["target"] = target;
    json["framework"] = run.plan.framework;
    json["out"] = absolute_path(out).string();
    json["launch_script"] = run.launch_script;
    json["dry_run"] = dry_run;
    json["files"] = Json::array();
    for (const auto& file : run.files) {
        json["files"].push_back(Json(Json::Object{{"name", file.name},
                                                  {"sha256", sha256_hex(file.content)},
                                                  {"executable", file.executable},
                                                  {"bytes", static_cast<long long>(file.content.size())}}));
    }
    return json;
}

int run_render(const RenderOptions& options) {
    const bool quiet = options.quiet || g_verbosity == Verbosity::quiet;
    // With --json, stdout holds the JSON document only.
    std::ostream& human = options.json ? std::cerr : std::cout;
    options.set_paths.check(options.overrides);
    const fs::path home = harness_home();
    Resolved resolved = resolve({options.card, options.overrides, options.cluster, options.strict, home});
    if (!resolved.plan) {
        std::cerr << resolved.diagnostics.format(!quiet);
        return k_exit_usage;
    }
    const WorkloadCard& card = resolved.card;
    const ClusterProfile& cluster = *resolved.profile;
    const std::string& target = resolved.target;
    if (!cluster.shadows.empty() && g_verbosity == Verbosity::verbose) {
        std::cerr << fmt::format("ccl-harness: note: cluster {}: the user profile {} wins over the shipped {}\n", target,
                                 cluster.source.string(), cluster.shadows.string());
    }
    std::cerr << resolved.diagnostics.format(!quiet);
    if (!resolved.ok()) {
        return k_exit_usage;
    }
    Plan& plan = *resolved.plan;
    if (options.pin && !plan.source_repo.empty()) {
        plan.source_commit = pin_source(plan.source_repo, plan.source_ref,
                                        options.git_cache.empty() ? default_git_cache() : fs::path(options.git_cache))
                                 .commit;
    }
    const RenderedRun run = render_run(card, cluster, plan, home);
    const fs::path out = options.out.empty() ? fs::path("results") / "render" / (card.name() + "." + target) : fs::path(options.out);
    if (options.dry_run) {
        if (!options.json || !quiet) {
            human << fmt::format("would write {} files to {} (launch script: {}):\n", run.files.size(), out.string(),
                                 run.launch_script);
            for (const auto& file : run.files) {
                human << fmt::format("  {:<24} {:>7} bytes\n", file.name, file.content.size());
            }
        }
    } else {
        write_rendered(run, out);
        if (!options.json || !quiet) {
            human << fmt::format("rendered {} for {}: {} files in {} (launch script: {})\n", card.name(), target, run.files.size(),
                                 out.string(), run.launch_script);
        }
    }
    if (options.json) {
        std::cout << render_to_json(card, target, run, out, options.dry_run).dump() << std::flush;
    }
    return k_exit_ok;
}

} // namespace

void add_render(CLI::App& sub, Action& action) {
    auto options = std::make_shared<RenderOptions>();
    sub.add_option("card", options->card, "workload card (CCL-Bench format, with an optional launch: section)")->required();
    add_cluster_option(sub, options->cluster, "launch.cluster, else nvidia_a100* -> perlmutter, tpu_v6e -> tpu-v6e, cpu -> local");
    sub.add_option("--out", options->out,
                   "output directory (default: results/render/<card>.<cluster>); an earlier render there is replaced");
    add_override_options(sub, options->set_paths, "--set", options->overrides,
                         "override a card field: PATH=VALUE, e.g. launch.steps=20 (repeatable)");
    sub.add_flag("--strict", options->strict, "refuse a card that could not run as written (see validate --strict)");
    sub.add_flag("--dry-run", options->dry_run, "print what would be written, write nothing");
    sub.add_flag("-q,--quiet", options->quiet, "print errors only, not warnings");
    sub.add_flag("--json", options->json, "print one JSON object on stdout (keys below); the summary line goes to stderr");
    sub.add_flag("--pin", options->pin, "resolve launch.source.ref to its commit SHA (fetches the repo) and render that SHA");
    sub.add_option("--git-cache", options->git_cache,
                   "with --pin: where repo clones are kept (default: $XDG_CACHE_HOME/ccl-harness/git)");
    sub.footer("Writes the launch script (launch.sbatch / launch.sh), the framework's config, the container spec\n"
               "(Containerfile), env.sh, the effective card.yaml and plan.json. Rendering is deterministic:\n"
               "the same card gives byte-identical files. launch.source.ref is rendered as written unless\n"
               "--pin resolves it to a commit SHA, as run always does.\n"
               "--json keys: card, target, framework, out, launch_script, dry_run, files [{name, sha256, executable, bytes}].\n"
               "Examples:\n"
               "  ccl-harness render workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-local --out /tmp/r\n"
               "  ccl-harness render card.yaml --strict --set launch.account=m4999");
    sub.callback([options, &action] { action = [options] { return run_render(*options); }; });
}

} // namespace harness::cli
