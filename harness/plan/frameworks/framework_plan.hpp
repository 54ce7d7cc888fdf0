#pragma once
// Framework planning: how the card's description of a run (model, precision, dataset, degrees,
// window) becomes one framework's own configuration, and which fields a framework cannot honour.
// One file per framework (harness/frameworks/<name>.cpp); each cites the framework source, at
// the ref the reference cards pin, that its rules come from (frameworks/<name>/<ref>.yaml is the
// contract).
#include "plan/plan.hpp"

#include <string>

namespace harness {

/// The card section the parallel degrees live in: problems about a degree name "<this>ep".
inline constexpr const char* k_parallel_field = "Model-executor.model_plan_parallelization.";

/// Reports a runnability problem about a card field at the severity make_plan was asked for
/// (an error with --strict, else a warning).
class PlanFindings {
public:
    virtual ~PlanFindings() = default;
    virtual void problem(const std::string& field, const std::string& message) = 0;
    /// What the run does where the card was loose and the harness read it as its contributor ran
    /// it: a warning at the field's line, even under --strict (it is not a problem to fix).
    virtual void tolerated(const std::string& field, const std::string& message) = 0;
};

/// Sets one framework value (templates read it as {{fw.KEY}}; "true"/"false" become flags usable
/// as {{#fw.KEY}} sections) and records why, for explain and plan.json.
void set_framework_value(Plan& plan, const std::string& key, const std::string& value, const std::string& because);

/// The card's precision as torch's dtype name, the spelling vLLM's and SGLang's --dtype take:
/// bf16/bfloat16 -> bfloat16, fp16/float16/half -> float16, fp32/float32 -> float32; "auto" when
/// the card names none; empty for anything else (fp8, int4...: a problem for the caller to report).
std::string torch_dtype_name(const std::string& precision);

/// vLLM's and SGLang's --dtype: fw.dtype from torch_dtype_name, or the precision reported as not
/// supported for `framework` when torch has no name for it.
void set_torch_dtype(Plan& plan, PlanFindings& findings, const std::string& framework);

/// vLLM's `bench latency` and SGLang's `bench_one_batch` run random token prompts: a card that
/// names another dataset (wikitext, ShareGPT, custom) describes a run that did not happen, which
/// is a problem at workload.data.dataset. `bench` names the benchmark in the message.
void check_random_prompts(const WorkloadCard& card, PlanFindings& findings, const std::string& bench);

/// A rendered server (vllm serve, sglang.launch_server) runs tp × pp × dp on one node: more nodes
/// are a problem at total_count (`multi_node` names the server's options that would span them),
/// and cp > 1 one at cp. `server` names it in the messages.
void check_one_node_server(const WorkloadCard& card, const Plan& plan, PlanFindings& findings, const std::string& server,
                           const std::string& multi_node);

/// The card's precision as the activation dtype a JAX/XLA run on TPU takes (any case): bf16 or
/// none -> bfloat16, fp32 -> float32; empty for anything else (a problem for the caller).
std::string xla_dtype_name(const std::string& precision);

/// Dispatches to the framework's own planning step (no-op for a framework without one).
void plan_framework(const WorkloadCard& card, Plan& plan, PlanFindings& findings);

// One per framework, each in its own file.
void plan_torchtitan(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_megatron(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_vllm(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_sglang(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_maxtext(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_torchxla(const WorkloadCard& card, Plan& plan, PlanFindings& findings);

/// "FILE:LINE:COL (PATH)": where the card says `path`, as a plan value's reason.
std::string located(const WorkloadCard& card, const std::string& path);

} // namespace harness
