#!/bin/bash
# The CCL-Search backend: upstream's own execute() and run_cache (tests/fixtures/ccl-search, copied
# unchanged from cornell-sysphotonics/ccl-bench at 1d257f0) drive docs/ccl-search/run.sh, which
# runs each trial through `ccl-harness eval` on the local machine; then `eval --json` directly,
# its reuse and its bad input. Trials are the tiny card's real 2-rank gloo DDP job.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
export CCL_SEARCH_CLUSTER=local CCL_SEARCH_RESULTS="$results"
# run.sh calls the harness under test.
export CCL_HARNESS

# 1. Three trials as the agent runs them: run_cache.get before execute(), put after. The third
#    repeats the first config, so upstream's own cache answers it and nothing runs.
/usr/bin/python3 - "$CCL_SOURCE_DIR/tests/fixtures/ccl-search" "$SCRATCH" >"$SCRATCH/trials.json" 2>"$SCRATCH/trials.err" <<'PY' &&
import json, os, sys
sys.path.insert(0, sys.argv[1])
import execute as upstream_execute
import run_cache

scratch = sys.argv[2]
run_cache._CACHE_FILE = __import__("pathlib").Path(scratch) / "run_cache.json"  # not beside the fixture
run_cache.load()
workload = {"name": "tiny-ddp", "run_script": os.path.join(os.environ["CCL_SOURCE_DIR"], "docs/ccl-search/run.sh")}
trials = []
for i, config in enumerate([{"batch_size": 2, "steps": 8}, {"batch_size": 4, "steps": 8}, {"batch_size": 2, "steps": 8}]):
    cached = run_cache.get(workload, config)
    if cached is not None:
        trials.append({"config": config, "status": cached["status"], "from_cache": True, "trace_dir": cached["trace_dir"]})
        continue
    trace_dir = os.path.join(scratch, f"traces-{i}")
    result = upstream_execute.execute(workload, config, timeout=600, dest_trace_dir=trace_dir)
    record = {"config": config, "status": result.status, "error_msg": result.error_msg, "trace_dir": result.trace_dir}
    run_cache.put(workload, config, record)
    trials.append(dict(record, from_cache=False))
json.dump(trials, sys.stdout)
PY
    pass || fail "the trials did not run: $(cat "$SCRATCH/trials.err")"
expect_json "$SCRATCH/trials.json" '[t["status"] for t in j]' "['success', 'success', 'success']"
expect_json "$SCRATCH/trials.json" '[t["from_cache"] for t in j]' "[False, False, True]"
for i in 0 1; do
    [ "$(ls "$SCRATCH/traces-$i" | grep -c '^kineto_trace_[01]\.json$')" -eq 2 ] && pass ||
        fail "trial $i's TRACE_DIR: $(ls "$SCRATCH/traces-$i" 2>&1)"
