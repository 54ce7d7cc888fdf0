#pragma once
// Whether to draw progress: only for a person at a terminal, never in logs, pipes or CI.

namespace harness {

/// stderr is a terminal and NO_COLOR is unset or empty.
bool progress_wanted();

} // namespace harness
