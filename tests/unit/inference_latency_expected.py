# The expected values of tests/unit/test_metrics_inference_latency.cpp: writes the same fixtures
# and prints what CCL-Bench's tools/inference_latency/inference_latency.py computes on each. Usage:
#   git --git-dir=<ccl-bench mirror> archive HEAD tools | tar x -C T
#   /usr/bin/python3 tests/unit/inference_latency_expected.py T/tools SCRATCH_DIR
# (needs PyYAML only). Keep the fixture text here and in the test byte for byte.
import os, shutil, sys
sys.path.insert(0, sys.argv[1])
from inference_latency.inference_latency import metric_cal


def trace(events):
    return '{"traceEvents": [\n' + ",\n".join(events) + "]}\n"


def vllm(durs, cat="user_annotation"):
    evs, ts = [], 0
    for n, d in enumerate(durs):
        evs.append('{"ph": "X", "cat": "%s", "name": "execute_context_%d(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": %d, "dur": %d}' % (cat, n, ts, d))
        ts += d + 10
    return evs


def sglang(durs):
    evs, ts = [], 0
    for d in durs:
        evs.append('{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": %d, "dur": %d}' % (ts, d))
        ts += d + 10
    return evs


def xla(durs):
    evs, ts = [], 0
    for d in durs:
        evs.append('{"ph": "X", "name": "$core.py:331 step", "pid": 1, "tid": 1, "ts": %d, "dur": %d}' % (ts, d))
        ts += d + 10
    return evs


def card(phase="inference", output_len=128, traces="[json]"):
    return ("workload:\n  model: {phase: %s}\n  data: {batch_size: 8, output_len: %d}\n"
            "  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}\nmetric_source: {traces: %s}\n"
            % (phase, output_len, traces))


R0 = vllm([5000, 300, 320, 340, 900])  # ttft 5000 us, decode 300 320 340
R1 = vllm([4000, 310, 330])             # ttft 4000 us, decode 310
cases = {
    "vllm": {"card.yaml": card(), "rank0_trace.json": trace(R0), "rank1_trace.json": trace(R1)},
    "vllm_one_pass": {"card.yaml": card(), "rank0_trace.json": trace(vllm([7000])), "rank1_trace.json": trace(vllm([6000, 200]))},
    # vLLM's markers on one rank win over SGLang's on the other (inference_latency.py:176-179).
    "mixed": {"card.yaml": card(), "rank0_trace.json": trace(R0), "rank1_trace.json": trace(sglang([100, 50, 60, 70]))},
    "sglang": {"card.yaml": card(), "rank0_trace.json": trace(sglang([2000, 100, 120, 140])), "rank1_trace.json": trace(sglang([1000, 80]))},
    "xla": {"card.yaml": card(traces="[json_tpu]"), "rank0_trace.json": trace(xla([9000, 400, 500, 600, 700]))},
    "training": {"card.yaml": card(phase="training"), "rank0_trace.json": trace(R0)},
    "serving": {"card.yaml": card(phase="serving"), "rank0_trace.json": trace(R0)},
    "output_len_1": {"card.yaml": card(output_len=1), "rank0_trace.json": trace(R0)},
    "cpu_op_markers": {"card.yaml": card(), "rank0_trace.json": trace(vllm([5000, 300, 320], cat="cpu_op"))},
}
scratch = sys.argv[2]
for name, files in cases.items():
    d = os.path.join(scratch, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f, text in files.items():
        with open(os.path.join(d, f), "w") as out:
            out.write(text)
    print(name, "ttft", metric_cal(d, "ttft"), "tpot", metric_cal(d, "tpot"))
