// SGLang's `python -m sglang.bench_one_batch` (docs/contracts/sglang-<ref>.yaml): how the card's
// run becomes the bench's options, what it traces, and what it cannot do. A serving card goes to
// sglang_serve.cpp instead.
#include "plan/frameworks/framework_plan.hpp"
#include "plan/frameworks/sglang_serve.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

/// DeepSeek-MoE v1 (DeepseekForCausalLM, srt/models/deepseek.py): its DeepseekMoE shards every
/// expert over TP and never reads ep_size.
bool ignores_ep_size(const WorkloadCard& card, const Plan& plan) {
    const auto has = [](const std::string& text, const char* what) { return text.find(what) != std::string::npos; };
    return has(plan.model_family, "deepseek-moe") || has(plan.model, "deepseek-moe") || has(card.hf_url, "deepseek-moe");
}

/// Which --profile-stage/--profile-start-step/--profile-steps trace steps W+1..W+A of the
/// benchmark batch, where step 1 is the prefill and step k+2 decode step k.
void plan_window(Plan& plan, PlanFindings& findings) {
    const long long w = plan.profile.wait + plan.profile.warmup;
    const long long a = plan.profile.active;
    const long long decodes = plan.output_len > 0 ? plan.output_len - 1 : 0;
    if (w == 0) {
        if (a != 1) {
            findings.problem("launch.profile.active",
                             fmt::format("active {} from the prefill is not supported for sglang: bench_one_batch traces "
                                         "the prefill and the decode steps into two files; use warmup >= 1 to trace "
                                         "decode steps only, or active 1 for the prefill alone",
                                         a));
        }
        set_framework_value(plan, "profile_stage", "prefill", "wait + warmup 0: step 1 is the prefill");
        set_framework_value(plan, "profile_decode", "false", "the prefill alone");
        return;
    }
    if (plan.output_len > 0 && w - 1 + a > decodes) {
        findings.problem("launch.profile.warmup", fmt::format("steps {}..{} run past the batch's {} decode steps (output_len {} - 1)",
                                                              w + 1, w + a, decodes, plan.output_len));
    }
    set_framework_value(plan, "profile_stage", "decode", "wait + warmup >= 1: the window is decode steps only");
    set_framework_value(plan, "profile_decode", "true", "decode steps");
    set_framework_value(plan, "profile_start_step", std::to_string(w - 1),
                        "decode step W-1 (0-indexed) is step W+1 of the batch: step 1 is the prefill");
    set_framework_value(plan, "profile_steps", std::to_string(a), "launch.profile.active");
}

} // namespace

void plan_sglang_expert_parallel(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    // Expert parallelism lives inside the TP group, in the bench and the server alike:
    // moe_ep_rank = tp_rank // (tp_size // ep_size).
    const Parallelism& par = plan.parallelism;
    if (card.has_executor && par.ep > 1 && par.tp % par.ep != 0) {
        findings.problem(std::string(k_parallel_field) + "ep",
                         fmt::format("ep {} does not divide tp {}: sglang's expert groups split the TP group", par.ep, par.tp));
    }
    if (card.has_executor && par.ep > 1 && ignores_ep_size(card, plan)) {
        findings.problem(std::string(k_parallel_field) + "ep",
                         fmt::format("ep {} is not what sglang runs for DeepSeek-MoE (v1): its DeepseekMoE shards "
                                     "every expert over tp and ignores --ep-size, so the run is ep 1",
                                     par.ep));
    }
    const bool expert_parallel = par.ep > 1 && !ignores_ep_size(card, plan);
    set_framework_value(plan, "expert_parallel", expert_parallel ? "true" : "false",
                        expert_parallel ? "--ep-size: experts split across the TP group" : "no --ep-size");
}

void plan_sglang(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    if (const std::string reason = sglang_serve_reason(card); !reason.empty()) {
        plan_sglang_serve(card, plan, findings, reason);
        return;
    }
    if (!plan.phase.empty() && plan.phase == "training") {
        findings.problem("workload.model.phase", "training is not supported for sglang (bench_one_batch runs inference)");
    }
    set_torch_dtype(plan, findings, "sglang");
    check_random_prompts(card, findings, "sglang bench_one_batch");

    // bench_one_batch runs tp processes on one node (pp fixed at 1 in load_model).
    const Parallelism& par = plan.parallelism;
    const long long dp = par.dp_replicate * par.dp_shard;
    if (card.has_executor && (dp > 1 || par.pp > 1 || par.cp > 1)) {
        const char* field = dp > 1 ? "dp_replicate" : par.pp > 1 ? "pp" : "cp";
        findings.problem(std::string(k_parallel_field) + field,
                         fmt::format("dp {}, pp {}, cp {} is not supported for sglang bench_one_batch: it runs tp "
                                     "ranks only (pp_size 1 in load_model); a serving card (workload.model.phase: "
                                     "serving) runs sglang.launch_server, which takes --pp-size and --dp-size",
                                     dp, par.pp, par.cp));
    }
    plan_sglang_expert_parallel(card, plan, findings);

    if (plan.traces("torch_profiler")) {
        plan_window(plan, findings);
        // latency_test passes `bench_args.profile if tp_rank == 0 else None`: no option traces
        // the other ranks, so the run's Kineto traces are rank 0's.
        set_framework_value(plan, "torch_profiler_ranks", "0",
                            "bench_one_batch profiles TP rank 0 only (latency_test: profile if tp_rank == 0)");
    }
    plan.traced_steps = 0; // plain torch.profiler without a schedule: no ProfilerStep#N
}

} // namespace harness
