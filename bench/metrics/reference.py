#!/usr/bin/env python3
"""The CCL-Bench metric definitions (../shared/DESIGN.md, "Metrics") in plain Python with
json.load, the way the CCL-Bench tools read traces: the yardstick `ccl-harness metrics --reference`
is compared with, for numbers (tests) and for speed and memory (bench/metrics/run.sh).

Usage: reference.py PATH [--json]
PATH is one trace file or a directory of rank traces (every *.json in it, as the tools list them,
sampled to 16 with random.Random(42) beyond that). Each file is loaded once and every metric is
computed from that one load (the tools load it once per metric, so this is the fast case).
Prints {"metric": value-or-null, ...}; GPU (Kineto) traces only, no mfu (it needs the card).
"""

import json
import os
import random
import re
import statistics
import sys

STEP = re.compile(r"ProfilerStep#(\d+)$")
SGLANG_STEP_TIME = re.compile(r"(^|:) run_batch$")
SGLANG_OVERLAP = re.compile(r"\brun_batch\b")
OVERLAP_COMM = re.compile(
    r"nccl|all[_\-]?reduce|all[_\-]?gather|reduce[_\-]?scatter|all[_\-]?to[_\-]?all|broadcast|"
    r"cross[_\-]?device|sendrecv|collective", re.IGNORECASE)
FRACTION_COMM = re.compile(
    r"nccl|allreduce|allgather|reducescatter|broadcast|cross[_\-]?device|all_reduce|all_gather|"
    r"reduce_scatter|sendrecv|send|recv|p2p|communicate", re.IGNORECASE)
TOTAL_COMM = re.compile(
    r"^nccl|ncclDevKernel|ncclKernel|allreduce|allgather|reducescatter|broadcast|cross[_\-]?device|"
    r"all_reduce|all_gather|reduce_scatter|sendrecv", re.IGNORECASE)
DTYPE_BYTES = {
    "Float": 4, "Float32": 4, "Double": 8, "Float64": 8, "Half": 2, "Float16": 2, "BFloat16": 2,
    "BF16": 2, "Int": 4, "Int32": 4, "Int64": 8, "Long": 8, "Int16": 2, "Short": 2, "Int8": 1, "Byte": 1,
}


def rank_files(path):
    if os.path.isfile(path):
        return [path]
    files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".json"))
    if len(files) > 16:
        files = sorted(random.Random(42).sample(files, 16))
    return files


