#pragma once
// vLLM online serving on GPU: `vllm serve` in the background and `vllm bench serve` against it,
// as 28 upstream CCL-Bench rows ran it (server.sh + client.sh). plan_vllm picks it over the
// offline `vllm bench latency` when the card says so; the rules cite
// docs/contracts/vllm-v0.19.0.yaml (its serve: and bench_serve: sections).
#include "plan/frameworks/framework_plan.hpp"

#include <string>

namespace harness {

/// Why the card runs as a server and a client (workload.model.phase serving, or a dataset only
/// `vllm bench serve` reads), with the field's location; empty for the offline bench.
std::string vllm_serve_reason(const WorkloadCard& card);

/// Sets fw.serve and the server's and client's values (fw.data_parallel_size, fw.dataset_name,
/// fw.num_prompts...) and reports what the pair cannot run, naming the card field.
void plan_vllm_serve(const WorkloadCard& card, Plan& plan, PlanFindings& findings, const std::string& reason);

/// ep checked against vLLM's rule (1, or tp·dp with --enable-expert-parallel; a MoE model only)
/// and fw.expert_parallel set: one rule for the offline bench and the server (vllm.cpp).
void plan_vllm_expert_parallel(const WorkloadCard& card, Plan& plan, PlanFindings& findings, long long dp);

} // namespace harness
