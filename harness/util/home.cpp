#include "util/home.hpp"

#include "util/error.hpp"

#include <cstdlib>
#include <fmt/format.h>

#ifndef CCL_HARNESS_SOURCE_DIR
#define CCL_HARNESS_SOURCE_DIR "."
#endif

namespace harness {

namespace {

fs::path& home_override() {
    static fs::path value;
    return value;
}

bool holds_templates(const fs::path& dir) {
    std::error_code ec;
    return !dir.empty() && fs::is_directory(dir / "templates", ec);
}

fs::path executable_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

} // namespace

void set_home_override(const fs::path& home) { home_override() = home.empty() ? home : absolute_path(home); }

fs::path harness_home() {
    // An explicit choice never falls through to another copy: a wrong --home is an error.
    if (!home_override().empty()) {
        if (!holds_templates(home_override())) {
            throw input_error(fmt::format("--home {}: no templates/ there", home_override().string()));
        }
        return home_override();
    }
    const char* from_env = std::getenv("CCL_HARNESS_HOME");
    if (from_env != nullptr && *from_env != '\0') {
        fs::path home = absolute_path(from_env);
        if (!holds_templates(home)) {
            throw input_error(fmt::format("CCL_HARNESS_HOME={}: no templates/ there", home.string()));
        }
        return home;
    }
    const fs::path exe_dir = executable_dir();
    // An installed copy keeps its data in <prefix>/share/ccl-harness beside <prefix>/bin; a
    // build tree inside a checkout (build/ccl-harness) belongs to that checkout, wherever it was
    // configured; last, the source tree the binary was built from.
    const fs::path installed = exe_dir.empty() ? fs::path() : exe_dir.parent_path() / "share" / "ccl-harness";
    const fs::path checkout = exe_dir.empty() ? fs::path() : exe_dir.parent_path();
    const fs::path source = CCL_HARNESS_SOURCE_DIR;
    for (const fs::path& candidate : {installed, checkout, source}) {
        if (holds_templates(candidate)) {
            return candidate;
        }
    }
    throw input_error(fmt::format("no ccl-harness data found: neither {} (an installed copy) nor {} (the source tree it was "
                                  "built from) holds templates/; pass --home DIR or set CCL_HARNESS_HOME",
                                  installed.string(), source.string()));
}

} // namespace harness
