#pragma once
#include "util/fs.hpp"

namespace harness {

/// Where templates/, clusters/, containers/ and workloads/ live, first found of: --home (see
/// set_home_override), $CCL_HARNESS_HOME, <executable>/../share/ccl-harness (an installed copy),
/// <executable>/.. (a build tree inside a checkout), the source tree the binary was built from.
/// Throws when none holds templates/; an explicit --home or variable never falls through.
fs::path harness_home();

/// The --home flag: wins over everything else. Empty clears it.
void set_home_override(const fs::path& home);

} // namespace harness
