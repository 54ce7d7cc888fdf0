#!/usr/bin/python3
"""Writes a completed ccl-harness run directory whose traces are big, realistic Kineto JSON.

Each rank's trace is PyTorch profiler output as a DDP training step produces it: cpu_op,
cuda_runtime, kernel (compute and NCCL), memcpy, ac2g flow and ProfilerStep#N events with
Kineto's fields. A few distinct 8 MB blocks of events are generated, then repeated with their
timestamps and ids moved on, so gigabytes are written at disk speed while any 2 MB window
(what zstd -3 sees) still looks like a real trace.
"""
import argparse
import json
import os
import random

KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "ampere_sgemm_128x64_tn",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, float, 4>)",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>, true, false>",
]
NCCL = [
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
]
OPS = ["aten::mm", "aten::addmm", "aten::add_", "aten::relu", "aten::embedding", "aten::_softmax",
       "aten::layer_norm", "aten::native_layer_norm", "aten::copy_", "aten::empty", "aten::view",
       "autograd::engine::evaluate_function: AddmmBackward0", "Optimizer.step#AdamW.step"]


def block(rng, rank, pid, first_step, steps):
    """About 8 MB of events for `steps` training steps; returns (text, events)."""
    out = []
    ts = 1700000000000.0 + rank * 0.731
    ext = corr = 1000 * first_step
    for step in range(first_step, first_step + steps):
        step_start = ts
        body = []
        for _ in range(rng.randint(180, 220)):
            ext += 1
            corr += 1
            op = rng.choice(OPS)
            dur = round(rng.uniform(3, 400), 3)
            dims = [[rng.choice([8, 32, 64, 128, 4096]), rng.choice([64, 128, 1024, 4096])] for _ in range(rng.randint(1, 3))]
            body.append(json.dumps({
                "ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": pid, "ts": round(ts, 3), "dur": dur,
                "args": {"External id": ext, "Record function id": 0, "Ev Idx": ext - 1, "Sequence number": ext // 3,
                         "Fwd thread id": 0, "Input Dims": dims, "Input type": ["float"] * len(dims),
                         "Input Strides": [[d[1], 1] for d in dims], "Input names": [""] * len(dims),
                         "Concrete Inputs": [""] * len(dims)}}))
            launch = round(ts + dur * 0.4, 3)
            body.append(json.dumps({
                "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid, "ts": launch,
                "dur": round(rng.uniform(2, 9), 3), "args": {"External id": ext, "cbid": 211, "correlation": corr}}))
            comm = rng.random() < 0.08
            kstart = round(launch + rng.uniform(5, 40), 3)
            name = rng.choice(NCCL) if comm else rng.choice(KERNELS)
            stream = 20 if comm else 7
            body.append(json.dumps({
                "ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": stream, "ts": kstart,
                "dur": round(rng.uniform(1, 900), 3),
                "args": {"External id": ext, "queued": 0, "device": rank, "context": 1, "stream": stream,
                         "correlation": corr, "registers per thread": rng.choice([32, 64, 96, 128, 255]),
                         "shared memory": rng.choice([0, 4096, 49152]), "blocks per SM": round(rng.uniform(0.1, 8), 6),
                         "warps per SM": round(rng.uniform(1, 64), 6), "grid": [rng.randint(1, 4096), 1, 1],
                         "block": [rng.choice([128, 256, 512, 640]), 1, 1],
                         "est. achieved occupancy %": rng.randint(0, 100)}}))
            body.append(json.dumps({"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": launch, "cat": "ac2g", "name": "ac2g"}))
            body.append(json.dumps({"ph": "f", "id": corr, "pid": rank, "tid": stream, "ts": kstart, "cat": "ac2g",
                                    "name": "ac2g", "bp": "e"}))
            ts += dur + rng.uniform(0.5, 20)
        out.append(json.dumps({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid,
                               "tid": pid, "ts": round(step_start, 3), "dur": round(ts - step_start, 3),
                               "args": {"External id": ext, "Record function id": 0, "Ev Idx": ext}}))
        out.extend(body)
    return ",\n".join(out), len(out)


