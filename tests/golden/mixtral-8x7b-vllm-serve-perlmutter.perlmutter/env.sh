# shellcheck shell=bash
# Environment for mixtral-8x7b-vllm-serve-perlmutter on perlmutter, written by ccl-harness render.
export NCCL_NET='AWS Libfabric'
export NCCL_SOCKET_IFNAME=hsn
export NCCL_NET_GDR_LEVEL=PHB
export NCCL_CROSS_NIC=1
export FI_CXI_DISABLE_HOST_REGISTER=1
export FI_MR_CACHE_MONITOR=userfaultfd
export MPICH_GPU_SUPPORT_ENABLED=0
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
