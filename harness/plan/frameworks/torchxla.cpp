#include "plan/frameworks/framework_plan.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>
#include <string_view>
#include <tuple>

// PyTorch/XLA training as CCL-Bench's torchxla cards ran it: torchprime's
// torchprime/torch_xla_models/train.py (Hydra overrides) on torch_xla 2.8.0, SPMD over one slice.
// The contract is docs/contracts/torchxla-ea8f14b64a1f14bcb5b6603dd3d41911d414c5f7.yaml; every
// rule below cites the torchprime file it comes from, at that commit.
namespace harness {

namespace {

struct TorchprimeModel {
    std::string_view card;       ///< workload.model.model_family, lowercased
    std::string_view torchprime; ///< model=, one of configs/model/<name>.yaml
};

// The Llama configs of configs/model/ (llama.LlamaForCausalLM): the ones whose sharding presets
// configs/model/sharding/llama-fsdp{,-tp}.yaml the harness picks between. The left column is how
// CCL-Bench cards spell the family.
constexpr TorchprimeModel k_models[] = {
    {"llama-3-8b", "llama-3-8b"},
    {"llama-3.1-8b", "llama-3.1-8b"},
    {"llama-3.1-70b", "llama-3.1-70b"},
    {"llama-3.1-405b", "llama-3.1-405b"},
};

std::string torchprime_model_name(const std::string& family) {
    const std::string lower = to_lower(family);
    for (const TorchprimeModel& model : k_models) {
        if (lower == model.card) {
            return std::string(model.torchprime);
        }
    }
    return {};
}

bool is_torchprime_model(std::string_view name) {
    for (const TorchprimeModel& model : k_models) {
        if (name == model.torchprime) {
            return true;
        }
    }
    return false;
}

/// The value of the last `key=` in launch.args: Hydra keeps the last choice of a config group
/// (hydra/_internal/defaults_list.py:107-110 at v1.3.0) and applies value overrides in order.
std::string last_arg(const std::vector<std::string>& args, std::string_view key) {
    std::string value;
    const std::string prefix = std::string(key) + "=";
    for (const std::string& arg : args) {
        if (starts_with(arg, prefix)) {
            value = arg.substr(prefix.size());
        }
    }
    return value;
}

void torchxla_model(Plan& plan, PlanFindings& findings) {
    const std::string from_family = torchprime_model_name(plan.model_family);
    const std::string from_args = last_arg(plan.extra_args, "model");
    if (!from_args.empty() && !is_torchprime_model(from_args)) {
        findings.problem("launch.args", fmt::format("model={} is not a Llama config of torchprime's configs/model/ that the "
                                                    "rendered run shards (llama-3-8b, llama-3.1-8b, llama-3.1-70b, llama-3.1-405b)",
                                                    from_args));
    }
    if (!from_args.empty() && !from_family.empty() && from_args != from_family) {
        findings.problem("workload.model.model_family", fmt::format("{} is torchprime's {}, but launch.args runs model={}",
                                                                    plan.model_family, from_family, from_args));
    }
    if (from_family.empty() && from_args.empty()) {
        findings.problem("workload.model.model_family",
                         fmt::format("{} is not supported for torchxla: the rendered run trains torchprime's Llama configs "
                                     "(configs/model/llama-3-8b, llama-3.1-8b, llama-3.1-70b, llama-3.1-405b)",
                                     plan.model_family.empty() ? "an empty model_family" : plan.model_family));
    }
    const std::string model = !from_args.empty() ? from_args : !from_family.empty() ? from_family : "llama-3.1-8b";
    set_framework_value(plan, "model", model,
                        !from_args.empty() ? "launch.args model=" + from_args
                                           : fmt::format("model_family {} -> configs/model/{}.yaml", plan.model_family, model));
}

void torchxla_dtype(Plan& plan, PlanFindings& findings) {
    // train.py:60 asserts torch_dtype == "bfloat16": the only precision torchprime trains in.
    if (xla_dtype_name(plan.precision) != "bfloat16") {
        findings.problem("workload.model.precision", fmt::format("{} is not supported for torchxla: torchprime's train.py "
                                                                 "asserts torch_dtype bfloat16 (train.py:60)",
                                                                 plan.precision));
    }
    set_framework_value(plan, "torch_dtype", "bfloat16", "torchprime trains in bfloat16 only (train.py:60)");
}

void torchxla_dataset(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    // configs/dataset/wikitext.yaml is the default dataset (default.yaml:9); make_train_dataset
    // loads a whole split without streaming (torchprime/data/dataset.py:49), so a corpus the size
    // of c4 is no dataset= away: the templates render wikitext only.
    const std::string dataset = to_lower(card.dataset);
    if (!dataset.empty() && !starts_with(dataset, "wikitext")) {
        findings.problem("workload.data.dataset", fmt::format("{} is not supported for torchxla: the rendered run trains on "
                                                              "torchprime's dataset=wikitext (wikitext-2-raw-v1, "
                                                              "configs/dataset/wikitext.yaml)",
                                                              card.dataset));
    }
    set_framework_value(plan, "dataset", "wikitext", "workload.data.dataset wikitext (configs/dataset/wikitext.yaml)");
}

void torchxla_batch(Plan& plan, PlanFindings& findings) {
    // task.global_batch_size is the global batch (configs/task/train.yaml:3). With one sharded mesh
    // axis every host loads global_batch_size / processes (trainer/base_trainer.py:193-195): a
    // batch the hosts do not divide loses its remainder.
    const long long hosts = std::max(1LL, plan.tpu_hosts);
    if (plan.batch_size % hosts != 0) {
        findings.problem("workload.data.batch_size",
                         fmt::format("global batch {} is not a multiple of the {} hosts of {}: torchprime's dataloader "
                                     "gives each host batch/hosts sequences (base_trainer.py:193-195)",
                                     plan.batch_size, hosts, plan.tpu_accelerator_type));
    }
    set_framework_value(plan, "global_batch_size", std::to_string(plan.batch_size), "workload.data.batch_size (global)");
}

/// The ICI mesh (data, fsdp, tensor; expert and context stay 1) and the sharding preset.
void torchxla_mesh(Plan& plan, PlanFindings& findings) {
    const Parallelism& par = plan.parallelism;
    // Degrees the rendered mesh cannot hold: it has no pipeline axis and keeps context and expert at 1.
    for (const auto& [field, degree, why] :
         {std::tuple{"pp", par.pp, "torchprime's mesh has no pipeline axis (topology.py:69-75)"},
          std::tuple{"cp", par.cp,
                     "the rendered run keeps ici_mesh.context=1: context parallelism needs model.context and the "
                     "llama-fsdp-tp-cp preset (utils/config_utils.py:24-30)"},
          std::tuple{"ep", par.ep, "the Llama configs have no experts to shard over ici_mesh.expert"}}) {
        if (degree > 1) {
            findings.problem(std::string(k_parallel_field) + field,
                             fmt::format("{} {} is not supported for torchxla: {}", field, degree, why));
        }
    }
    // The mesh multiplies to the slice's devices, or get_mesh fails (topology.py:62-67).
    const long long chips = std::max(1LL, plan.world_size);
    const long long fixed = par.dp_replicate * par.tp;
    if (fixed <= 0 || chips % fixed != 0) {
        findings.problem("Model-executor.model_plan_parallelization",
                         fmt::format("dp_replicate {} x tp {} = {} does not divide the {} chips: torchprime's ICI mesh must "
                                     "multiply to the slice (topology.py:62-67)",
                                     par.dp_replicate, par.tp, fixed, chips));
    }
    const long long fsdp = fixed > 0 && chips % fixed == 0 ? chips / fixed : 1;
    set_framework_value(plan, "ici_data", std::to_string(par.dp_replicate), "dp_replicate");
    set_framework_value(plan, "ici_fsdp", std::to_string(fsdp), fmt::format("{} chips / (dp_replicate·tp {})", chips, fixed));
    set_framework_value(plan, "ici_tensor", std::to_string(par.tp), "tp");
    // llama-fsdp shards every weight over fsdp alone (configs/model/sharding/llama-fsdp.yaml);
    // a tensor axis needs llama-fsdp-tp's [tensor, fsdp] specs or it only replicates.
    const bool tensor = par.tp > 1;
    set_framework_value(plan, "sharding", tensor ? "llama-fsdp-tp" : "llama-fsdp",
                        tensor ? "tp > 1: configs/model/sharding/llama-fsdp-tp.yaml" : "tp 1: configs/model/sharding/llama-fsdp.yaml");
}

/// The profiled window: torchprime starts xp.start_trace after step profile_start_step (0-based)
/// and stops it after step profile_end_step (trainer/base_trainer.py:300-311), so the trace holds
/// steps start+1..end; ensure_profile_end_step clamps end to max_steps-5 and turns profiling off
/// for start < 0 (utils/profiling.py:24-33).
void torchxla_profiler(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const long long skipped = plan.profile.wait + plan.profile.warmup;
    const long long start = skipped - 1;
    const long long end = skipped + plan.profile.active - 1;
    const long long needed = end + 5;
    if (plan.traces("xplane") && skipped < 1) {
        findings.problem("launch.profile.warmup", "torchprime cannot trace the first step: its trace starts after step "
                                                  "profile_start_step >= 0 (base_trainer.py:300-306); set wait + warmup >= 1");
    }
    if (plan.traces("xplane") && plan.steps < needed) {
        if (card.launch.steps) {
            findings.problem("launch.steps", fmt::format("steps {} cannot hold the traced window (steps {}..{}): torchprime stops "
                                                         "the trace no later than step max_steps-5 (utils/profiling.py:32), so "
                                                         "it needs steps >= {}",
                                                         plan.steps, skipped + 1, skipped + plan.profile.active, needed));
        } else {
            plan.steps = needed;
            plan.origins["steps"] = Origin{Origin::Kind::derived, "",
                                           fmt::format("{}: wait + warmup + active + 4, torchprime ends a trace by step "
                                                       "max_steps-5 (utils/profiling.py:32)",
                                                       needed)};
        }
    }
    set_framework_value(plan, "profile_start_step", std::to_string(start), "profile wait + warmup - 1 (base_trainer.py:301)");
    set_framework_value(plan, "profile_end_step", std::to_string(end), "profile wait + warmup + active - 1 (base_trainer.py:309)");
    // One StepMarker per step in torch_xla's trace (torch_xla/csrc/init_python_bindings.cpp:678
    // at v2.8.0) is what the metrics count; verify's ProfilerStep count does not apply.
    plan.traced_steps = 0;
    plan.origins["profile.traced_steps"] = Origin{Origin::Kind::derived, "",
                                                  "0: XPlane traces carry no ProfilerStep markers to count (torch_xla profiles with "
                                                  "xp.start_trace)"};
}

} // namespace

void plan_torchxla(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    torchxla_model(plan, findings);
    torchxla_dtype(plan, findings);
    torchxla_dataset(card, plan, findings);
    torchxla_batch(plan, findings);
    torchxla_mesh(plan, findings);
    torchxla_profiler(card, plan, findings);
}

} // namespace harness