def load_events(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        data = json.load(f)
    return data.get("traceEvents", []) if isinstance(data, dict) else []


def inner(items):
    return items[1:-1] if len(items) > 2 else items


def merge(pairs):
    merged = []
    for s, e in sorted(pairs):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def length(merged):
    return sum(e - s for s, e in merged)


def intersection(a, b):
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            total += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


class Rank:
    """One file's events, split once into what the metrics read."""

    def __init__(self, events):
        x = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
        ann = [e for e in x if e.get("cat") == "user_annotation"]
        self.profiler = sorted((e for e in ann if STEP.match(e.get("name", ""))),
                               key=lambda e: int(STEP.match(e["name"]).group(1)))
        self.vllm = sorted((e for e in ann if e.get("name", "").startswith("execute_context_")),
                           key=lambda e: e.get("ts", 0))
        py = [e for e in x if e.get("cat") == "python_function"]
        self.sglang_step_time = sorted((e for e in py if SGLANG_STEP_TIME.search(e.get("name", ""))),
                                       key=lambda e: e.get("ts", 0))
        self.sglang_overlap = sorted((e for e in py if SGLANG_OVERLAP.search(e.get("name", ""))),
                                     key=lambda e: e.get("ts", 0))
        self.kernels = [e for e in x if e.get("cat") == "kernel" and e.get("ts") is not None
                        and e.get("dur") is not None]


def mean_inner_durations(steps):
    durs = inner([e["dur"] for e in steps if "dur" in e])
    return statistics.mean(durs) if durs else None


def avg_step_time(ranks):
    for family in ("profiler", "vllm", "sglang_step_time"):
        values = [v for v in (mean_inner_durations(getattr(r, family)) for r in ranks) if v is not None]
        if values:
            return statistics.mean(values) / 1e6
    return None


def compute_comm_overlap(ranks):
    ratios = []
    for r in ranks:
        steps = r.profiler or r.vllm or r.sglang_overlap
        if not steps or not r.kernels:
            continue
        kernels = [(float(k["ts"]), float(k["ts"]) + float(k["dur"]), bool(OVERLAP_COMM.search(k.get("name", ""))))
                   for k in r.kernels]
        overlap = comm = 0.0
        for step in inner(steps):
            start = float(step["ts"])
            end = start + float(step["dur"])
            comm_ivs, compute_ivs = [], []
            for ks, ke, is_comm in kernels:
                s, e = max(ks, start), min(ke, end)
                if s < e:
                    (comm_ivs if is_comm else compute_ivs).append((s, e))
            comm_merged = merge(comm_ivs)
            comm += length(comm_merged)
            if comm_ivs and compute_ivs:
                overlap += intersection(comm_merged, merge(compute_ivs))
        if comm > 0:
            ratios.append(overlap / comm * 100)
    return statistics.mean(ratios) if ratios else None


def communication_fraction(ranks):
    per_rank = []
    for r in ranks:
        kernels = [(float(k["ts"]), float(k["dur"]), bool(FRACTION_COMM.search(k.get("name", ""))))
                   for k in r.kernels]
        if not kernels:
            continue
        if r.profiler:
            fractions = []
            for step in inner(r.profiler):
                start = float(step["ts"])
                end = start + float(step.get("dur", 0))
                total = comm = 0.0
                for ts, dur, is_comm in kernels:
                    if ts + dur > start and ts < end:
                        total += dur
                        if is_comm:
                            comm += dur
                if total > 0:
                    fractions.append(comm / total * 100.0)
            if fractions:
                per_rank.append(statistics.mean(fractions))
        else:
            total = sum(d for _, d, _ in kernels)
            comm = sum(d for _, d, c in kernels if c)
            if total > 0:
                per_rank.append(comm / total * 100.0)
    return statistics.mean(per_rank) if per_rank else None


def total_communication_time(ranks):
    per_rank = []
    for r in ranks:
        if not r.kernels:
            continue
        comm = [(float(k["ts"]), float(k["ts"]) + float(k["dur"])) for k in r.kernels
                if TOTAL_COMM.search(k.get("name", ""))]
        total = length(merge(comm)) / 1e6
        if r.profiler:
            steps = inner(r.profiler)
            if len(r.profiler) > 2:
                start = float(steps[0]["ts"])
                end = float(steps[-1]["ts"]) + float(steps[-1].get("dur", 0))
                clipped = [(max(s, start), min(e, end)) for s, e in comm if max(s, start) < min(e, end)]
                total = length(merge(clipped)) / 1e6
            per_rank.append(total / len(steps))
        else:
            per_rank.append(total)
    return statistics.mean(per_rank) if per_rank else None


def collective_volume(ranks):
    sums, any_args = {}, False
    for r in ranks:
        for k in r.kernels:
            args = k.get("args", {})
            if not any(a in args for a in ("Collective name", "In msg nelems", "dtype")):
                continue
            any_args = True
            nelems, dtype = args.get("In msg nelems"), args.get("dtype")
            size = nelems * DTYPE_BYTES.get(dtype, 0) if nelems is not None and dtype is not None else 0
            name = args.get("Collective name") or "(unnamed)"
            sums[name] = sums.get(name, 0) + size
    if not any_args:
        return None
    return {name: total / len(ranks) for name, total in sorted(sums.items())}


def straggler(ranks):
    times = [sum(float(k["dur"]) for k in r.kernels if TOTAL_COMM.search(k.get("name", ""))) / 1e6
             for r in ranks if r.kernels]
    if len(times) < 2 or max(times) <= 0:
        return None
    return (max(times) - min(times)) / max(times)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ranks = [Rank(load_events(path)) for path in rank_files(sys.argv[1])]
    volume = collective_volume(ranks)
    result = {
        "avg_step_time": avg_step_time(ranks),
        "compute_comm_overlap": compute_comm_overlap(ranks),
        "communication_fraction": communication_fraction(ranks),
        "total_communication_time": total_communication_time(ranks),
        "collective_volume": sum(volume.values()) if volume else None,
        "collective_volume_by_name": volume,
        "straggler": straggler(ranks),
    }
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
