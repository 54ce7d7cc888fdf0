#pragma once
// `ccl-harness reproduce`: a bundle -> safe unpack -> verify -> pinned sources -> re-render with
// this harness's templates -> byte-compare with the bundled scripts -> run again, recording which
// bundle the new run reproduces.
#include "bundle/bundle_verify.hpp"
#include "render/render.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"
#include "workflows/references.hpp"
#include "workflows/run_workload.hpp"
#include "workflows/slurm_dry_run.hpp"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct ReproduceOptions {
    fs::path bundle;     ///< <name>.tar.zst or an unpacked <name>/ directory
    std::string cluster; ///< empty: the cluster the bundle ran on
    bool dry_run = false;
    bool use_bundled_scripts = false;
    /// Run even when the rebuilt image's Debian packages differ from those the bundle's ran.
    bool allow_image_drift = false;
    /// Exit 1 when the reproduction's step time is outside the two runs' noise (a CI gate).
    bool fail_outside_noise = false;
    fs::path results = "results";
    fs::path git_cache; ///< empty: default_git_cache()
    double grace_seconds = 5;
    std::vector<std::string> secret_names; ///< --secret NAME, handed to the new run
    fs::path home;                         ///< the harness home: templates, profiles (the command line reads it once)
    /// Where the bundled card's diagnostics go as soon as they are known (the command line: stderr);
    /// null drops them. Errors are also in the exception that stops the reproduction.
    std::ostream* diagnostics = nullptr;
};

/// How a re-render differs from the scripts a bundle holds.
struct ScriptComparison {
    std::vector<std::string> only_in_bundle;
    std::vector<std::string> only_rendered;
    std::vector<std::string> differing; ///< content or executable bit
    bool identical() const { return only_in_bundle.empty() && only_rendered.empty() && differing.empty(); }
};

/// What reproduce_bundle did.
struct ReproduceOutcome {
    fs::path bundle;    ///< as given
    std::string name;   ///< the bundle's run id
    bool valid = false; ///< verify found no problem
    std::vector<BundleProblem> problems;
    std::string manifest_sha256;
    std::string original_cluster;  ///< the cluster the bundle ran on
    std::string target;            ///< the cluster of the new run
    bool scripts_compared = false; ///< false when --cluster differs from the original one
    ScriptComparison comparison;
    std::string diff; ///< unified diff, when the scripts differ
    bool used_bundled_scripts = false;
    bool dry_run = false;
    std::string preview;           ///< with --dry-run: what would run, where
    std::optional<RunOutcome> run; ///< the new run, when it ran
    /// The completed reproduction's numbers against the bundle's (reproduction_verdict).
    std::optional<ReproductionVerdict> verdict;
    std::string verdict_error; ///< why the numbers could not be compared, when they could not
    std::string error;         ///< why it stopped before running (invalid bundle, scripts differ)
    int exit_code = 0;         ///< 0 reproduced (or would be), 1 invalid bundle, scripts differ, the run failed or
                               ///< (fail_outside_noise) its step time is outside the noise, 130 interrupted
    /// with --dry-run on Slurm: the bill, image work and sbatch line, as `run --dry-run` shows them
    std::optional<SlurmDryRun> slurm_preview;
};

/// Unpacks, verifies, pins, re-renders, compares and runs again, streaming progress to `out`.
/// Unusable input (no such bundle, a card with errors, no cluster) throws an input error.
ReproduceOutcome reproduce_bundle(const ReproduceOptions& options, std::ostream& out);

/// The outcome as `reproduce --json` prints it (keys documented in `reproduce --help`).
Json reproduce_outcome_to_json(const ReproduceOutcome& outcome);

/// Compares `rendered` with the files under `bundled_scripts` by name, bytes and executable bit.
ScriptComparison compare_scripts(const fs::path& bundled_scripts, const RenderedRun& rendered);

/// A unified diff (diff -ruN) from the bundled scripts to the re-render, with paths shown as
/// bundle/scripts/... and rendered/...; `scratch` receives the re-rendered files.
std::string scripts_diff(const fs::path& bundled_scripts, const RenderedRun& rendered, const fs::path& scratch);

} // namespace harness
