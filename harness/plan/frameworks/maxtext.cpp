#include "plan/frameworks/framework_plan.hpp"

#include "util/strings.hpp"

#include <cmath>
#include <fmt/format.h>
#include <string_view>

// MaxText at tpu-recipes-v0.1.4 (AI-Hypercomputer/maxtext 9f1820b4); the contract is
// docs/contracts/maxtext-tpu-recipes-v0.1.4.yaml. Every rule below cites the file it comes from.
namespace harness {

namespace {

struct ModelName {
    std::string_view card;    ///< workload.model.model_family, lowercased
    std::string_view maxtext; ///< model_name=, one of MaxText/configs/models/<name>.yml
};

// MaxText/pyconfig.py:284-324 (validate_model_name) lists exactly these, each with its
// MaxText/configs/models/<name>.yml; the left column is how CCL-Bench cards spell the family.
constexpr ModelName k_models[] = {
    {"llama-2-7b", "llama2-7b"},
    {"llama-2-13b", "llama2-13b"},
    {"llama-2-70b", "llama2-70b"},
    {"llama-3-8b", "llama3-8b"},
    {"llama-3-70b", "llama3-70b"},
    {"llama-3.1-8b", "llama3.1-8b"},
    {"llama-3.1-70b", "llama3.1-70b"},
    {"llama-3.1-405b", "llama3.1-405b"},
    {"llama-3.3-70b", "llama3.3-70b"},
    {"mistral-7b", "mistral-7b"},
    {"mixtral-8x7b", "mixtral-8x7b"},
    {"mixtral-8x22b", "mixtral-8x22b"},
    {"deepseek-v2-16b", "deepseek2-16b"},
    {"deepseek-v2-lite", "deepseek2-16b"},
    {"deepseek-v2-236b", "deepseek2-236b"},
    {"deepseek-v3-671b", "deepseek3-671b"},
    {"gemma-2b", "gemma-2b"},
    {"gemma-7b", "gemma-7b"},
    {"gemma-2-2b", "gemma2-2b"},
    {"gemma-2-9b", "gemma2-9b"},
    {"gemma-2-27b", "gemma2-27b"},
    {"gemma-3-4b", "gemma3-4b"},
    {"gemma-3-12b", "gemma3-12b"},
    {"gemma-3-27b", "gemma3-27b"},
    {"qwen-3-0.6b", "qwen3-0.6b"},
    {"qwen-3-4b", "qwen3-4b"},
    {"qwen-3-8b", "qwen3-8b"},
    {"gpt-3-175b", "gpt3-175b"},
    {"gpt-3-22b", "gpt3-22b"},
    {"gpt-3-6b", "gpt3-6b"},
    {"llama-4-17b-16e", "llama4-17b-16e"},
    {"llama-4-17b-128e", "llama4-17b-128e"},
};

/// MaxText's own name for a card's model family: the card spelling, or already MaxText's.
std::string maxtext_model_name(const std::string& family) {
    const std::string lower = to_lower(family);
    for (const ModelName& model : k_models) {
        if (lower == model.card || lower == model.maxtext) {
            return std::string(model.maxtext);
        }
    }
    return {};
}

bool is_maxtext_model(std::string_view name) {
    for (const ModelName& model : k_models) {
        if (name == model.maxtext) {
            return true;
        }
    }
    return false;
}

/// The value of the last `key=` in launch.args (omegaconf's from_cli keeps the last one).
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

/// Decides model_name: the card's family, unless launch.args names MaxText's model itself.
void maxtext_model(Plan& plan, PlanFindings& findings) {
    const std::string from_family = maxtext_model_name(plan.model_family);
    const std::string from_args = last_arg(plan.extra_args, "model_name");
    if (!from_args.empty() && !is_maxtext_model(from_args)) {
        findings.problem("launch.args", fmt::format("model_name={} is not a model of maxtext at tpu-recipes-v0.1.4 "
                                                    "(MaxText/pyconfig.py validate_model_name)",
                                                    from_args));
    }
    if (!from_args.empty() && !from_family.empty() && from_args != from_family) {
        findings.problem("workload.model.model_family", fmt::format("{} is MaxText's {}, but launch.args runs model_name={}",
                                                                    plan.model_family, from_family, from_args));
    }
    if (from_family.empty() && from_args.empty()) {
        findings.problem("workload.model.model_family",
                         fmt::format("{} is not supported for maxtext at tpu-recipes-v0.1.4: it has no "
                                     "MaxText/configs/models/<name>.yml (add model_name=<name> to launch.args if it does)",
                                     plan.model_family.empty() ? "an empty model_family" : plan.model_family));
    }
    const std::string model_name = !from_args.empty() ? from_args : !from_family.empty() ? from_family : "default";
    // pyconfig refuses a key set both by the model's yml and the command line (pyconfig.py:479-484);
    // of the keys rendered, only these two models set one: max_target_length.
    if (model_name == "gpt3-22b" || model_name == "gpt3-6b") {
        findings.problem("workload.data.seq_len", fmt::format("{} fixes max_target_length in MaxText/configs/models/{}.yml, "
                                                              "which refuses the max_target_length the harness passes",
                                                              model_name, model_name));
    }
    set_framework_value(plan, "model_name", model_name,
                        !from_args.empty()
                            ? "launch.args model_name=" + from_args
                            : fmt::format("model_family {} -> MaxText/configs/models/{}.yml", plan.model_family, model_name));
}

/// Decides dtype and weight_dtype from the card's precision.
void maxtext_dtype(Plan& plan, PlanFindings& findings) {
    // dtype is the activations' type (MaxText/configs/base.yml:79); weights stay float32
    // (base.yml:121), MaxText's mixed precision: bf16 cards train that way.
    const std::string dtype = xla_dtype_name(plan.precision);
    if (dtype == "bfloat16") {
        set_framework_value(plan, "dtype", dtype, "precision bf16 -> dtype=bfloat16 (base.yml:79), weights float32 (base.yml:121)");
    } else if (dtype == "float32") {
        set_framework_value(plan, "dtype", dtype, "precision fp32 -> dtype=float32 (base.yml:79)");
    } else {
        findings.problem("workload.model.precision", fmt::format("{} is not supported for maxtext: the rendered run sets "
                                                                 "dtype bfloat16 or float32 only",
                                                                 plan.precision));
        set_framework_value(plan, "dtype", "bfloat16", "precision " + plan.precision + " is not supported: bfloat16");
    }
    set_framework_value(plan, "weight_dtype", "float32", "MaxText's default weight_dtype (base.yml:121), stated");
}

/// Decides dataset_type, refusing a dataset the rendered run cannot read.
void maxtext_dataset(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    // base.yml:431-433: dataset_type is synthetic, hf, grain or tfds; only synthetic needs no
    // bucket or tokenizer, so that is the only one the templates render.
    const std::string dataset = to_lower(card.dataset);
    if (!dataset.empty() && dataset != "synthetic") {
        findings.problem("workload.data.dataset", fmt::format("{} is not supported for maxtext: the rendered run uses "
                                                              "dataset_type=synthetic only",
                                                              dataset));
    }
    set_framework_value(plan, "dataset_type", "synthetic", "workload.data.dataset synthetic (base.yml:431-433)");
}

/// Decides per_device_batch_size from the global batch and the chips.
void maxtext_batch(Plan& plan, PlanFindings& findings) {
    // MaxText sizes the batch per chip (per_device_batch_size, base.yml:412) and truncates
    // devices x per_device to the global batch (pyconfig.py:1017-1036): a global batch that is no
    // multiple of the chips would not survive the round trip through a decimal fraction.
    const long long chips = std::max(1LL, plan.world_size);
    if (plan.batch_size % chips != 0) {
        findings.problem("workload.data.batch_size", fmt::format("global batch {} is not a multiple of the {} chips: maxtext "
                                                                 "takes a per-chip batch (per_device_batch_size)",
                                                                 plan.batch_size, chips));
    }
    const double per_device = static_cast<double>(plan.batch_size) / static_cast<double>(chips);
    set_framework_value(plan, "per_device_batch_size", fmt::format("{:g}", per_device),
                        fmt::format("global batch {} / {} chips", plan.batch_size, chips));
}

/// Decides the ICI mesh axes from the card's parallel degrees.
void maxtext_mesh(Plan& plan, PlanFindings& findings) {
    const long long chips = std::max(1LL, plan.world_size);
    // The mesh: the ICI axes multiply to the devices of the slice, one of them may be -1
    // (MaxText/max_utils.py:392-415, fill_unspecified_mesh_axes). The card's expert ranks are
    // part of its data-parallel ones, MaxText gives them their own axis: FSDP takes what is left.
    const Parallelism& par = plan.parallelism;
    const long long fixed = par.dp_replicate * par.tp * par.ep * par.pp * par.cp;
    if (fixed <= 0 || chips % fixed != 0) {
        findings.problem("Model-executor.model_plan_parallelization",
                         fmt::format("dp_replicate {} x tp {} x ep {} x pp {} x cp {} = {} does not divide the {} chips: "
                                     "MaxText's ICI mesh must multiply to the slice (max_utils.py:392-415)",
                                     par.dp_replicate, par.tp, par.ep, par.pp, par.cp, fixed, chips));
    }
    const long long fsdp = fixed > 0 && chips % fixed == 0 ? chips / fixed : 1;
    set_framework_value(plan, "ici_data_parallelism", std::to_string(par.dp_replicate), "dp_replicate");
    set_framework_value(plan, "ici_fsdp_parallelism", std::to_string(fsdp),
                        fmt::format("{} chips / (dp_replicate·tp·ep·pp·cp {})", chips, fixed));
    set_framework_value(plan, "ici_tensor_parallelism", std::to_string(par.tp), "tp");
    set_framework_value(plan, "ici_expert_parallelism", std::to_string(par.ep), "ep");
    set_framework_value(plan, "ici_pipeline_parallelism", std::to_string(par.pp), "pp");
    set_framework_value(plan, "ici_context_parallelism", std::to_string(par.cp), "cp");
}

/// Decides the profiler's window and the steps verify counts in its traces.
void maxtext_profiler(Plan& plan, PlanFindings& findings) {
    // The window: the profiler starts at step skip_first_n_steps_for_profiler (0-based) and stops
    // after profiler_steps steps or at steps - 1 (MaxText/profiler.py:41-43, 105-109; train.py:591-633),
    // so W and A give 1-based steps W+1..W+A, and the run needs steps >= W+A.
    const long long start = plan.profile.wait + plan.profile.warmup;
    set_framework_value(plan, "skip_first_n_steps_for_profiler", std::to_string(start), "profile wait + warmup");
    set_framework_value(plan, "profiler_steps", std::to_string(plan.profile.active), "profile active");
    if (plan.traces("xplane") && plan.steps > 0 && plan.steps < start + plan.profile.active) {
        findings.problem("launch.steps", fmt::format("steps {} ends before the traced window (steps {}..{}): MaxText stops "
                                                     "the profiler at step steps-1 (profiler.py:108-109)",
                                                     plan.steps, start + 1, start + plan.profile.active));
    }
    plan.traced_steps = 0;
    plan.origins["profile.traced_steps"] = Origin{
        Origin::Kind::derived, "", "0: XPlane traces carry no ProfilerStep markers to count (MaxText profiles with jax.profiler)"};
}

} // namespace

void plan_maxtext(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    maxtext_model(plan, findings);
    maxtext_dtype(plan, findings);
    maxtext_dataset(card, plan, findings);
    maxtext_batch(plan, findings);
    maxtext_mesh(plan, findings);
    maxtext_profiler(plan, findings);
}

} // namespace harness
