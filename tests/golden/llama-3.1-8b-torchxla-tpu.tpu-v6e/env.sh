# shellcheck shell=bash
# Environment for llama-3.1-8b-torchxla-tpu on tpu-v6e, written by ccl-harness render.
export PJRT_DEVICE=TPU
export TORCH_XLA_VERSION=2.8.0
