#pragma once
#include "util/fs.hpp"

namespace harness {

/// Where templates/, clusters/, containers/ and workloads/ live: $CCL_HARNESS_HOME, else the
/// source tree the binary was built from. Throws when neither holds templates/.
fs::path harness_home();

} // namespace harness
