#!/usr/bin/env python3
"""Writes a synthetic but realistically shaped Kineto trace (PyTorch profiler JSON) for the
metrics benchmark and for cross-checking ccl-harness against reference.py.

Usage: gen_trace.py OUT.json [--size-mb N] [--steps N] [--rank R] [--seed S] [--gzip]

The event mix follows a real GPU training trace: per step, host operators (cpu_op) and the CUDA
runtime calls that launch each kernel (cuda_runtime) with flow events (ph s/f) linking them,
compute kernels on one stream and NCCL kernels on two others carrying the NCCL arguments
(In msg nelems, dtype, Collective name...), memcpy/memset, a ProfilerStep#N user annotation and
its GPU mirror; steps grow with the size (10 steps by default, as a profiling window). Kernel names include the traps the CCL-Bench patterns fall into (FlashAttention-3
CollectiveMainloop, CUTLASS collective::CollectiveMma, elementwise "broadcast" functors) and
DeepEP kernels they miss. The file is written as it is generated; size is approximate (whole
steps are written until the target is passed, then the trace is closed).
"""

import argparse
import gzip
import random
import sys

COMPUTE = [
    "void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, false, false, false, true, true, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, false, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, false, true> > >(flash::FlashAttnFwdSm90<...>::Params)",
    "void cutlass::device_kernel<flash::FlashAttnBwdSm90<flash::CollectiveMainloopBwdSm90<2, cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, false, false, false, 2, 2, 1, 2, false> > >(flash::FlashAttnBwdSm90<...>::Params)",
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedCooperative<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, cute::C<256>, cute::C<64> >, cutlass::bfloat16_t> > >(cutlass::gemm::kernel::GemmUniversal<...>::Params)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<...>)",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
    "void at::native::(anonymous namespace)::broadcast_vectorized_kernel<float>(float const*, float*, int)",
    "void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned short, 7168u, 1u, 4u, 1u, 16u, layer_norm::Kernel_traits_base<7168u, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned short> >, true, false, false, false>(layer_norm::FwdParams)",
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int, int, int)",
]
NCCL = [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "allreduce", "BFloat16"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "_allgather_base", "BFloat16"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "_reduce_scatter_base", "Float"),
    ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "all_to_allv", "BFloat16"),
]
DEEPEP = [
    "void deep_ep::internode::dispatch<false, 8, true, 8>(int4*, float*, long*, float*, deep_ep::internode::SourceMeta*, int4 const*, float const*, long const*, float const*, int*, int*, int*, int*, int*, int*, int*, int*, int, int, int, int, int, int, void*, int, void**, int, int, bool)",
    "void deep_ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*, bool const*, int4 const*, float const*, int const*, int const*, deep_ep::internode::SourceMeta const*, int const*, int const*, int const*, int, int, int, int, void*, int, void**, int, int)",
]
CPU_OPS = ["aten::linear", "aten::addmm", "aten::mul", "aten::add_", "aten::copy_", "aten::to", "aten::empty",
           "aten::view", "aten::layer_norm", "aten::native_layer_norm", "autograd::engine::evaluate_function: AddmmBackward0",
           "record_param_comms", "c10d::allreduce_", "aten::_flash_attention_forward"]


