#pragma once
// `ccl-harness reproduce`: a bundle -> safe unpack -> verify -> pinned sources -> re-render with
// this harness's templates -> byte-compare with the bundled scripts -> run again, recording which
// bundle the new run reproduces.
#include "render.hpp"
#include "util/fs.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace harness {

struct ReproduceOptions {
    fs::path bundle;             ///< <name>.tar.zst or an unpacked <name>/ directory
    std::string cluster;         ///< empty: the cluster the bundle ran on
    bool dry_run = false;
    bool use_bundled_scripts = false;
    fs::path results = "results";
    fs::path git_cache;          ///< empty: default_git_cache()
    double grace_seconds = 5;
};

/// Exit code: 0 the reproduction completed (or, with --dry-run, would run), 1 the bundle is
/// invalid, the scripts differ or the new run failed, 2 unusable input, 130 interrupted.
int reproduce_bundle(const ReproduceOptions& options, std::ostream& out);

/// How a re-render differs from the scripts a bundle holds.
struct ScriptComparison {
    std::vector<std::string> only_in_bundle;
    std::vector<std::string> only_rendered;
    std::vector<std::string> differing;  ///< content or executable bit
    bool identical() const { return only_in_bundle.empty() && only_rendered.empty() && differing.empty(); }
};

/// Compares `rendered` with the files under `bundled_scripts` by name, bytes and executable bit.
ScriptComparison compare_scripts(const fs::path& bundled_scripts, const RenderedRun& rendered);

/// A unified diff (diff -ruN) from the bundled scripts to the re-render, with paths shown as
/// bundle/scripts/... and rendered/...; `scratch` receives the re-rendered files.
std::string scripts_diff(const fs::path& bundled_scripts, const RenderedRun& rendered, const fs::path& scratch);

} // namespace harness
