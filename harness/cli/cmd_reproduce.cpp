#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "cli/store_hook.hpp"
#include "util/home.hpp"
#include "util/quote.hpp"
#include "workflows/reproduce.hpp"
#include "workflows/slurm_dry_run.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

int run_reproduce(ReproduceOptions options, const ReportFlags& flags) {
    options.diagnostics = &std::cerr;
    options.home = harness_home();
    const bool quiet = quiet_wanted();
    const ReproduceOutcome outcome = reproduce_bundle(options, progress_stream(flags.json, quiet));
    for (const auto& problem : outcome.problems) {
        std::cerr << terminal_text(fmt::format("{}: {}{}", options.bundle.string(), problem.path.empty() ? "" : problem.path + ": ",
                                               problem.message))
                  << "\n";
    }
    if (!outcome.verdict_error.empty()) {
        std::cerr << fmt::format("ccl-harness: warning: the reproduction's numbers could not be compared with the bundle's: {}\n",
                                 terminal_text(outcome.verdict_error, true));
    }
    if (!outcome.error.empty()) {
        std::cerr << fmt::format("ccl-harness: error: {}\n", terminal_text(outcome.error, true));
    }
    if (outcome.run) {
        print_dropped_warnings(outcome.run->warnings, quiet);
        if (!outcome.run->run_dir.empty()) {
            record_runs({outcome.run->run_dir});
        }
        if (!outcome.run->pack_error.empty()) {
            std::cerr << fmt::format("ccl-harness: error: packing failed: {}\n  the run directory is intact; retry with: "
                                     "ccl-harness pack {}\n",
                                     outcome.run->pack_error, outcome.run->run_dir.string());
        }
    }
    if (!flags.json || !quiet) {
        std::ostream& result = result_stream(flags.json);
        if (!outcome.preview.empty()) {
            result << outcome.preview << "\n";
        }
        if (outcome.slurm_preview) {
            result << format_slurm_dry_run(*outcome.slurm_preview);
        }
        if (outcome.run) {
            result << format_run_outcome(*outcome.run);
        }
        if (outcome.verdict) {
            result << reproduction_verdict_text(*outcome.verdict);
        }
    }
    if (flags.json) {
        print_json(reproduce_outcome_to_json(outcome));
    }
    return outcome.exit_code;
}

} // namespace

void add_reproduce(CLI::App& sub, Action& action) {
    auto options = std::make_shared<ReproduceOptions>();
    auto flags = std::make_shared<ReportFlags>();
    sub.add_option("bundle", options->bundle, "a bundle: <name>.tar.zst or an unpacked <name>/ directory")->required();
    sub.add_option("--cluster", options->cluster,
                   "run on this cluster profile instead of the one the bundle ran on "
                   "(the scripts are then re-rendered for it, not compared)");
    sub.add_flag("--dry-run", options->dry_run, "unpack, verify, pin, re-render and compare; run nothing");
    sub.add_flag("--use-bundled-scripts", options->use_bundled_scripts,
                 "when the re-render differs from the bundled scripts, show the diff and run the bundled scripts anyway");
    sub.add_flag("--allow-image-drift", options->allow_image_drift,
                 "when the rebuilt container image's Debian packages differ from those the bundle's run had, show the "
                 "difference and run anyway");
    sub.add_flag("--fail-outside-noise", options->fail_outside_noise,
                 "exit 1 when the reproduction's step time differs from the bundle's by more than the two runs' noise");
    auto* results = add_results_option(sub, options->results, "where the new run directory goes");
    sub.add_option("--git-cache", options->git_cache, "clones of framework sources (default: $XDG_CACHE_HOME/ccl-harness/git)");
    sub.add_option("--secret", options->secret_names,
                   "NAME: the value of environment variable NAME is a secret, scrubbed from everything the run writes and "
                   "prints, although its name does not say so (repeatable)");
    sub.add_option("--grace", options->grace_seconds, "seconds between SIGTERM and SIGKILL when stopping ranks (default 5)");
    sub.footer(
        "Steps: unpack safely into a scratch directory (absolute paths, .., links, devices and\n"
        "decompression bombs are refused before anything is written), verify as `verify` does, fetch\n"
        "the framework commits pinned in provenance.json (the refs are not resolved again), re-render\n"
        "the bundled card with this harness's templates, and compare with scripts/ byte for byte.\n"
        "Identical: run, pack, and record in provenance.json which bundle (and manifest sha256) this\n"
        "reproduces. Different: print a unified diff and stop, unless --use-bundled-scripts.\n"
        "A run in a container image the harness built (podman, podman-hpc) rebuilds the image from the\n"
        "Containerfile, or reuses it when the runtime has it, and says which; when its Debian packages\n"
        "differ from those the bundle's image had, it prints the difference and stops, unless\n"
        "--allow-image-drift.\n"
        "A completed reproduction is held to the bundle's numbers: its mean step time against the bundle's,\n"
        "within noise when they differ by at most twice the standard error of the difference (Welch's, over\n"
        "each run's per-step times averaged across ranks), and every metric both have with its change.\n"
        "Exit status: 0 reproduced (or would be, with --dry-run), 1 invalid bundle, scripts differ, the run\n"
        "failed, or (--fail-outside-noise) its step time is outside the noise, 2 unusable input, 130 interrupted.\n"
        "--json keys: bundle, name, valid, problems [{path, message}], manifest_sha256, original_cluster, target, scripts "
        "{identical, differing, only_in_bundle, only_rendered, diff} | null, used_bundled_scripts, dry_run, preview, preview_slurm "
        "{bill, image, sbatch} (--dry-run on Slurm, as `run --help` documents preview.bill, .image, .sbatch) | null, run (as "
        "run --json) | null, verdict {judged, within_noise, bundle_step_time, reproduced_step_time, noise (s), bundle_steps, "
        "reproduced_steps, why, metrics {name: {bundle, reproduced, unit}}} | null, verdict_error, error, exit_code.\n"
        "Examples:\n"
        "  ccl-harness reproduce results/tiny-ddp-20261123T101500Z-1a2b3c.tar.zst --dry-run\n"
        "  ccl-harness reproduce bundle.tar.zst --cluster slurm-local");
    add_report_flags(sub, *flags);
    sub.callback([options, flags, results, &action] {
        action = [options, flags, results] {
            apply_results_default(results, options->results);
            return run_reproduce(*options, *flags);
        };
    });
}

} // namespace harness::cli
