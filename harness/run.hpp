#pragma once
// `ccl-harness run`: card -> plan -> rendered run -> execution -> run record (+ traces).
#include "util/fs.hpp"

#include <iosfwd>
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
};

/// Runs the card to a final state; returns the exit code (0 completed, 1 failed or timed out,
/// 2 invalid input, 130 cancelled).
int run_workload(const RunOptions& options, std::ostream& out);

} // namespace harness
