# shellcheck shell=bash
# Environment for deepseek-v2-16b-maxtext-tpu-v6e on tpu-v6e, written by ccl-harness render.
export JAX_PLATFORMS=tpu
export JAX_VERSION=0.6.1
export LIBTPU_INIT_ARGS='--xla_tpu_scoped_vmem_limit_kib=81920 --xla_tpu_enable_async_collective_fusion=true --xla_tpu_enable_async_collective_fusion_fuse_all_gather=true --xla_tpu_enable_async_collective_fusion_multiple_steps=true --xla_tpu_overlap_compute_collective_tc=true --xla_enable_async_all_gather=true'
