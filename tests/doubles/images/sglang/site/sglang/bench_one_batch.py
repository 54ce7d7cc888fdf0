"""Stand-in for `python -m sglang.bench_one_batch` at the reference card's SGLang
(docs/contracts/sglang-29481685462732237d80d86076d6563e1f658102.yaml).

Parses with Python's argparse as the real `__main__` does (a plain ArgumentParser): a unique
prefix of an option is taken, an ambiguous one and any option the contract does not list are
refused (exit 2), --help lists every option and exits 0. Starts one process per TP rank
as the real main() does; only TP rank 0 profiles, as latency_test does. The trace is
$SGLANG_TORCH_PROFILER_DIR/<prefix>_batch<b>_input<i>_output<o>_<stage>.trace.json.gz: plain
torch.profiler (no ProfilerStep#N), each traced forward pass a python_function
".../sglang/bench_one_batch.py(<line>): decode" (or "extend"), rank 0's distributedInfo.
Appends one JSON line per run to --result-filename on rank 0.
"""
import json
import multiprocessing
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "..", "lib"))
import double_common as dc  # noqa: E402

PROG = "bench_one_batch.py"
REF = "29481685462732237d80d86076d6563e1f658102"


def forward_trace(rank, world, stage, steps):
    """Kineto JSON as export_chrome_trace writes it for `steps` forward passes."""
    trace = dc.kineto_trace(rank, world, range(len(steps)))
    at = 0
    for event in trace["traceEvents"]:
        if event["name"].startswith("ProfilerStep#"):
            function = "extend" if stage == "prefill" else "decode"
            event["name"] = f"/sgl-workspace/sglang/python/sglang/bench_one_batch.py(512): {function}"
            event["cat"] = "python_function"
            event["args"] = {"bench_step": steps[at]}
            at += 1
    return trace


def rank_main(tp_rank, tp, opts):
    bs, il, ol = int(opts["--batch-size"][0]), int(opts["--input-len"][0]), int(opts["--output-len"][0])
    # latency_test: `bench_args.profile if tp_rank == 0 else None`
    if opts.get("--profile") and tp_rank == 0:
        stage = opts.get("--profile-stage", "all")
        prefix = opts.get("--profile-prefix", "profile")
        out_dir = os.environ.get("SGLANG_TORCH_PROFILER_DIR", "/tmp")
        start = int(opts["--profile-start-step"]) if "--profile-start-step" in opts else ol // 2
        count = int(opts["--profile-steps"]) if "--profile-steps" in opts else 1
        windows = []
        if stage in ("all", "prefill"):
            windows.append(("prefill", [1]))
        if stage in ("all", "decode"):
            decodes = [k for k in range(start, start + count) if k < ol - 1]
            if decodes:
                windows.append(("decode", [k + 2 for k in decodes]))
        for name, steps in windows:
            path = os.path.join(out_dir, f"{prefix}_batch{bs}_input{il}_output{ol}_{name}.trace.json.gz")
            dc.write_json(path, forward_trace(0, tp, name, steps), compress=True)
            print(f"torch profiler chrome trace for {name} saved to {path}")
    if tp_rank == 0 and opts.get("--result-filename", "result.jsonl"):
        with open(opts.get("--result-filename", "result.jsonl"), "a") as fout:
            fout.write(json.dumps({"run_name": opts.get("--run-name", "default"), "batch_size": bs,
                                   "input_len": il, "output_len": ol, "prefill_latency": 0.01,
                                   "median_decode_latency": 0.001}) + "\n")


def main(argv):
    contract = dc.load_contract("sglang", REF)
    opts = dc.parse_argparse(argv, contract, PROG)
    for option in contract["options"]:
        value = opts.get(option["name"])
        values = value if isinstance(value, list) else [value]
        if "choices" in option and value is not None and any(v not in option["choices"] for v in values):
            dc.usage_error(PROG, f"argument {option['name']}: invalid choice: '{values[0]}'")
    if "--model-path" not in opts:
        sys.exit("ValueError: Provide --model-path for running the tests")
    opts.setdefault("--batch-size", ["1"])
    opts.setdefault("--input-len", ["1024"])
    opts.setdefault("--output-len", ["16"])
    if opts.get("--profile") and os.environ.get("CCL_DOUBLE_NSYS_REPORT") and \
            "CUDA_PROFILER" not in opts.get("--profile-activities", []):
        # CUPTI takes one subscriber: under nsys the Kineto trace would lose its GPU kernels.
        sys.exit("double: torch.profiler under nsys (CUPTI has a subscriber already): the trace would have no kernels")
    tp = int(opts.get("--tp-size", "1"))
    ep = int(opts.get("--ep-size", "1"))
    if tp % ep != 0:
        sys.exit(f"AssertionError: tp_size {tp} must be divisible by ep_size {ep}")
    workers = [multiprocessing.Process(target=rank_main, args=(rank, tp, opts)) for rank in range(tp)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return max((w.exitcode or 0) for w in workers)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
