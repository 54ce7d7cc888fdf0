#!/usr/bin/env python3
"""tiny-ddp: a small model trained with DistributedDataParallel over gloo on CPU, traced with
torch.profiler. Writes <trace-dir>/kineto_trace_<rank>.json and one JSON summary line per rank.

Rank/world come from torchrun-style env (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT),
else from Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), else a single process.
"""
import argparse
import json
import math
import os
import re
import signal
import sys
import threading
import time

# Block SIGTERM/SIGINT before torch starts any thread: every thread inherits the mask, so only the
# watcher below receives them. A Python handler would never run while the main thread is stuck in
# a gloo collective waiting for a dead peer.
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
_GRACE_S = 5.0
_stop = threading.Event()
_stop_signum = [0]


def _signal_watcher():
    signum = signal.sigwait(_STOP_SIGNALS)
    _stop_signum[0] = signum
    _stop.set()
    print(f"tiny-ddp: got {signal.Signals(signum).name}, stopping", file=sys.stderr, flush=True)
    time.sleep(_GRACE_S)
    os._exit(128 + signum)  # main thread did not unwind in time (e.g. blocked in a collective)


signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
threading.Thread(target=_signal_watcher, name="signal-watcher", daemon=True).start()

import datetime  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile, schedule  # noqa: E402

VOCAB = 1024


