# shellcheck shell=bash
# Environment for tiny-ddp on local, written by ccl-harness render.
export OMP_NUM_THREADS=1
export GLOO_SOCKET_IFNAME=lo
