#!/bin/bash
# `ccl-harness metrics` like a user: the hand-computed fixtures, the real DeepSeek-V3 trace against
# what the CCL-Bench tools report on it, a real tiny-ddp run (host-side, both ranks) and its bundle,
# and the ways input goes wrong.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
fixtures=tests/fixtures/traces


# 1. Fixtures, both modes, through the command line.
"$CCL_HARNESS" metrics "$fixtures/two_ranks" --json >"$SCRATCH/two.json" && pass || fail "metrics --json on two_ranks"
expect_metrics_true "default overlap" "$SCRATCH/two.json" 'abs(m["compute_comm_overlap"] - 32.142857142857146) < 1e-9'
expect_metrics_true "default total comm" "$SCRATCH/two.json" 'abs(m["total_communication_time"] - 4.75e-05) < 1e-15'
expect_metrics_true "straggler" "$SCRATCH/two.json" 'm["straggler"] == 0.5'
expect_metrics_true "volume" "$SCRATCH/two.json" 'r["metrics"]["collective_volume"]["by_collective"]["allreduce"] == 2900'
expect_metrics_true "disagreement names FlashAttention" "$SCRATCH/two.json" \
    'any("CollectiveMainloop" in k["name"] for d in r["disagreements"] for k in d["kernels"])'
"$CCL_HARNESS" metrics "$fixtures/two_ranks" --reference --json >"$SCRATCH/two-ref.json" && pass || fail "--reference --json"
expect_metrics_true "reference overlap" "$SCRATCH/two-ref.json" 'abs(m["compute_comm_overlap"] - 21.428571428571427) < 1e-9'
expect_metrics_true "reference mfu rounds" "$SCRATCH/two-ref.json" 'm["mfu"] == 0.0903'
expect_status 0 "table for people" -- "$CCL_HARNESS" metrics "$fixtures/two_ranks"
expect_output "table row" "compute_comm_overlap        32.1429 %"
expect_output "modes disagree" "The default classifier and the CCL-Bench reference disagree"
expect_output "the kernel responsible" "default: DeepEP"
expect_status 0 "one metric" -- "$CCL_HARNESS" metrics "$fixtures/cpu_gloo/rank-0.json" --metric compute_comm_overlap
expect_output "host-side overlap" "compute_comm_overlap        60 %"
[ "$(grep -c '^avg_step_time' <<<"$OUT")" -eq 0 ] && pass || fail "--metric printed other metrics"
expect_status 0 "a metric that does not apply says why" -- "$CCL_HARNESS" metrics "$fixtures/empty_step"
expect_output "why" "no communication inside the inner steps"
if grep -q -- "-1" <<<"$OUT"; then fail "a -1 in the output: $OUT"; else pass; fi

# 2. The real DeepSeek-V3 trace: --reference gives the README's numbers, default finds DeepEP.
deepseek="$CCL_SHARED_DIR/traces/deepseek-v3-dualpipe-train-rank0.json"
mkdir -p "$SCRATCH/deepseek"
ln -sf "$deepseek" "$SCRATCH/deepseek/kineto_trace_0.json"
"$CCL_HARNESS" metrics "$SCRATCH/deepseek" --reference --json >"$SCRATCH/ds-ref.json" && pass || fail "DeepSeek --reference"
expect_metrics_true "README avg_step_time" "$SCRATCH/ds-ref.json" 'round(m["avg_step_time"], 6) == 0.112202'
expect_metrics_true "README overlap" "$SCRATCH/ds-ref.json" 'round(m["compute_comm_overlap"], 2) == 99.83'
expect_metrics_true "README fraction" "$SCRATCH/ds-ref.json" 'm["communication_fraction"] == 0'
expect_metrics_true "README total comm" "$SCRATCH/ds-ref.json" 'm["total_communication_time"] == 0'
"$CCL_HARNESS" metrics "$SCRATCH/deepseek" --json >"$SCRATCH/ds.json" && pass || fail "DeepSeek default"
expect_metrics_true "DeepEP is communication" "$SCRATCH/ds.json" 'm["total_communication_time"] > 0.05'
expect_metrics_true "no FlashAttention communication" "$SCRATCH/ds.json" \
    'all(k["default"] == "compute" for d in r["disagreements"] for k in d["kernels"] if "flash::" in k["name"])'