class Writer:
    def __init__(self, out, rank, seed):
        self.out = out
        self.rng = random.Random(seed * 1000 + rank)
        self.rank = rank
        self.first = True
        self.written = 0
        self.correlation = 1000
        self.external = 1

    def event(self, text):
        if not self.first:
            text = ",\n" + text
        self.first = False
        self.written += len(text)
        self.out.write(text)

    def x(self, cat, name, ts, dur, pid, tid, args):
        self.event('  {\n    "ph": "X", "cat": "%s", "name": %s, "pid": %s, "tid": %s,\n    "ts": %.3f, "dur": %.3f,\n    "args": {%s}\n  }'
                   % (cat, json_string(name), pid, tid, ts, dur, args))

    def flow(self, ph, ts, pid, tid, ident):
        self.event('  {\n    "ph": "%s", "id": %d, "pid": %s, "tid": %s, "ts": %.3f,\n    "cat": "ac2g", "name": "ac2g"%s\n  }'
                   % (ph, ident, pid, tid, ts, ', "bp": "e"' if ph == "f" else ""))

    def kernel(self, name, ts, dur, stream, host_ts, extra=""):
        self.correlation += 1
        corr = self.correlation
        self.x("cuda_runtime", "cudaLaunchKernel", host_ts, 4.2, self.rank + 1000, 11,
               '\n      "External id": %d, "cbid": 211, "correlation": %d' % (self.external, corr))
        self.flow("s", host_ts, self.rank + 1000, 11, corr)
        grid = self.rng.choice(["[132, 1, 1]", "[1024, 1, 1]", "[4, 8, 1]"])
        self.x("kernel", name, ts, dur, self.rank, stream,
               '\n      "External id": %d, "queued": 0, "device": %d, "context": 1, "stream": %d, "correlation": %d,'
               '\n      "registers per thread": 168, "shared memory": 232448, "blocks per SM": 1.0, "warps per SM": 12.0,'
               '\n      "grid": %s, "block": [384, 1, 1], "est. achieved occupancy %%": 19%s'
               % (self.external, self.rank % 8, stream, corr, grid, extra))
        self.flow("f", ts, self.rank, stream, corr)
        self.external += 1

    def step(self, number, t0, until):
        """One training step starting at t0 (µs), layers until `until` bytes are written; returns its end."""
        rng = self.rng
        host = t0 + 5.0
        gpu = t0 + 40.0
        comm_gpu = t0 + 300.0
        layer = -1
        while layer < 47 or self.written < until:
            layer += 1
            for _ in range(3):
                op = rng.choice(CPU_OPS)
                dur = rng.uniform(5, 60)
                self.x("cpu_op", op, host, dur, self.rank + 1000, 11,
                       '\n      "External id": %d, "Record function id": 0, "Sequence number": %d, "Fwd thread id": 0, "Ev Idx": %d'
                       % (self.external, layer, self.external))
                host += dur * 0.4
            for _ in range(5):
                name = rng.choice(COMPUTE)
                dur = rng.uniform(8, 900)
                self.kernel(name, gpu, dur, 7, host)
                host += rng.uniform(3, 12)
                gpu += dur + rng.uniform(0.5, 4)
            if layer % 3 == 0:
                name, coll, dtype = rng.choice(NCCL)
                nelems = rng.choice([4194304, 16777216, 1048576, 262144])
                dur = rng.uniform(50, 2500)
                comm_gpu = max(comm_gpu, gpu - rng.uniform(0, 800))
                self.kernel(name, comm_gpu, dur, 20 + 4 * (layer % 2), host,
                            ',\n      "In msg nelems": %d, "Out msg nelems": %d, "Group size": 8, "dtype": "%s",'
                            '\n      "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",'
                            ' "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]",'
                            ' "Collective name": "%s"' % (nelems, nelems, dtype, coll))
                comm_gpu += dur + rng.uniform(1, 30)
            if layer % 8 == 5:
                name = rng.choice(DEEPEP)
                dur = rng.uniform(100, 1200)
                self.kernel(name, gpu - dur * 0.5, dur, 24, host)
            if layer % 6 == 0:
                self.x("gpu_memcpy", "Memcpy DtoD (Device -> Device)", gpu, 3.5, self.rank, 7,
                       '\n      "device": %d, "context": 1, "stream": 7, "correlation": %d, "bytes": 1048576, "memory bandwidth (GB/s)": 299.6'
                       % (self.rank % 8, self.correlation))
        end = max(gpu, comm_gpu) + 20.0
        self.x("user_annotation", "ProfilerStep#%d" % number, t0, end - t0, self.rank + 1000, 11,
               '\n      "External id": %d, "Record function id": 0, "Ev Idx": %d' % (self.external, self.external))
        self.x("gpu_user_annotation", "ProfilerStep#%d" % number, t0 + 30, end - t0 - 30, self.rank, 7,
               '\n      "External id": %d' % self.external)
        self.event('  {\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": %.3f\n  }' % t0)
        return end + 15.0


def json_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--size-mb", type=float, default=1100.0)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    opener = gzip.open if args.gzip else open
    target = args.size_mb * 1e6
    with opener(args.out, "wt", encoding="utf-8") as raw:
        out = raw
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "NVIDIA H100 80GB HBM3", '
                  '"totalGlobalMem": 85029158912,\n      "computeMajor": 9, "computeMinor": 0, "numSms": 132\n    }\n  ],\n')
        out.write('  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 8, "pg_count": 1},\n' % args.rank)
        out.write('  "traceEvents": [\n')
        writer = Writer(out, args.rank, args.seed)
        writer.event('  {\n    "name": "process_name", "ph": "M", "ts": 0, "pid": %d, "tid": 0,\n    "args": {"name": "python3"}\n  }' % (args.rank + 1000))
        writer.event('  {\n    "name": "process_name", "ph": "M", "ts": 0, "pid": %d, "tid": 0,\n    "args": {"name": "GPU %d"}\n  }' % (args.rank, args.rank))
        t = 1700000000000.0 + args.rank * 3.7
        # A profiling window of a few steps, as traces are collected (warm-up excluded): each step
        # grows with the target size, like a bigger model's step, rather than adding steps.
        for number in range(1, args.steps + 1):
            t = writer.step(number, t, target * number / args.steps)
        out.write('\n  ],\n  "traceName": "rank%d.pt.trace.json"\n}\n' % args.rank)
    print("wrote %s: %d steps, %.1f MB of events" % (args.out, args.steps, writer.written / 1e6), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
