#pragma once
// After a command's runs are on disk: recorded in the per-user results store
// (store/results_store.hpp). The directories are the source of truth, so a store that cannot be
// written is a warning on stderr, never a failed command.
#include "store/results_store.hpp"
#include "util/quote.hpp"

#include <iostream>
#include <string>
#include <vector>

namespace harness::cli {

inline void record_runs(const std::vector<fs::path>& run_dirs) {
    const std::string problem = store::record_in_default_store(run_dirs);
    if (!problem.empty()) {
        std::cerr << "ccl-harness: warning: " << terminal_text(problem, true) << "\n";
    }
}

} // namespace harness::cli
