#pragma once
// `ccl-harness run`: card -> plan -> rendered run -> execution -> run record (+ traces).
#include "card.hpp"
#include "cluster.hpp"
#include "provenance.hpp"
#include "render.hpp"
#include "util/fs.hpp"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct RunOptions {
    fs::path card;
    std::string cluster;
    std::vector<std::string> overrides;
    fs::path results = "results";
    bool dry_run = false;
    fs::path dry_run_out;  ///< with --dry-run: also write the rendered files here
    bool teardown = false;
    double grace_seconds = 5;
    bool pack = true;  ///< pack a bundle when the run completes
    fs::path git_cache;  ///< clones of launch.source repos; empty: default_git_cache()
};

/// Runs the card to a final state; returns the exit code (0 completed, 1 failed or timed out,
/// 2 invalid input, 130 cancelled).
int run_workload(const RunOptions& options, std::ostream& out);

/// The second half of run_workload, also used by reproduce: a new run directory for an
/// already-rendered run, execution, traces, provenance (naming the bundle it `reproduces`, if
/// any) and, when it completes, its bundle. Same exit codes.
int execute_rendered_run(const WorkloadCard& card, const ClusterProfile& cluster, const std::string& target, const RenderedRun& run,
                         const RunOptions& options, const std::optional<ReproducedBundle>& reproduces, std::ostream& out);

} // namespace harness
