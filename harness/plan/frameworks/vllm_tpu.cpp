#include "plan/frameworks/vllm_tpu.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

void plan_vllm_tpu(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    // --dtype is vLLM's EngineArgs option; auto would take the checkpoint's, which a card stating
    // its precision must not leave to chance.
    const std::string dtype = xla_dtype_name(plan.precision);
    if (!dtype.empty()) {
        set_framework_value(plan, "dtype", dtype,
                            fmt::format("precision {} -> --dtype {}", dtype == "float32" ? "fp32" : "bf16", dtype));
    } else {
        findings.problem(
            "workload.model.precision",
            fmt::format("{} is not supported for vllm on TPU: the rendered run passes --dtype bfloat16 or float32", plan.precision));
        set_framework_value(plan, "dtype", "bfloat16", "precision " + plan.precision + " is not supported: bfloat16");
    }
    // vllm bench latency feeds random token ids (dummy prompts); no dataset option exists.
    check_random_prompts(card, findings, "vllm bench latency");
    // bench latency runs --num-iters-warmup batches, then with --profile one profiled batch and
    // returns: the window is W+1..W+1, so active must be 1 (contract: window).
    const long long start = plan.profile.wait + plan.profile.warmup;
    set_framework_value(plan, "num_iters_warmup", std::to_string(start), "profile wait + warmup: batches before the profiled one");
    if (plan.traces("xplane") && plan.profile.active != 1) {
        findings.problem("launch.profile.active",
                         fmt::format("active {}: vllm bench latency --profile profiles exactly one batch after the warm-up ones",
                                     plan.profile.active));
    }
    // tpu-inference profiles rank 0 only (worker/tpu_worker.py:235-241): one XPlane per run.
    plan.traced_steps = 0;
    plan.origins["profile.traced_steps"] = Origin{
        Origin::Kind::derived, "", "0: tpu-inference writes XPlane traces, which carry no ProfilerStep markers to count"};
}

} // namespace harness
