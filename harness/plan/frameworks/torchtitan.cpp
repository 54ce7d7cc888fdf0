// TorchTitan: how a card becomes TorchTitan's own job config (train.toml and the torchrun line).
// Every rule cites TorchTitan v0.2.2 (commit 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce), the ref
// the reference cards pin; docs/contracts/torchtitan-v0.2.2.yaml lists the keys and options.
#include "plan/frameworks/framework_plan.hpp"

#include "card/yaml_document.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

namespace harness {
namespace {

// The registry at v0.2.2: torchtitan/models/__init__.py:7 names the model packages, and each
// package's *_args dict names its flavors (llama3/__init__.py:29-100, qwen3/__init__.py:32-191,
// llama4/__init__.py:29-102, deepseek_v3/__init__.py:29-157). Only models whose Hugging Face
// checkpoints these flavors reproduce are listed; the card names them by family or by HF id.
struct RegistryEntry {
    std::string_view family; ///< the card's model_family, lowercase, '-' for '_'
    std::string_view hf_id;  ///< lowercase Hugging Face id
    std::string_view name;   ///< model.name
    std::string_view flavor; ///< model.flavor
    double params;           ///< the flavor's parameter count (its Hugging Face checkpoint's), for num_params
};

// DeepSeek-V3's flavors by size: "16B" is the DeepSeek-MoE-16B shape (dim 2048, 27 layers, 64
// experts of 1408, top-6, vocabulary 102400), "236B" DeepSeek-V2's, "671B" DeepSeek-V3's. The
// bare name is the 671B model, as DeepSeek names it; a card naming another size says so.
constexpr std::array<RegistryEntry, 16> k_registry{{
    {"llama-3.1-8b", "meta-llama/llama-3.1-8b", "llama3", "8B", 8.03e9},
    {"llama-3.1-70b", "meta-llama/llama-3.1-70b", "llama3", "70B", 70.6e9},
    {"llama-3.1-405b", "meta-llama/llama-3.1-405b", "llama3", "405B", 405.9e9},
    {"qwen3-0.6b", "qwen/qwen3-0.6b", "qwen3", "0.6B", 0.6e9},
    {"qwen3-1.7b", "qwen/qwen3-1.7b", "qwen3", "1.7B", 1.7e9},
    {"qwen3-4b", "qwen/qwen3-4b", "qwen3", "4B", 4.0e9},
    {"qwen3-8b", "qwen/qwen3-8b", "qwen3", "8B", 8.2e9},
    {"qwen3-14b", "qwen/qwen3-14b", "qwen3", "14B", 14.8e9},
    {"qwen3-32b", "qwen/qwen3-32b", "qwen3", "32B", 32.8e9},
    {"qwen3-30b-a3b", "qwen/qwen3-30b-a3b", "qwen3", "30B-A3B", 30.5e9},
    {"qwen3-235b-a22b", "qwen/qwen3-235b-a22b", "qwen3", "235B-A22B", 235e9},
    {"llama-4-scout-17b-16e", "meta-llama/llama-4-scout-17b-16e", "llama4", "17bx16e", 109e9},
    {"llama-4-maverick-17b-128e", "meta-llama/llama-4-maverick-17b-128e", "llama4", "17bx128e", 400e9},
    {"deepseek-v3-16b", "deepseek-ai/deepseek-moe-16b-base", "deepseek_v3", "16B", 16.4e9},
    {"deepseek-v3-236b", "deepseek-ai/deepseek-v2", "deepseek_v3", "236B", 236e9},
    {"deepseek-v3", "deepseek-ai/deepseek-v3", "deepseek_v3", "671B", 671e9},
}};

// torchtitan/hf_datasets/text_datasets.py:36-52: any other name is refused at start-up
// ("Dataset X is not supported", text_datasets.py:59-63).
constexpr std::array<std::string_view, 3> k_datasets{"c4", "c4_test", "c4_validation"};

/// The card's model_family as the registry spells families: lowercase, '-' for '_' (the corpus
/// writes deepseek_v3_16b, deepseek-v3-16b and DeepSeek-V3-16B for one model).
std::string family_key(const std::string& family) {
    std::string key = to_lower(trim(family));
    std::replace(key.begin(), key.end(), '_', '-');
    return key;
}

/// The entry the card's family names, else the one its Hugging Face id names: the family first,
/// since a card may point hf_url at a checkpoint of another size than it trained.
const RegistryEntry* find_model(const WorkloadCard& card, const Plan& plan) {
    const std::string family = family_key(card.model_family);
    for (const RegistryEntry& entry : k_registry) {
        if (!family.empty() && family == entry.family) {
            return &entry;
        }
    }
    const std::string hf_id = to_lower(plan.model);
    for (const RegistryEntry& entry : k_registry) {
        if (hf_id == entry.hf_id) {
            return &entry;
        }
    }
    return nullptr;
}

/// The flavor is never chosen against the card: a num_params far from the flavor's (outside
/// 0.6x..1.6x, which tells 16B from 236B from 671B) is a contradiction named at its line.
void check_flavor_size(const WorkloadCard& card, const Plan& plan, const RegistryEntry& entry, PlanFindings& findings) {
    constexpr const char* field = "workload.model.model_arch.num_params";
    const std::string text = trim(scalar_text(find_node(card.document().root(), field)));
    char* end = nullptr;
    const double params = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (text.empty() || end == nullptr || *end != '\0' || !(params > 0)) {
        return;
    }
    if (params < entry.params * 0.6 || params > entry.params * 1.6) {
        findings.problem(field, fmt::format("{} parameters is not TorchTitan's {} flavor {} ({:.3g}), which the card's model "
                                            "({}, {}) selects: the card contradicts itself; name the model by its size "
                                            "(model_family) or correct num_params",
                                            text, entry.name, entry.flavor, entry.params, enquote(card.model_family), plan.model));
    }
}

void plan_model(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    if (const RegistryEntry* entry = find_model(card, plan)) {
        check_flavor_size(card, plan, *entry, findings);
        const std::string because = fmt::format("{} is TorchTitan's {} flavor {} (torchtitan/models/{}/__init__.py)",
                                                card.model_family.empty() ? plan.model : card.model_family, entry->name, entry->flavor,
                                                entry->name);
        set_framework_value(plan, "model_name", std::string(entry->name), because);
        set_framework_value(plan, "model_flavor", std::string(entry->flavor), because);
        return;
    }
    std::string known;
    for (const RegistryEntry& entry : k_registry) {
        known += (known.empty() ? "" : ", ") + std::string(entry.family);
    }
    findings.problem("workload.model.model_family",
                     fmt::format("{} is not supported for torchtitan v0.2.2: its model registry has no matching flavor "
                                 "(supported: {})",
                                 enquote(card.model_family.empty() ? plan.model : card.model_family), known));
    // Rendered anyway (without --strict): TorchTitan then refuses the name at start-up
    // (protocols/train_spec.py:87) instead of training its default debug model.
    set_framework_value(plan, "model_name", card.model_family, "no TorchTitan registry entry: the card's family, refused at start-up");
    set_framework_value(plan, "model_flavor", card.model_family, "no TorchTitan registry entry: the card's family");
}

void plan_precision(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    // training.mixed_precision_param is Literal["bfloat16", "float32"] (config/job_config.py:282);
    // it is the parameter dtype of FSDP's MixedPrecisionPolicy (llama3/infra/parallelize.py:134)
    // or of torch.autocast (distributed/utils.py:262). Reductions stay float32 (job_config.py:290).
    if (card.precision == "bf16" || card.precision.empty()) {
        set_framework_value(plan, "mixed_precision_param", "bfloat16",
                            card.precision.empty()
                                ? "TorchTitan's default (the card gives no precision)"
                                : "workload.model.precision bf16: bf16 compute, fp32 master weights and reductions");
    } else if (card.precision == "fp32") {
        set_framework_value(plan, "mixed_precision_param", "float32", "workload.model.precision fp32: no mixed precision");
    } else {
        findings.problem("workload.model.precision",
                         fmt::format("{} is not supported for torchtitan v0.2.2 (training.mixed_precision_param takes "
                                     "bfloat16 or float32: bf16 or fp32 in the card)",
                                     card.precision));
        set_framework_value(plan, "mixed_precision_param", "bfloat16", "TorchTitan's default (the card's precision is not supported)");
    }
}

void plan_dataset(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const std::string& dataset = card.dataset;
    if (dataset.empty()) {
        set_framework_value(plan, "dataset", "c4_test", "TorchTitan's default (job_config.py:244); the card names no dataset");
        return;
    }
    for (const std::string_view known : k_datasets) {
        if (dataset == known) {
            set_framework_value(plan, "dataset", dataset, "workload.data.dataset (one of TorchTitan's DATASETS, text_datasets.py:36)");
            return;
        }
    }
    findings.problem("workload.data.dataset", fmt::format("{} is not supported for torchtitan v0.2.2 (its datasets: c4, c4_test, "
                                                          "c4_validation)",
                                                          enquote(dataset)));
    set_framework_value(plan, "dataset", dataset, "workload.data.dataset, which TorchTitan refuses at start-up");
}

void plan_window(Plan& plan, PlanFindings& findings) {
    // profiling.py:63-78: schedule(wait = profile_freq - warmup - active, warmup, active), cycling
    // with no repeat limit, stepped once after every training step (train.py:671-693). Training
    // step k runs as profiler step k-1, so the active steps are profile_freq-active+1..profile_freq:
    // profile_freq = W + A gives exactly W+1..W+A (ProfilerStep#W..#W+A-1 in the trace).
    const long long lead = plan.profile.wait + plan.profile.warmup;
    const long long freq = lead + plan.profile.active;
    set_framework_value(
        plan, "profile_freq", std::to_string(freq),
        fmt::format("launch.profile wait+warmup {} + active {}: TorchTitan traces steps profile_freq-active+1..profile_freq "
                    "= {}..{}",
                    lead, plan.profile.active, lead + 1, freq));
    set_framework_value(plan, "first_traced_step", std::to_string(lead + 1),
                        "launch.profile: wait+warmup W, active A -> steps W+1..W+A");
    set_framework_value(plan, "profiler_warmup", std::to_string(plan.profile.warmup), "launch.profile.warmup");
    set_framework_value(plan, "profiler_active", std::to_string(plan.profile.active), "launch.profile.active");
    // The cycle repeats: a run that reaches profile_freq + wait+warmup steps starts recording
    // again and writes a second trace (over the first, same iteration folder when it ends
    // mid-cycle), so the run must stop before that.
    if (plan.traces("torch_profiler") && plan.steps >= freq + lead) {
        findings.problem("launch.steps",
                         fmt::format("{} steps reach TorchTitan's next profiling cycle (it repeats every profile_freq = {} steps and "
                                     "would record again from step {}); use fewer than {} steps or a longer launch.profile.wait",
                                     plan.steps, freq, freq + lead + 1, freq + lead));
    }
}

void plan_tracers(Plan& plan) {
    const bool torch = plan.traces("torch_profiler");
    const bool nsys = plan.traces("nsys");
    // CUPTI takes one subscriber per process: Kineto under nsys loses its GPU activity. A card
    // asking for both gets two passes in one job, each with one tracer.
    set_framework_value(plan, "enable_profiling", torch ? "true" : "false",
                        torch ? "torch_profiler is traced" : "torch_profiler is not traced");
    set_framework_value(plan, "profiler_pass", torch || !nsys ? "true" : "false",
                        torch ? "torch.profiler traces this pass (nsys never wraps it)" : "the one pass, untraced by torch.profiler");
    set_framework_value(plan, "nsys_pass", nsys ? "true" : "false",
                        nsys && torch
                            ? "a second pass under nsys with profiling.enable_profiling off: CUPTI allows one subscriber per "
                              "process, so nsys and torch.profiler never trace the same run"
                        : nsys ? "nsys wraps every rank"
                               : "nsys is not traced");
}

void plan_parallelism(const WorkloadCard& card, PlanFindings& findings) {
    // distributed/parallel_dims.py:136-158: experts are sharded over the sparse mesh
    // (pp, dp_replicate, efsdp, ep, etp) with efsdp = dp_shard·cp·tp / (etp·ep); with etp 1 (the
    // rendered default) ep must divide dp_shard·cp·tp. dp_replicate is not part of it.
    const Parallelism& par = card.parallelism;
    const long long group = par.dp_shard * par.cp * par.tp;
    if (card.has_executor && par.ep > 1 && group % par.ep != 0) {
        findings.problem("Model-executor.model_plan_parallelization.ep",
                         fmt::format("ep {} does not divide the data-parallel × tensor group TorchTitan shards experts over "
                                     "(dp_shard·cp·tp = {}·{}·{} = {}; dp_replicate is not part of it)",
                                     par.ep, par.dp_shard, par.cp, par.tp, group));
    }
}

} // namespace

void plan_torchtitan(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    if (!plan.phase.empty() && plan.phase != "training") {
        findings.problem("workload.model.phase",
                         fmt::format("{} is not supported for torchtitan (python -m torchtitan.train trains)", plan.phase));
    }
    plan_model(card, plan, findings);
    plan_precision(card, plan, findings);
    plan_dataset(card, plan, findings);
    plan_window(plan, findings);
    plan_tracers(plan);
    plan_parallelism(card, findings);
}

} // namespace harness
