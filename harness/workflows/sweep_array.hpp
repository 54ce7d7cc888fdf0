#pragma once
// A sweep on a Slurm target: every pending point is rendered into its run directory first,
// then the points go to Slurm as job arrays, one per geometry, and their tasks are followed
// together (run/slurm_array.hpp). Each point that ends is finished as `ccl-harness run` finishes
// a run: traces, metrics, provenance, bundle.
//
// An array is one submission, so its tasks share one set of #SBATCH options: points whose
// options differ (nodes, tasks, time limit, account, partition...) go to separate arrays, one
// per distinct set, polled in the same rounds (one scontrol call per array per poll).
#include "workflows/run_workload.hpp"
#include "workflows/sweep.hpp"

#include <iosfwd>
#include <string>

namespace harness {

/// Whether every pending point of the sweep resolves to a Slurm cluster profile (points that do
/// not resolve are the run's to report; they do not decide).
bool sweep_targets_slurm(const SweepRecord& record, const fs::path& home);

/// Runs the pending points as Slurm job arrays, saving sweep.json after every change. Ctrl-C
/// cancels the arrays; their tasks are then recorded as cancelled.
void run_points_as_arrays(SweepRecord& record, const fs::path& dir, const SweepOptions& options, std::ostream& out);

/// The `ccl-harness run` options of one point of the sweep.
RunOptions point_run_options(const SweepRecord& record, const fs::path& dir, const SweepOptions& options, const SweepPoint& point);

/// Records how a point's run ended (`error`: what it threw instead, then `ran` is unused) and
/// says a packing failure or error on `out`.
void settle_point(SweepPoint& point, const RunOutcome& ran, const std::string& error, std::ostream& out);

/// The point's overrides, for progress lines and summaries.
std::string point_label(const SweepPoint& point);

} // namespace harness
