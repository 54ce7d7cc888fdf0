#pragma once
// --state, --card, --target, --since, --until, --where: the run query `status` and `compare`
// spell the same way (one owner, so their help cannot drift).
#include "workflows/run_query.hpp"

#include <CLI/CLI.hpp>

namespace harness::cli {

/// The query's options into `query` (which must outlive parsing); `with_state` adds --state
/// (compare reads completed runs only, so it has none).
void add_run_query_options(CLI::App& sub, RunQuery& query, bool with_state);

} // namespace harness::cli
