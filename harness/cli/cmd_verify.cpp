#include "cli/commands.hpp"
#include "util/error.hpp"

namespace harness::cli {

void add_verify(CLI::App& sub, Action& action) {
    (void)sub;
    action = [] () -> int { throw HarnessError("verify: not implemented yet"); };
}

} // namespace harness::cli
