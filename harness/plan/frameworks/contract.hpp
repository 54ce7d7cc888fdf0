#pragma once
// A framework contract (docs/contracts/<framework>-<ref>.yaml, docs/contracts/README.md) as the
// harness reads it: which options the framework at that ref is known to accept. The frameworks'
// doubles enforce the contracts in the tests; here they let `validate --strict` say, before a job
// waits hours in a queue, which of the card's launch.args nobody has checked.
#include "plan/plan.hpp"
#include "util/fs.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace harness {

struct FrameworkContract {
    fs::path file;
    std::string parser;            ///< argparse | toml+cli | pyconfig | ...
    std::set<std::string> options; ///< "--name" (argparse, CLI) or "key" (pyconfig)
};

/// The contract of the plan's framework at its source ref under `contracts_dir`:
/// <framework>-<ref>.yaml, else <source repository name>-<ref>.yaml (vLLM's TPU backend is
/// tpu-inference). nullopt when the plan pins no ref, there is no such file, or it cannot be read.
std::optional<FrameworkContract> find_contract(const Plan& plan, const fs::path& contracts_dir);

/// The entries of `args` (launch.args) that name an option the contract does not list: for
/// pyconfig, `key=value` whose key is unlisted; otherwise `--name` or `--name=value` whose name is
/// unlisted. Values and positional words are not options and are never reported.
std::vector<std::string> args_outside_contract(const std::vector<std::string>& args, const FrameworkContract& contract);

} // namespace harness
