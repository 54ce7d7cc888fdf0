// vLLM's `vllm bench latency` (docs/contracts/vllm-v0.19.0.yaml): how the card's run becomes the
// bench's options, and what the bench cannot do. A serving card goes to vllm_serve.cpp instead.
#include "plan/frameworks/framework_plan.hpp"
#include "plan/frameworks/vllm_serve.hpp"

#include <fmt/format.h>

namespace harness {

void plan_vllm_expert_parallel(const WorkloadCard& card, Plan& plan, PlanFindings& findings, long long dp) {
    // Expert parallelism is a switch over the tp × dp group (ep size = tp·dp with
    // --enable-expert-parallel, else 1), not a degree of its own: the same in bench and serve.
    const Parallelism& par = plan.parallelism;
    const bool expert_parallel = par.ep > 1;
    if (card.has_executor && expert_parallel && par.ep != par.tp * dp) {
        findings.problem(std::string(k_parallel_field) + "ep",
                         fmt::format("ep {} is not what vllm runs: --enable-expert-parallel spreads the experts over "
                                     "the tp × dp group, so ep is 1 or tp·dp = {}",
                                     par.ep, par.tp * dp));
    }
    if (card.has_executor && expert_parallel && !card.moe) {
        findings.problem(std::string(k_parallel_field) + "ep",
                         fmt::format("ep {} on a model the card says is not MoE (workload.model.moe: false)", par.ep));
    }
    set_framework_value(plan, "expert_parallel", expert_parallel ? "true" : "false",
                        expert_parallel ? "--enable-expert-parallel: vllm's ep is tp·dp" : "ep 1: experts tensor-sharded");
}

void plan_vllm(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    if (const std::string reason = vllm_serve_reason(card); !reason.empty()) {
        plan_vllm_serve(card, plan, findings, reason);
        return;
    }
    if (!plan.phase.empty() && plan.phase == "training") {
        findings.problem("workload.model.phase", "training is not supported for vllm (vllm bench latency runs inference)");
    }
    set_torch_dtype(plan, findings, "vllm");
    check_random_prompts(card, findings, "vllm bench latency");

    // One offline engine: tp × pp GPU workers. Expert parallelism is a switch over the tp × dp
    // group (ep size = tp·dp with --enable-expert-parallel, else 1), not a degree of its own.
    const Parallelism& par = plan.parallelism;
    const long long dp = par.dp_replicate * par.dp_shard;
    if (card.has_executor && dp > 1) {
        findings.problem(std::string(k_parallel_field) + "dp_replicate",
                         fmt::format("data parallel {} is not supported for vllm bench latency: it runs one engine "
                                     "(tp × pp workers); data parallelism needs one engine per replica",
                                     dp));
    }
    if (card.has_executor && par.cp > 1) {
        findings.problem(std::string(k_parallel_field) + "cp",
                         fmt::format("cp {} is not supported for vllm: the rendered bench runs tp × pp only", par.cp));
    }
    plan_vllm_expert_parallel(card, plan, findings, dp);

    // The bench's step is one batch: --num-iters-warmup untraced batches, then --profile traces
    // exactly one (latency.py main()). So wait + warmup = W warm-up batches, active must be 1.
    const long long warmup = plan.profile.wait + plan.profile.warmup;
    set_framework_value(plan, "num_iters_warmup", std::to_string(warmup),
                        "launch.profile wait + warmup: the batches before the traced one");
    if (plan.traces("torch_profiler") && plan.profile.active != 1) {
        findings.problem("launch.profile.active",
                         fmt::format("active {} is not supported for vllm bench latency: --profile traces exactly "
                                     "one batch (batch wait + warmup + 1)",
                                     plan.profile.active));
    }
    plan.traced_steps = 0; // no ProfilerStep#N: each engine step is an execute_context_* annotation
}

} // namespace harness
