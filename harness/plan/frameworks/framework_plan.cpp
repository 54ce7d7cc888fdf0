#include "plan/frameworks/framework_plan.hpp"

#include "plan/frameworks/vllm_tpu.hpp"

#include "card/schema.hpp"
#include "card/yaml_document.hpp"

#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

void set_framework_value(Plan& plan, const std::string& key, const std::string& value, const std::string& because) {
    plan.framework_config[key] = value;
    plan.origins["framework_config." + key] = Origin{Origin::Kind::derived, "", because};
}

std::string torch_dtype_name(const std::string& precision) {
    if (precision.empty()) {
        return "auto";
    }
    if (precision == "bf16" || precision == "bfloat16") {
        return "bfloat16";
    }
    if (precision == "fp16" || precision == "float16" || precision == "half") {
        return "float16";
    }
    if (precision == "fp32" || precision == "float32") {
        return "float32";
    }
    return {};
}

void set_torch_dtype(Plan& plan, PlanFindings& findings, const std::string& framework) {
    const std::string dtype = torch_dtype_name(plan.precision);
    if (dtype.empty()) {
        findings.problem(
            "workload.model.precision",
            fmt::format("{} is not supported for {}: --dtype takes auto, float16, bfloat16 or float32", plan.precision, framework));
    } else {
        set_framework_value(plan, "dtype", dtype, fmt::format("--dtype for precision '{}'", plan.precision));
    }
}

void check_one_node_server(const WorkloadCard& card, const Plan& plan, PlanFindings& findings, const std::string& server,
                           const std::string& multi_node) {
    if (card.has_executor && plan.nodes > 1) {
        findings.problem("workload.hardware.xpu_spec.total_count",
                         fmt::format("{} nodes: the rendered {} runs on one node (tp × pp × dp = {} GPUs); a multi-node "
                                     "server ({}) is not rendered",
                                     plan.nodes, server, plan.world_size, multi_node));
    }
    if (card.has_executor && plan.parallelism.cp > 1) {
        findings.problem(std::string(k_parallel_field) + "cp",
                         fmt::format("cp {} is not supported for {}: it runs tp × pp × dp only", plan.parallelism.cp, server));
    }
}

void check_random_prompts(const WorkloadCard& card, PlanFindings& findings, const std::string& bench) {
    const std::string dataset = to_lower(trim(card.dataset));
    const bool random = dataset.empty() || dataset == "random" || dataset == "synthetic" || dataset == "dummy" ||
                        starts_with(dataset, "random_") || ends_with(dataset, "_random");
    // "custom" with no prompt file names nothing the run could read: the contributors' offline
    // benches fed random prompts under that word (the group-4 TPU rows' "dataset: custom  # Custom
    // prompts for inference testing" ran vLLM's examples/tpu_profiling.py, whose prompts are random
    // token ids), and so does this one.
    if (dataset == "custom" && card.launch.dataset_path.empty()) {
        findings.tolerated("workload.data.dataset",
                           fmt::format("\"custom\" names no prompt file (launch.dataset_path): {} feeds random token "
                                       "prompts of input_len tokens, as the contributors' offline benches did",
                                       bench));
        return;
    }
    if (!random) {
        findings.problem("workload.data.dataset",
                         fmt::format("{} is not what the rendered run reads: {} feeds random token prompts of input_len "
                                     "tokens, so the bundle would record a dataset the run never saw; set dataset: random",
                                     enquote(card.dataset), bench));
    }
}

std::string xla_dtype_name(const std::string& precision) {
    const std::string lower = to_lower(precision);
    if (lower.empty() || lower == "bf16" || lower == "bfloat16") {
        return "bfloat16";
    }
    if (lower == "fp32" || lower == "float32") {
        return "float32";
    }
    return {};
}

void plan_framework(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    if (plan.framework == "torchtitan") {
        plan_torchtitan(card, plan, findings);
    } else if (plan.framework == "megatron-lm") {
        plan_megatron(card, plan, findings);
    } else if (plan.framework == "vllm" && !plan.tpu_accelerator_type.empty()) {
        plan_vllm_tpu(card, plan, findings); // the tpu-inference backend: its own options and rules
    } else if (plan.framework == "vllm") {
        plan_vllm(card, plan, findings);
    } else if (plan.framework == "sglang") {
        plan_sglang(card, plan, findings);
    } else if (plan.framework == "maxtext") {
        plan_maxtext(card, plan, findings);
    } else if (plan.framework == "torchxla") {
        plan_torchxla(card, plan, findings);
    }
}

std::string located(const WorkloadCard& card, const std::string& path) {
    return fmt::format("{} ({})", card.document().location(find_node(card.document().root(), path), path), path);
}

} // namespace harness