expect_metrics_true "DeepEP named" "$SCRATCH/ds.json" \
    'any(k["default"] == "DeepEP" and "dispatch" in k["name"] for d in r["disagreements"] for k in d["kernels"])'
gzip -c "$deepseek" >"$SCRATCH/kineto_trace_0.json.gz"
expect_status 0 "a gzip trace" -- "$CCL_HARNESS" metrics "$SCRATCH/kineto_trace_0.json.gz" --reference --metric avg_step_time
expect_output "gzip step time" "0.112202 s"

# 3. A real run: tiny-ddp over gloo on CPU, metrics host-side for both ranks; then its bundle.
results="$SCRATCH/results"
expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
run=$(ls -dt "$results"/*/ | head -n 1)
run=${run%/}
bundle="$run.tar.zst"
if [ ! -f "$bundle" ]; then
    expect_status 0 "pack the run" -- "$CCL_HARNESS" pack "$run"
fi
expect_status 0 "metrics of the run directory" -- "$CCL_HARNESS" metrics "$run"
expect_output "layout" "(run directory, 2 rank traces, card card.yaml)"
for metric in avg_step_time compute_comm_overlap total_communication_time; do
    if grep -E "^$metric +[0-9.e-]+ .* 0=[0-9.e-]+  1=[0-9.e-]+ .*host-side|^avg_step_time +[0-9.e-]+ s +0=[0-9.e-]+  1=[0-9.e-]+" <<<"$OUT" |
        grep -q "^$metric"; then pass; else fail "$metric for both ranks:"$'\n'"$OUT"; fi
done
expect_output "host-side" "host-side (CPU operators)"
if [ -n "$bundle" ] && [ -f "$bundle" ]; then
    expect_status 0 "metrics of the packed bundle" -- "$CCL_HARNESS" metrics "$bundle"
    expect_output "packed bundle, both ranks" "(bundle directory, 2 rank traces"
    mkdir -p "$SCRATCH/unpacked"
    tar --zstd -xf "$bundle" -C "$SCRATCH/unpacked" && pass || fail "tar --zstd -xf $bundle"
    expect_status 0 "metrics of the unpacked bundle" -- "$CCL_HARNESS" metrics "$SCRATCH/unpacked/$(basename "$bundle" .tar.zst)"
    expect_output "bundle layout" "(bundle directory, 2 rank traces"
    expect_output "bundle overlap" "compute_comm_overlap"
    # pack stored the run's metrics; verify recomputes them and catches an edited number even
    # when the manifest was rewritten to match.
    name=$(basename "$bundle" .tar.zst)
    [ -f "$SCRATCH/unpacked/$name/metrics.json" ] && pass || fail "the bundle has no metrics.json"
    expect_status 0 "verify recomputes the stored metrics" -- "$CCL_HARNESS" verify "$bundle"
    /usr/bin/python3 - "$SCRATCH/unpacked/$name" <<'PY' && pass || fail "could not edit metrics.json"
import hashlib, json, sys
bundle = sys.argv[1]
metrics = json.load(open(bundle + "/metrics.json"))
metrics["metrics"]["avg_step_time"]["value"] *= 0.5
data = json.dumps(metrics).encode()
open(bundle + "/metrics.json", "wb").write(data)
manifest = json.load(open(bundle + "/manifest.json"))
for record in manifest["files"]:
    if record["path"] == "metrics.json":
        record["sha256"], record["size"] = hashlib.sha256(data).hexdigest(), len(data)
json.dump(manifest, open(bundle + "/manifest.json", "w"))
PY
    expect_status 1 "an edited metric is caught" -- "$CCL_HARNESS" verify "$SCRATCH/unpacked/$name"
    expect_output "names the metric" "metrics.json: avg_step_time: stored"
else
    fail "no bundle at $bundle"
fi

# 3b. Impossible values are flagged, not shown as results: HTA's real A100 trace (hta_nccl_cut,
#     tests/fixtures/real_traces/README.md) under a card that claims an H100 and a model a thousand
#     times too large: mfu far above 100 %, and the trace's deviceProperties contradict the card.
mkdir -p "$SCRATCH/mismatch"
cp "$CCL_SOURCE_DIR/tests/fixtures/real_traces/hta_nccl_cut/rank0_trace.json.gz" "$SCRATCH/mismatch/"
cat >"$SCRATCH/mismatch/card.yaml" <<'YAML'
workload:
  model:
    phase: training
    model_arch: {num_params: 8000000000000, num_layers: 32, head_dim: 128, num_heads: 32}
  data: {batch_size: 64, seq_len: 4096}
  hardware:
    xpu_spec: {type: GPU, model: nvidia_h100, total_count: 1, count_per_node: 1}
metric_source:
  traces: [json]
YAML
expect_status 0 "metrics under a card that does not describe the run" -- "$CCL_HARNESS" metrics "$SCRATCH/mismatch"
expect_output "mfu flagged" "IMPLAUSIBLE: 5.791e+06 % is above 100 %"
expect_output "the device said plainly" "the traces ran on NVIDIA A100-PG509-200 (their deviceProperties), but the card's xpu_spec.model is nvidia_h100"
"$CCL_HARNESS" metrics "$SCRATCH/mismatch" --json >"$SCRATCH/mismatch.json" || fail "metrics --json"
expect_json "$SCRATCH/mismatch.json" "j['metrics']['mfu']['implausible'] is not None, j['metrics']['avg_step_time'].get('implausible'), sorted(set(j['ranks'][0]['devices'])), j['device_mismatch'] is not None" \
    "(True, None, ['NVIDIA A100-PG509-200'], True)" "--json: implausible, devices, device_mismatch"
# The card that matches the trace: no mismatch; a plausible model: no flag.
sed -i 's/nvidia_h100/nvidia_a100/; s/num_params: 8000000000000/num_params: 8000000/; s/batch_size: 64, seq_len: 4096/batch_size: 1, seq_len: 512/' \
    "$SCRATCH/mismatch/card.yaml"
expect_status 0 "metrics under a card that does" -- "$CCL_HARNESS" metrics "$SCRATCH/mismatch"
if grep -qE "IMPLAUSIBLE|deviceProperties" <<<"$OUT"; then fail "flagged a plausible run: $OUT"; else pass; fi

# 4. Bad input: one clear error, exit 2.
head -c 300 "$deepseek" >"$SCRATCH/cut.json"
expect_status 2 "truncated trace" -- "$CCL_HARNESS" metrics "$SCRATCH/cut.json"
expect_output "offset" "cut.json: byte 300: truncated"
echo '[1, 2]' >"$SCRATCH/array.json"
expect_status 2 "an array of numbers" -- "$CCL_HARNESS" metrics "$SCRATCH/array.json"
expect_output "not an event" "an event that is not a JSON object"
echo '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]}' >"$SCRATCH/nodur.json"
expect_status 2 "missing dur" -- "$CCL_HARNESS" metrics "$SCRATCH/nodur.json"
expect_output "missing dur" "has no dur"
expect_status 2 "unknown metric" -- "$CCL_HARNESS" metrics "$fixtures/two_ranks" --metric overlap
expect_output "suggestion" "unknown metric \"overlap\""
expect_status 2 "missing path" -- "$CCL_HARNESS" metrics "$SCRATCH/nothing-here"
expect_status 2 "no traces" -- "$CCL_HARNESS" metrics "$CCL_SOURCE_DIR/docs"

finish
