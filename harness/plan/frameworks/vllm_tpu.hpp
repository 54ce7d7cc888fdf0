#pragma once
// vLLM on TPU (vllm-tpu image, tpu-inference backend): the card -> `vllm bench latency` rules of
// the TPU templates (templates/vllm/tpu-v6e). make_plan's TPU block calls it; vLLM on GPU is
// plan_vllm's (frameworks/vllm.cpp). Contract: docs/contracts/tpu-inference-v0.27.0.yaml.
#include "plan/frameworks/framework_plan.hpp"

namespace harness {

/// Sets fw.dtype and fw.num_iters_warmup and reports what the TPU benchmark cannot honour.
void plan_vllm_tpu(const WorkloadCard& card, Plan& plan, PlanFindings& findings);

} // namespace harness