class Stopped(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die(message)


def die(message):
    print(f"train.py: error: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def int_at_least(lo):
    def conv(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {value}")
        return value
    return conv


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def parse_args():
    p = Parser(description="Tiny DDP (gloo, CPU) training workload traced with torch.profiler.")
    p.add_argument("--steps", type=int_at_least(1), default=12, help="total optimizer steps")
    p.add_argument("--wait", type=int_at_least(0), default=1, help="profiler wait steps")
    p.add_argument("--warmup", type=int_at_least(0), default=2, help="profiler warm-up steps")
    p.add_argument("--active", type=int_at_least(1), default=5, help="profiled steps")
    p.add_argument("--trace-dir", default="./traces")
    p.add_argument("--batch-size", type=int_at_least(1), default=8, help="global batch size")
    p.add_argument("--seq-len", type=int_at_least(1), default=32)
    p.add_argument("--hidden", type=int_at_least(1), default=64)
    p.add_argument("--layers", type=int_at_least(1), default=2)
    p.add_argument("--seed", type=int_at_least(0), default=1234)
    p.add_argument("--lr", type=positive_float, default=1e-2)
    p.add_argument("--timeout", type=int_at_least(1), default=300,
                   help="seconds to wait for peers at rendezvous / in a collective")
    args = p.parse_args()
    if args.steps < args.wait + args.warmup + args.active:
        die(f"--steps ({args.steps}) must be >= wait+warmup+active "
            f"({args.wait}+{args.warmup}+{args.active})")
    return args


def first_slurm_host(nodelist):
    """First host of a Slurm nodelist: 'a,b' -> 'a', 'nid[0012-0015,0020]' -> 'nid0012'."""
    m = re.match(r"([^,\[]+)(?:\[([^\]\-,]+)[^\]]*\]([^,]*))?", nodelist.strip())
    if not m:
        return None
    return m.group(1) + (m.group(2) or "") + (m.group(3) or "")


def env_int(name):
    value = os.environ.get(name, "")
    try:
        return int(value)
    except ValueError:
        die(f"environment variable {name}={value!r} is not an integer")


def dist_env():
    """Returns (rank, world, local_rank, master_addr, master_port); addr is None for single-process."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env:
        rank, world = env_int("RANK"), env_int("WORLD_SIZE")
        local_rank = env_int("LOCAL_RANK") if "LOCAL_RANK" in env else rank
        addr = env.get("MASTER_ADDR") or "127.0.0.1"
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        rank, world = env_int("SLURM_PROCID"), env_int("SLURM_NTASKS")
        local_rank = env_int("SLURM_LOCALID") if "SLURM_LOCALID" in env else 0
        addr = env.get("MASTER_ADDR") or first_slurm_host(env.get("SLURM_JOB_NODELIST", "")) \
            or "127.0.0.1"
    else:
        return 0, 1, 0, None, None
    port = env_int("MASTER_PORT") if env.get("MASTER_PORT") else 29500
    if world < 1 or not 0 <= rank < world:
        die(f"invalid rank {rank} for world size {world}")
    return rank, world, local_rank, addr, port


def rendezvous(rank, world, addr, port, timeout_s):
    """TCPStore rendezvous that polls from Python: the stock one waits inside C++ holding the GIL,
    so a SIGTERM could not be acted on until the (long) rendezvous timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        if _stop.is_set():
            raise Stopped()
        try:
            store = dist.TCPStore(addr, port, world, rank == 0, wait_for_workers=False,
                                  timeout=datetime.timedelta(seconds=2))
            break
        except OSError:  # master not listening yet
            if rank == 0 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    store.add("tiny-ddp/arrived", 1)
    while store.add("tiny-ddp/arrived", 0) < world:
        if _stop.is_set():
            raise Stopped()
        if time.monotonic() > deadline:
            raise TimeoutError(f"rendezvous at {addr}:{port}: not all {world} ranks arrived "
                               f"within {timeout_s}s")
        time.sleep(0.05)
    store.set_timeout(datetime.timedelta(seconds=timeout_s))
    return store


def init_process_group(rank, world, addr, port, timeout_s):
    if addr is None:
        # Single process: an in-memory store needs no port, but the gloo group is the same.
        store = dist.HashStore()
    else:
        if addr in ("127.0.0.1", "localhost", "::1"):
            # All ranks are local; without this gloo binds to whatever the hostname resolves to.
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        store = rendezvous(rank, world, addr, port, timeout_s)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab, seq_len, d, layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.Sequential(*[Block(d) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.head.weight = self.tok.weight  # tied, as in most LMs
        # Small init: unit-variance embeddings through a tied head give huge initial logits.
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.norm(self.blocks(x)))


def synthetic_batch(gen, batch, seq_len):
    x = torch.randint(0, VOCAB, (batch, seq_len), generator=gen)
    return x, (x + 1) % VOCAB  # learnable target: the successor token


def trace_handler(trace_dir, rank, world, result):
    def handler(prof):
        final = os.path.join(trace_dir, f"kineto_trace_{rank}.json")
        tmp = os.path.join(trace_dir, f".kineto_trace_{rank}.json.tmp{os.getpid()}")
        try:
            # Whatever this torch writes (Kineto JSON, or the legacy autograd array on builds
            # without Kineto such as Debian's): the harness normalizes it, as it would a
            # contributor's own script.
            prof.export_chrome_trace(tmp)
            os.replace(tmp, final)  # readers never see a partial trace
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        result["trace"] = os.path.abspath(final)
    return handler


def train(args, rank, world, local_batch, result):
    torch.manual_seed(args.seed)  # identical initial parameters on every rank
    model = nn.parallel.DistributedDataParallel(
        TinyLM(VOCAB, args.seq_len, args.hidden, args.layers))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed + 1 + rank)  # different data per rank

    prof = profile(activities=[ProfilerActivity.CPU],
                   schedule=schedule(wait=args.wait, warmup=args.warmup, active=args.active,
                                     repeat=1),
                   record_shapes=False,
                   on_trace_ready=trace_handler(args.trace_dir, rank, world, result))
    with prof:
        for step in range(1, args.steps + 1):
            if _stop.is_set():
                raise Stopped()
            t0 = time.perf_counter()
            x, y = synthetic_batch(gen, local_batch, args.seq_len)
            loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()  # DDP allreduces gradients over gloo here
            opt.step()
            result["final_loss"] = loss.item()
            step_ms = (time.perf_counter() - t0) * 1e3  # before prof.step(): excludes trace export
            prof.step()
            result["steps"] = step
            print(f"rank={rank} step={step}/{args.steps} loss={result['final_loss']:.4f} "
                  f"step_ms={step_ms:.1f}", flush=True)


def main():
    args = parse_args()
    rank, world, local_rank, addr, port = dist_env()
    if args.batch_size % world:
        die(f"--batch-size {args.batch_size} is not divisible by world size {world}")
    try:
        os.makedirs(args.trace_dir, exist_ok=True)
    except OSError as e:
        die(f"cannot create --trace-dir {args.trace_dir!r}: {e.strerror}")
    torch.set_num_threads(1)  # ranks share the host's cores; avoid oversubscription
    torch.set_num_interop_threads(1)

    result = {"rank": rank, "world_size": world, "local_rank": local_rank, "steps": 0,
              "final_loss": None, "trace": None}
    t0 = time.perf_counter()
    rc = 0
    try:
        init_process_group(rank, world, addr, port, args.timeout)
        train(args, rank, world, args.batch_size // world, result)
    except Exception:
        if not _stop.is_set():
            raise
        # Stopping: a peer that already exited makes our collective fail; that is expected.
        rc = 128 + _stop_signum[0]
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    if rc:
        result["stopped_by"] = signal.Signals(_stop_signum[0]).name
    print(json.dumps(result), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
