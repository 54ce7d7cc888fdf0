#include "cli/commands.hpp"
#include "util/error.hpp"

namespace harness::cli {

void add_reproduce(CLI::App& sub, Action& action) {
    (void)sub;
    action = [] () -> int { throw HarnessError("reproduce: not implemented yet"); };
}

} // namespace harness::cli
