#include "home.hpp"

#include "util/error.hpp"

#include <cstdlib>
#include <fmt/format.h>

#ifndef CCL_HARNESS_SOURCE_DIR
#define CCL_HARNESS_SOURCE_DIR "."
#endif

namespace harness {

fs::path harness_home() {
    const char* from_env = std::getenv("CCL_HARNESS_HOME");
    const fs::path home = from_env != nullptr && *from_env != '\0' ? fs::path(from_env) : fs::path(CCL_HARNESS_SOURCE_DIR);
    std::error_code ec;
    if (!fs::is_directory(home / "templates", ec)) {
        throw HarnessError(fmt::format("{}: no templates/ here; set CCL_HARNESS_HOME to the ccl-harness checkout",
                                       home.string()));
    }
    return home;
}

} // namespace harness
