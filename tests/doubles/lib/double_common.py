"""Shared pieces of the framework doubles (tests/doubles/<framework>/).

A double stands in for a real framework on the test cluster. It accepts exactly the options its
contract (docs/contracts/<framework>-<ref>.yaml) lists, refusing anything else the way the real
parser does, and writes traces under the real names, in the real places, for the real window.
The traces are small but valid Kineto JSON: ProfilerStep#N markers, one compute and one NCCL
kernel per step, distributedInfo with the rank.
"""
import gzip
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACTS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "docs", "contracts"))


def load_contract(framework, ref):
    """The contract of `framework` at `ref`; exits 3 (a broken test set-up) when absent."""
    path = os.path.join(CONTRACTS, f"{framework}-{ref}.yaml")
    if not os.path.isfile(path):
        sys.stderr.write(f"double: no contract {path}\n")
        sys.exit(3)
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def options_by_name(contract):
    """{name: takes} for every option the contract lists (takes: 0, 1, '+' or '*')."""
    return {o["name"]: o.get("takes", 1) for o in contract.get("options", [])}


def parse_argparse(argv, contract, prog):
    """Parses argv like argparse with allow_abbrev=False would, against the contract's options.

    Accepts --name value, --name=value, store_true flags and nargs '+'/'*'. Unknown options
    exit 2 with argparse's message ("unrecognized arguments"). Returns {name: value or list or
    True}; repeated options keep the last value, as argparse does.
    """
    known = options_by_name(contract)
    values, unknown, i = {}, [], 0
    while i < len(argv):
        arg = argv[i]
        name, inline = (arg.split("=", 1) + [None])[:2] if arg.startswith("--") else (arg, None)
        if name not in known:
            unknown.append(arg)
            i += 1
            continue
        takes = known[name]
        if takes == 0:
            if inline is not None:
                usage_error(prog, f"argument {name}: ignored explicit argument '{inline}'")
            values[name] = True
            i += 1
        elif takes in ("+", "*"):
            items = [] if inline is None else [inline]
            i += 1
            while inline is None and i < len(argv) and not argv[i].startswith("--"):
                items.append(argv[i])
                i += 1
            if takes == "+" and not items:
                usage_error(prog, f"argument {name}: expected at least one argument")
            values[name] = items
        else:
            if inline is None:
                if i + 1 >= len(argv) or (argv[i + 1].startswith("--") and len(argv[i + 1]) > 2):
                    usage_error(prog, f"argument {name}: expected one argument")
                inline = argv[i + 1]
                i += 1
            values[name] = inline
            i += 1
    if unknown:
        usage_error(prog, "unrecognized arguments: " + " ".join(unknown))
    return values


def usage_error(prog, message):
    sys.stderr.write(f"usage: {prog} [options]\n{prog}: error: {message}\n")
    sys.exit(2)


def dist_rank():
    """(rank, world_size, local_rank) from torchrun's environment, else Slurm's, else 0/1/0."""
    env = os.environ
    for rank_key, world_key, local_key in (("RANK", "WORLD_SIZE", "LOCAL_RANK"),
                                           ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if rank_key in env:
            return int(env[rank_key]), int(env.get(world_key, "1")), int(env.get(local_key, "0"))
    return 0, 1, 0


def kineto_trace(rank, world_size, steps, backend="nccl", step_us=1000):
    """A small Kineto trace (dict) with one ProfilerStep#N per step in `steps`."""
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": f"GPU {rank % 4}"}},
        {"name": "process_name", "ph": "M", "pid": 100 + rank, "tid": 0, "args": {"name": "python3"}},
    ]
    ts = 1_000_000
    for step in steps:
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                       "pid": 100 + rank, "tid": 1, "ts": ts, "dur": step_us})
        events.append({"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
                       "pid": 0, "tid": 7, "ts": ts + 50, "dur": step_us // 2, "args": {"stream": 7}})
        events.append({"ph": "X", "cat": "kernel",
                       "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                       "pid": 0, "tid": 20, "ts": ts + 300, "dur": step_us // 4, "args": {"stream": 20}})
        ts += step_us + 10
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": backend, "rank": rank, "world_size": world_size},
        "traceEvents": events,
    }


def write_json(path, document, compress=False):
    """Writes `document` to `path` (gzip when `compress`), creating the directory, atomically."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    data = json.dumps(document).encode()
    with (gzip.open(tmp, "wb") if compress else open(tmp, "wb")) as f:
        f.write(data)
    os.replace(tmp, path)
