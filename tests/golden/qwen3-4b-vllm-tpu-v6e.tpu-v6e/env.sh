# shellcheck shell=bash
# Environment for qwen3-4b-vllm-tpu-v6e on tpu-v6e, written by ccl-harness render.
export JAX_PLATFORMS=''
export PJRT_DEVICE=TPU
