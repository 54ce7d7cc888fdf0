#pragma once
// A small valid card in CCL-Bench format; tests edit copies of it line by line.
#include <stdexcept>
#include <string>

namespace harness::test {

inline const char* k_card = R"(version: 1
description: Llama 3.1 8B training with TorchTitan on 16 A100s.
hf_url: https://huggingface.co/meta-llama/Llama-3.1-8B
trace_url:
contributor: Test Person
contact: test@example.org
workload:
  model:
    phase: training
    moe: false
    granularity: model_fwd_bwd_pass
    model_family: llama-3.1-8b
    precision: bf16
    epochs: 1
    iteration: 20
  data:
    batch_size: 16
    seq_len: 8192
    dataset: c4
  hardware:
    network_topo:
      topology: slingshot
      bandwidth_gbps: [200, 2400]
    xpu_spec:
      type: GPU
      model: nvidia_a100
      total_count: 16
      count_per_node: 4
    driver_version: cuda_12.4
Model-executor:
  framework:
    name: torchtitan
    compiler_tool_selection: plain_pytorch
  model_plan_parallelization:
    dp_replicate: 1
    dp_shard: 4
    tp: 4
    pp: 1
    cp: 1
  communication_library:
    name: NCCL
    env:
      NCCL_DEBUG: INFO
  protocol_selection: [rocev2, p2p]
metric_source:
  traces: [json]
  metrics_specific_trace: [kernel_trace]
launch:
  account: m4999
  container:
    image: nvcr.io/nvidia/pytorch@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
)";

/// The fixture with the first occurrence of `from` replaced by `to`.
inline std::string card_with(const std::string& from, const std::string& to) {
    std::string text = k_card;
    const auto pos = text.find(from);
    if (pos == std::string::npos) {
        throw std::logic_error("fixture has no " + from);
    }
    return text.replace(pos, from.size(), to);
}

} // namespace harness::test
