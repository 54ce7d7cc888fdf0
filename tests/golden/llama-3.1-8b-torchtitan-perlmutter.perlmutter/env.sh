# shellcheck shell=bash
# Environment for llama-3.1-8b-torchtitan-perlmutter on perlmutter, written by ccl-harness render.
export NCCL_NET='AWS Libfabric'
export NCCL_SOCKET_IFNAME=hsn
export NCCL_NET_GDR_LEVEL=PHB
export NCCL_CROSS_NIC=1
export FI_CXI_DISABLE_HOST_REGISTER=1
export FI_MR_CACHE_MONITOR=userfaultfd
export MPICH_GPU_SUPPORT_ENABLED=0
export TORCH_NCCL_ASYNC_ERROR_HANDLING=3
