#include "plan/frameworks/contract.hpp"

#include "util/strings.hpp"
#include "util/yaml_bounded.hpp"

#include <yaml-cpp/yaml.h>

namespace harness {

namespace {

/// "https://github.com/vllm-project/tpu-inference.git" -> "tpu-inference".
std::string repository_name(const std::string& repo) {
    std::string name = repo;
    while (!name.empty() && name.back() == '/') {
        name.pop_back();
    }
    name = name.substr(name.find_last_of('/') + 1);
    if (ends_with(name, ".git")) {
        name.resize(name.size() - 4);
    }
    return to_lower(name);
}

/// `section`: "" for the contract's top-level options, else the section whose options: apply
/// (vLLM's serve: when launch.args go to `vllm serve`, not to the offline bench).
std::optional<FrameworkContract> load_contract(const fs::path& file, const std::string& section) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
        return std::nullopt;
    }
    try {
        const YAML::Node root = load_yaml_bounded(file);
        FrameworkContract contract;
        contract.file = file;
        contract.parser = root["parser"] ? root["parser"].as<std::string>() : "";
        for (const YAML::Node& option : section.empty() ? root["options"] : root[section]["options"]) {
            if (option["name"]) {
                contract.options.insert(option["name"].as<std::string>());
            }
        }
        return contract;
    } catch (const std::exception&) { // YAML::Exception, or a bound of load_yaml_bounded
        return std::nullopt;          // a broken contract is the test suite's finding (reference_cards.sh), not the user's
    }
}

} // namespace

std::optional<FrameworkContract> find_contract(const Plan& plan, const fs::path& contracts_dir) {
    // A ref with a '/' would leave the directory: no contract is named so.
    if (plan.source_ref.empty() || plan.source_ref.find('/') != std::string::npos || plan.framework.empty()) {
        return std::nullopt;
    }
    const auto serve = plan.framework_config.find("serve");
    const std::string section = serve != plan.framework_config.end() && serve->second == "true" ? "serve" : "";
    if (auto contract = load_contract(contracts_dir / (plan.framework + "-" + plan.source_ref + ".yaml"), section)) {
        return contract;
    }
    const std::string repo = repository_name(plan.source_repo);
    if (repo.empty() || repo == plan.framework) {
        return std::nullopt;
    }
    return load_contract(contracts_dir / (repo + "-" + plan.source_ref + ".yaml"), section);
}

std::vector<std::string> args_outside_contract(const std::vector<std::string>& args, const FrameworkContract& contract) {
    std::vector<std::string> out;
    // Hydra (torchxla) takes KEY=VALUE overrides as pyconfig does.
    const bool pyconfig = contract.parser == "pyconfig" || contract.parser == "hydra";
    for (const std::string& arg : args) {
        const std::size_t equals = arg.find('=');
        if (pyconfig) {
            if (equals != std::string::npos && equals > 0 && contract.options.count(arg.substr(0, equals)) == 0) {
                out.push_back(arg);
            }
        } else if (starts_with(arg, "--") && arg.size() > 2 && contract.options.count(arg.substr(0, equals)) == 0) {
            out.push_back(arg);
        }
    }
    return out;
}

} // namespace harness
