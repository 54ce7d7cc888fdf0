#include "plan/trace_expectation.hpp"

namespace harness {

TraceExpectation trace_expectation(const Plan& plan) {
    TraceExpectation expect;
    expect.world_size = plan.world_size;
    expect.backend = plan.framework == "torch-ddp" || plan.xpu_model == "cpu" ? "gloo" : "nccl";
    // Serving engines (vLLM, SGLang) write Kineto traces per worker under names without a rank:
    // each is named by its distributedInfo rank like the others. Their nsys report covers the one
    // engine process and the workers it forks, so it is not per rank. SGLang's bench profiles
    // rank 0 only (framework_config torch_profiler_ranks, plan/frameworks/sglang.cpp).
    expect.serving = plan.framework == "vllm" || plan.framework == "sglang";
    expect.per_rank = expect.serving || plan.framework == "torch-ddp" || plan.framework == "torchtitan" ||
                      plan.framework == "megatron-lm";
    const auto ranks_entry = plan.framework_config.find("torch_profiler_ranks");
    expect.rank0_only = ranks_entry != plan.framework_config.end() && ranks_entry->second == "0";
    expect.torch_profiler = plan.traces("torch_profiler");
    expect.nsys = plan.traces("nsys");
    expect.xplane = plan.traces("xplane");
    return expect;
}

} // namespace harness
