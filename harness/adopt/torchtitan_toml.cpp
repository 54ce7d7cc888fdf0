#include "adopt/torchtitan_toml.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <map>

namespace harness {

namespace {

constexpr TorchtitanKey k_keys[] = {
    {"training.seq_len", "workload.data.seq_len", true},
    {"training.steps", "launch.steps", true},
    {"training.dataset", "workload.data.dataset", false},
    {"parallelism.data_parallel_replicate_degree", "Model-executor.model_plan_parallelization.dp_replicate", true},
    {"parallelism.data_parallel_shard_degree", "Model-executor.model_plan_parallelization.dp_shard", true},
    {"parallelism.tensor_parallel_degree", "Model-executor.model_plan_parallelization.tp", true},
    {"parallelism.pipeline_parallel_degree", "Model-executor.model_plan_parallelization.pp", true},
    {"parallelism.context_parallel_degree", "Model-executor.model_plan_parallelization.cp", true},
    {"parallelism.expert_parallel_degree", "Model-executor.model_plan_parallelization.ep", true},
    {"parallelism.pipeline_parallel_microbatch_size", "Model-executor.model_plan_parallelization.pp_mb", true},
};

std::string trimmed(const std::string& text) {
    const std::size_t first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
        return "";
    }
    return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// The value before any `# comment`, unquoted. Arrays and tables come back as written.
std::string toml_value(const std::string& raw) {
    const std::string text = trimmed(raw);
    if (!text.empty() && (text.front() == '"' || text.front() == '\'')) {
        const std::size_t end = text.find(text.front(), 1);
        return text.substr(1, end == std::string::npos ? std::string::npos : end - 1);
    }
    const std::size_t hash = text.find('#');
    return trimmed(text.substr(0, hash));
}

bool is_count(const std::string& text) {
    return !text.empty() && text.size() <= 9 &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

using Values = std::map<std::string, std::pair<std::string, int>>;

// TorchTitan's torch.profiler schedule is (wait = profile_freq - warmup - active, warmup, active),
// which is launch.profile's; a config without the two keys ran TorchTitan's defaults (3 and 1).
template <typename Where> void profile_facts(const Values& values, const Where& where, ScriptFacts& out) {
    const auto enabled = values.find("profiling.enable_profiling");
    const auto freq = values.find("profiling.profile_freq");
    if (enabled == values.end() || enabled->second.first != "true" || freq == values.end() || !is_count(freq->second.first)) {
        return;
    }
    auto count_or = [&](const char* key, long long fallback) {
        const auto found = values.find(key);
        return found != values.end() && is_count(found->second.first) ? std::stoll(found->second.first) : fallback;
    };
    const long long warmup = count_or("profiling.profiler_warmup", 3);
    const long long active = count_or("profiling.profiler_active", 1);
    const long long wait = std::stoll(freq->second.first) - warmup - active;
    if (wait < 0 || active < 1) {
        out.notes.push_back({where(freq->second.second), "profile_freq shorter than warm-up + active: left to the card"});
        return;
    }
    const std::string at = where(freq->second.second);
    out.facts.push_back({"launch.profile.wait", std::to_string(wait), at, "profile_freq - profiler_warmup - profiler_active"});
    out.facts.push_back({"launch.profile.warmup", std::to_string(warmup), at, "profiler_warmup"});
    out.facts.push_back({"launch.profile.active", std::to_string(active), at, "profiler_active"});
}

} // namespace

long long checked_product(std::initializer_list<long long> factors) {
    long long product = 1;
    for (long long factor : factors) {
        if (factor < 0 || __builtin_mul_overflow(product, factor, &product)) {
            return -1;
        }
    }
    return product;
}

const TorchtitanKey* torchtitan_key(const std::string& dotted) {
    for (const TorchtitanKey& key : k_keys) {
        if (dotted == key.key) {
            return &key;
        }
    }
    return nullptr;
}

void read_torchtitan_toml(const std::string& text, const std::string& display_name, ScriptFacts& out) {
    Values values; // section.key -> value, line
    std::string section;
    int line = 0;
    int model_line = 1;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string row = trimmed(text.substr(at, end - at));
        at = end + 1;
        ++line;
        if (row.empty() || row.front() == '#') {
            continue;
        }
        if (row.front() == '[') {
            section = trimmed(row.substr(1, row.find(']') - 1));
            model_line = section == "model" ? line : model_line;
            continue;
        }
        const std::size_t eq = row.find('=');
        if (eq != std::string::npos) {
            values[section + "." + trimmed(row.substr(0, eq))] = {toml_value(row.substr(eq + 1)), line};
        }
    }
    if (values.count("model.name") == 0 && values.count("parallelism.tensor_parallel_degree") == 0) {
        return; // not a TorchTitan job config
    }
    out.recognized.emplace_back("torchtitan toml");
    auto where = [&](int at_line) { return fmt::format("{}:{}", display_name, at_line); };
    out.facts.push_back({"Model-executor.framework.name", "torchtitan", where(model_line), "TorchTitan job config"});
    out.facts.push_back({"workload.model.phase", "training", where(model_line), "TorchTitan job config"});
    for (const TorchtitanKey& key : k_keys) {
        const auto found = values.find(key.key);
        if (found == values.end()) {
            continue;
        }
        const auto& [value, at_line] = found->second;
        if (key.integer && !is_count(value)) {
            // data_parallel_shard_degree = -1: "whatever the other degrees leave", known only at run time.
            out.notes.push_back({where(at_line), fmt::format("{} = {}: left to the card", key.key, value)});
            continue;
        }
        out.facts.push_back({key.field, value, where(at_line), key.key});
    }
    if (const auto name = values.find("model.name"); name != values.end()) {
        const auto flavor = values.find("model.flavor");
        out.notes.push_back(
            {where(name->second.second), fmt::format("model {} flavor {}: the card's model_family picks TorchTitan's registry entry",
                                                     name->second.first, flavor == values.end() ? "?" : flavor->second.first)});
    }
    auto count = [&](const char* key) -> long long {
        const auto found = values.find(key);
        if (found == values.end()) {
            return 1; // TorchTitan's default degree
        }
        return is_count(found->second.first) ? std::stoll(found->second.first) : -1;
    };
    const long long dp = checked_product(
        {count("parallelism.data_parallel_replicate_degree"), count("parallelism.data_parallel_shard_degree")});
    const long long ranks = checked_product({dp, count("parallelism.tensor_parallel_degree"),
                                             count("parallelism.pipeline_parallel_degree"),
                                             count("parallelism.context_parallel_degree")});
    const auto global = values.find("training.global_batch_size");
    const auto local = values.find("training.local_batch_size");
    if (global != values.end() && is_count(global->second.first)) {
        out.facts.push_back({"workload.data.batch_size", global->second.first, where(global->second.second), "global_batch_size"});
    } else if (local != values.end() && is_count(local->second.first) && dp > 0 &&
               checked_product({std::stoll(local->second.first), dp}) > 0) {
        // No global_batch_size: TorchTitan takes local_batch_size x the data-parallel degree.
        out.facts.push_back({"workload.data.batch_size", std::to_string(checked_product({std::stoll(local->second.first), dp})),
                             where(local->second.second), "local_batch_size x dp"});
    }
    profile_facts(values, where, out);
    if (ranks > 0 && values.count("parallelism.tensor_parallel_degree") != 0) {
        out.facts.push_back({"workload.hardware.xpu_spec.total_count", std::to_string(ranks),
                             where(values.at("parallelism.tensor_parallel_degree").second), "dp x tp x pp x cp"});
    }
}

} // namespace harness