done
# One verified bundle per trial that ran.
bundles=("$results"/*.tar.zst)
expect_eq "one bundle per trial that ran" 2 "${#bundles[@]}"
for bundle in "${bundles[@]}"; do
    expect_status 0 "a trial's bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
done
# The traces in TRACE_DIR give the metrics the trial's bundle has.
expect_status 0 "metrics over a TRACE_DIR" -- "$CCL_HARNESS" metrics "$SCRATCH/traces-0" --json
grep -q '"avg_step_time"' <<<"$OUT" && pass || fail "no avg_step_time over TRACE_DIR: $OUT"

# compute_metric (docs/ccl-search/compute_metric.py, upstream's interface) over a trial's
# TRACE_DIR: the reference values `ccl-harness metrics --reference` gives, weighted into the score;
# a metric without a value, or a failed run, is what upstream's would return.
/usr/bin/python3 - "$CCL_SOURCE_DIR/tests/fixtures/ccl-search" "$SCRATCH" >"$SCRATCH/scores.json" <<'PY' &&
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["CCL_SOURCE_DIR"], "docs/ccl-search"))
sys.path.insert(1, sys.argv[1])
from execute import RunResult
from compute_metric import compute_metric
ok = RunResult({}, {}, "success", trace_dir=os.path.join(sys.argv[2], "traces-0"))
goal = {"direction": "minimize", "metrics": [{"name": "avg_step_time", "weight": 2.0}]}
out = {"ok": compute_metric(ok, goal),
       "na": compute_metric(ok, {"metrics": [{"name": "communication_fraction"}]}),
       "unknown": compute_metric(ok, {"metrics": [{"name": "speed"}]}),
       "failed": compute_metric(RunResult({}, {}, "error", error_msg="exit 1: oom"), goal)}
json.dump(out, sys.stdout)
PY
    pass || fail "compute_metric did not return"
reference=$("$CCL_HARNESS" metrics "$SCRATCH/traces-0" --reference --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["avg_step_time"]["value"])')
expect_json "$SCRATCH/scores.json" 'j["ok"]["status"]' success
expect_json "$SCRATCH/scores.json" "abs(j['ok']['metrics']['avg_step_time'] - $reference) < 1e-12" True
expect_json "$SCRATCH/scores.json" "abs(j['ok']['score'] - 2 * $reference) < 1e-12" True
expect_json "$SCRATCH/scores.json" '(j["na"]["status"], "no GPU kernel" in j["na"]["error_msg"])' "('metric_error', True)"
expect_json "$SCRATCH/scores.json" 'j["unknown"]["status"]' metric_error
expect_json "$SCRATCH/scores.json" '(j["failed"]["status"], j["failed"]["score"])' "('error', inf)"

# 2. The same config straight through execute() again (no agent cache): the harness reuses the
#    completed run instead of running it, and says so in the one line execute() keeps.
/usr/bin/python3 - "$CCL_SOURCE_DIR/tests/fixtures/ccl-search" "$SCRATCH" >"$SCRATCH/again.json" <<'PY' &&
import json, os, sys
sys.path.insert(0, sys.argv[1])
import execute as upstream_execute
workload = {"name": "tiny-ddp", "run_script": os.path.join(os.environ["CCL_SOURCE_DIR"], "docs/ccl-search/run.sh")}
r = upstream_execute.execute(workload, {"batch_size": 4, "steps": 8}, timeout=600, dest_trace_dir=os.path.join(sys.argv[2], "again"))
json.dump({"status": r.status}, sys.stdout)
PY
    pass || fail "execute() again failed"
expect_json "$SCRATCH/again.json" 'j["status"]' success
expect_eq "no new run for a repeated config" 2 "$(ls "$results"/*.tar.zst | grep -c .)"

# 3. A trial that fails: execute() gets a non-zero exit and one line saying why.
/usr/bin/python3 - "$CCL_SOURCE_DIR/tests/fixtures/ccl-search" "$SCRATCH" >"$SCRATCH/bad.json" <<'PY' &&
import json, os, sys
sys.path.insert(0, sys.argv[1])
import execute as upstream_execute
workload = {"name": "tiny-ddp", "run_script": os.path.join(os.environ["CCL_SOURCE_DIR"], "docs/ccl-search/run.sh")}
r = upstream_execute.execute(workload, {"batch_size": 3, "steps": 8}, timeout=600, dest_trace_dir=os.path.join(sys.argv[2], "bad"))
json.dump({"status": r.status, "error_msg": r.error_msg}, sys.stdout)
PY
    pass || fail "execute() of a bad config failed to return"
expect_json "$SCRATCH/bad.json" 'j["status"]' error
expect_json "$SCRATCH/bad.json" '"exit 2" in j["error_msg"] and "batch_size" in j["error_msg"]' True

# 4. eval directly: the JSON a loop reads, the score of an objective, and bad input.
expect_status 0 "eval --json of a completed config" -- "$CCL_HARNESS" eval workloads/tiny-ddp/tiny-ddp.yaml --cluster local \
    --results "$results" --config '{"workload.data.batch_size": 4, "launch.steps": 8}' --objective 'min:avg_step_time*1000' --json
echo "$OUT" | sed -n '/^{/,$p' >"$SCRATCH/eval.json"
expect_json "$SCRATCH/eval.json" 'j["cached"]' True
expect_json "$SCRATCH/eval.json" 'abs(j["score"] - 1000 * j["metrics"]["avg_step_time"]) < 1e-9' True
expect_json "$SCRATCH/eval.json" 'j["status"]' success
expect_status 2 "an unknown key" -- "$CCL_HARNESS" eval workloads/tiny-ddp/tiny-ddp.yaml --config '{"tp": 2}'
expect_output "names it" "--config tp: not a card path and not a key of the mapping"
expect_status 2 "an unknown objective metric" -- "$CCL_HARNESS" eval workloads/tiny-ddp/tiny-ddp.yaml --objective min:speed
expect_output "names it" '"speed" is no metric'
expect_status 2 "a config that is not JSON" -- "$CCL_HARNESS" eval workloads/tiny-ddp/tiny-ddp.yaml --config '{tp: 2'
expect_output "says so" "not a JSON object"
printf 'keys:\n  tp: tensor\n' >"$SCRATCH/bad-keys.yaml"
expect_status 2 "a keys file whose path is not one" -- "$CCL_HARNESS" eval --keys "$SCRATCH/bad-keys.yaml" --config '{}'
expect_output "names the file and key" "bad-keys.yaml:2: keys.tp: expected a dotted card path"
expect_status 2 "--config-from-env without --keys" -- "$CCL_HARNESS" eval workloads/tiny-ddp/tiny-ddp.yaml --config-from-env
finish