def write_trace(path, rank, size_bytes, seed):
    rng = random.Random(seed * 1000 + rank)
    pid = 4000 + rank
    blocks = []
    step = 1
    while sum(len(b[0]) for b in blocks) < 32 << 20:  # four or so distinct 8 MB blocks
        text, events = block(rng, rank, pid, step, 40)
        blocks.append((text, events))
        step += 40
    header = json.dumps({"schemaVersion": 1, "deviceProperties": [{
        "id": rank, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85024112640, "computeMajor": 9,
        "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 8}, "record_shapes": 1,
        "with_stack": 0, "trace_id": f"{seed:08X}{rank:08X}"})[:-1]
    written = 0
    events = 0
    repeat = 0
    with open(path, "w", buffering=1 << 22) as out:
        out.write(header + ', "traceEvents": [\n')
        while written < size_bytes:
            text, count = blocks[repeat % len(blocks)]
            # Move the block on in time so that repeats differ where real traces differ.
            shift = f'"ts": 17{repeat % 100:02d}'
            text = text.replace('"ts": 1700', shift)
            if repeat:
                out.write(",\n")
            out.write(text)
            written += len(text) + 2
            events += count
            repeat += 1
        out.write('\n], "traceName": "' + os.path.basename(path) + '", "displayTimeUnit": "ms"}\n')
    return events


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir")
    parser.add_argument("--total-mb", type=int, default=2048, help="trace bytes over all ranks (default 2048)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    run_id = os.path.basename(os.path.normpath(args.run_dir))
    for sub in ("traces", "logs", "rendered"):
        os.makedirs(os.path.join(args.run_dir, sub), exist_ok=True)
    per_rank = (args.total_mb << 20) // args.ranks
    pids = []
    for rank in range(args.ranks):  # one process per rank: generation is CPU-bound
        pid = os.fork()
        if pid == 0:
            events = write_trace(os.path.join(args.run_dir, "traces", f"kineto_trace_{rank}.json"), rank, per_rank, args.seed)
            with open(os.path.join(args.run_dir, "logs", f"rank_{rank}.log"), "w") as log:
                log.write(f"rank={rank} events={events}\n" * 2000)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"generating a trace failed (status {status})")
    events = 0
    size = 0
    for rank in range(args.ranks):
        with open(os.path.join(args.run_dir, "logs", f"rank_{rank}.log")) as log:
            events += int(log.readline().split("events=")[1])
        size += os.path.getsize(os.path.join(args.run_dir, "traces", f"kineto_trace_{rank}.json"))
    print(f"traces: {args.ranks} ranks, {size} bytes, {events} events")

    card = f"""# generated by bench/pack/gen_run.py
version: 1
description: pack benchmark
hf_url:
trace_url:  # filled by pack
workload:
  hardware:
    xpu_spec:
      type: GPU
      model: nvidia_h100
      total_count: {args.ranks}
metric_source:
  traces:
    - json
  metrics_specific_trace:
    - kernel_trace
"""
    files = {
        "card.yaml": card,
        "rendered/card.yaml": card,
        "rendered/launch.sh": "#!/bin/bash\nexec python3 train.py\n",
        "rendered/env.sh": "export OMP_NUM_THREADS=1\n",
        "rendered/plan.json": "{}\n",
        "plan.json": "{}\n",
        "provenance.json": json.dumps({"format": 1}) + "\n",
        "run.json": json.dumps({"format": 1, "run_id": run_id, "state": "completed", "reason": "",
                                "traces": [f"kineto_trace_{r}.json" for r in range(args.ranks)]}, indent=2) + "\n",
    }
    for name, text in files.items():
        with open(os.path.join(args.run_dir, name), "w") as out:
            out.write(text)
    os.chmod(os.path.join(args.run_dir, "rendered", "launch.sh"), 0o755)


if __name__ == "__main__":
    main()
