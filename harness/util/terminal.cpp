#include "util/terminal.hpp"

#include <cstdlib>
#include <unistd.h>

namespace harness {

bool progress_wanted() {
    const char* no_color = std::getenv("NO_COLOR");
    return ::isatty(STDERR_FILENO) != 0 && (no_color == nullptr || *no_color == '\0');
}

} // namespace harness
