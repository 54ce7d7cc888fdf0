# The expected values of tests/unit/test_metrics_mfu_reference.cpp: writes the same fixtures
# and prints what CCL-Bench's tools/mfu/mfu.py computes on each. Usage:
#   git --git-dir=<ccl-bench mirror> archive HEAD tools | tar x -C T
#   /usr/bin/python3 tests/unit/mfu_reference_expected.py T/tools SCRATCH_DIR
# (needs PyYAML only). Keep the fixture text here and in the test byte for byte.
import os, shutil, sys
sys.path.insert(0, sys.argv[1])
from mfu.mfu import metric_cal

def trace(durs):
    evs, ts = [], 0
    for n, d in enumerate(durs, 1):
        evs.append('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 1, "tid": 1, "ts": %d, "dur": %d}' % (n, ts, d))
        ts += d
    return '{"traceEvents": [\n' + ",\n".join(evs) + "]}\n"

R0 = trace([100, 120, 140, 160])  # inner mean 130 us
R1 = trace([90, 150, 170, 200])   # inner mean 160 us

def card(model, data="{batch_size: 4, seq_len: 128}", traces="[json]", total=2):
    return ("workload:\n  model: " + model + "\n  data: " + data +
            "\n  hardware: {xpu_spec: {type: GPU, model: nvidia_h100, total_count: %d}}\nmetric_source: {traces: %s}\n" % (total, traces))

ARCH = "num_params: 1000000000, num_params_embedding: 10000000, num_layers: 4, head_dim: 64, num_heads: 8"
cases = {
    "inference_active": {"card.yaml": card("{phase: inference, model_arch: {%s, num_params_active: 200000000}}" % ARCH)},
    "serving": {"card.yaml": card("{phase: serving, model_arch: {%s}}" % ARCH)},
    "active_spelling": {"card.yaml": card("{phase: training, model_arch: {%s, num_active_params: 200000000}}" % ARCH)},
    "arch_under_model": {"card.yaml": card("{phase: inference, %s}" % ARCH)},
    "empty_model_arch": {"card.yaml": card("{phase: training, model_arch: {}, %s}" % ARCH)},
    "latency": {"card.yaml": card("{phase: inference, model_arch: {%s}}" % ARCH),
                "a.latency.json": '{"avg_latency": null}', "bench/b.latency.json": '{"avg_latency": 0.25, "latencies": [0.2, 0.3]}',
                "bench/c.latency.json": '{"avg_latency": 9.0}', ".hidden/0.latency.json": '{"avg_latency": 7.0}'},
    # repr(v) is 2.00025 exactly as printed: round(v, 4) gives 2.0002, round(v * 1e4) / 1e4 2.0003.
    "round_half": {"card.yaml": card("{phase: inference, model_arch: {%s}}" % ARCH),
                   "run.latency.json": '{"avg_latency": 0.02563625125504408}'},
    "no_json_source": {"card.yaml": card("{phase: training, model_arch: {%s}}" % ARCH, traces="[nsys]")},
    "zero_batch": {"card.yaml": card("{phase: training, model_arch: {%s}}" % ARCH, data="{batch_size: 0, seq_len: 128}")},
    "other_names": {"card.yaml": card("{phase: training, model_arch: {%s}}" % ARCH)},
}
root = sys.argv[2]
shutil.rmtree(root, ignore_errors=True)
for name, files in cases.items():
    d = os.path.join(root, name)
    os.makedirs(d)
    files = dict(files)
    files.setdefault("rank0_trace.json", R0)
    if name == "other_names":
        files["worker1.123.pt.trace.json"] = R1  # a torch trace by name, but not rank*/kineto*
    else:
        files.setdefault("rank1_trace.json", R1)
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        open(os.path.join(d, rel), "w").write(text)
    print(name, repr(metric_cal(d)))
