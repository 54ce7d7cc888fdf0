#include "cli/commands.hpp"
#include "util/error.hpp"

namespace harness::cli {

void add_pack(CLI::App& sub, Action& action) {
    (void)sub;
    action = [] () -> int { throw HarnessError("pack: not implemented yet"); };
}

} // namespace harness::cli
