#pragma once
// SGLang online serving on GPU: `python3 -m sglang.launch_server` in the background and
// `python3 -m sglang.bench_serving --backend sglang` against it, as the upstream CCL-Bench group 6
// rows ran SGLang. plan_sglang picks it over the offline `sglang.bench_one_batch` when the card
// says so; the rules cite docs/contracts/sglang-<ref>.yaml (its launch_server: and bench_serving:).
#include "plan/frameworks/framework_plan.hpp"

#include <string>

namespace harness {

/// Why the card runs as a server and a client (workload.model.phase serving, or
/// metric_source.metrics_specific_trace naming bench_serving's JSONL), with the field's location;
/// empty for bench_one_batch.
std::string sglang_serve_reason(const WorkloadCard& card);

/// Sets fw.serve and the server's and client's values (fw.dp_size, fw.num_prompts,
/// fw.max_running_requests...) and reports what the pair cannot run, naming the card field.
void plan_sglang_serve(const WorkloadCard& card, Plan& plan, PlanFindings& findings, const std::string& reason);

/// ep checked against SGLang's rule (ep divides tp; DeepSeek-MoE v1 ignores it) and
/// fw.expert_parallel set: one rule for bench_one_batch and the server (sglang.cpp).
void plan_sglang_expert_parallel(const WorkloadCard& card, Plan& plan, PlanFindings& findings);

} // namespace harness
