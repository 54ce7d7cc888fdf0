#!/bin/bash
# `ccl-harness sweep` and `ccl-harness status` on this machine, for real: tiny-ddp over a 2x2
# matrix with one point failing at run time and points skipped by validate --strict, then a
# sweep stopped with Ctrl-C and finished with --resume. Bad input first: it must write nothing.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
card=workloads/tiny-ddp/tiny-ddp.yaml

sweep_json() { # sweep_json SWEEP_DIR EXPR: evaluates a Python expression over sweep.json (as s)
    /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/sweep.json")); print(eval(sys.argv[2]))' "$1" "$2"
}
latest_sweep() { ls -dt "$results"/sweep-*/ 2>/dev/null | head -n 1; }
no_sweep_written() { [ -z "$(ls -A "$results" 2>/dev/null)" ] && pass || fail "$1: something was written: $(ls "$results")"; }

# 1. Bad input: exit 2, one clear error, nothing on disk.
expect_status 2 "--vary without '='" -- "$CCL_HARNESS" sweep $card --vary launch.steps --results "$results"
expect_output "bad --vary named" "launch.steps"
expect_status 2 "empty value" -- "$CCL_HARNESS" sweep $card --vary launch.steps=10,,12 --results "$results"
expect_output "empty value reported" "empty value"
expect_status 2 "unequal --zip" -- "$CCL_HARNESS" sweep $card --zip --vary launch.steps=10,12 \
    --vary workload.data.batch_size=8 --results "$results"
expect_output "zip lengths reported" "equally long"
expect_status 2 "no --vary" -- "$CCL_HARNESS" sweep $card --results "$results"
expect_status 2 "missing card" -- "$CCL_HARNESS" sweep "$SCRATCH/nope.yaml" --vary launch.steps=10 --results "$results"
expect_status 2 "every point skipped" -- "$CCL_HARNESS" sweep $card --vary launch.steps=5,6 --results "$results"
expect_output "skip reason shown" "cannot hold the profiling window"
expect_status 2 "resume of a non-sweep" -- "$CCL_HARNESS" sweep --resume "$SCRATCH" --results "$results"
expect_output "resume names the directory" "not a sweep directory"
no_sweep_written "bad input"
expect_status 0 "dry run" -- "$CCL_HARNESS" sweep $card --vary launch.steps=10,6 --results "$results" --dry-run
expect_output "dry run counts" "2 point(s), 1 to run, 1 skipped"
no_sweep_written "dry run"
expect_status 2 "status of a missing directory" -- "$CCL_HARNESS" status "$SCRATCH/missing"

# 2. A 2x2 sweep: train.py or a stand-in that writes no trace for rank 1 (fails at run time),
#    12 steps or 6 (too few for the profiling window: skipped by validate --strict).
work="$SCRATCH/card"
mkdir -p "$work"
cp $card workloads/tiny-ddp/train.py "$work/"
cp "$(dirname "$0")/fixtures/misbehave.py" "$work/"
expect_status 1 "a sweep with a failing point" -- env MISBEHAVE=notrace "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" \
    --cluster local --vary launch.script=train.py,misbehave.py --vary launch.steps=12,6 --results "$results"
expect_output "summary" "1 completed, 1 failed, 2 skipped, 0 cancelled, 0 not run"
sweep=$(latest_sweep)
expect_json "$sweep/sweep.json" '[p["state"] for p in j["points"]]' "['completed', 'skipped', 'failed', 'skipped']" "point states"
expect_json "$sweep/sweep.json" 'j["points"][0]["overrides"]' "['launch.script=train.py', 'launch.steps=12']" "overrides recorded"
# Issue 18: a point's run id carries its varied values.
expect_json "$sweep/sweep.json" 'j["points"][0]["run_dir"].rstrip("/").split("/")[-1].startswith("tiny-ddp-script_train.py-steps12-")' True \
    "the run id names the varied values"
expect_json "$sweep/sweep.json" 'j["points"][2]["run_dir"].rstrip("/").split("/")[-1].startswith("tiny-ddp-script_misbehave.py-steps12-")' \
    True "the failing point's run id names its values"
sweep_json "$sweep" 's["points"][1]["reason"]' | grep -q "profiling window" && pass || fail "skip reason recorded"
[ "$(sweep_json "$sweep" '(s["points"][2]["exit_code"], s["points"][2]["run_dir"] != "")')" = "(1, True)" ] && pass ||
    fail "failed point: $(sweep_json "$sweep" 's["points"][2]')"
sweep_json "$sweep" 's["points"][2]["reason"]' | grep -q "traces missing" && pass || fail "failure reason recorded"
expect_json "$sweep/sweep.json" 'j["points"][1]["run_dir"]' "" "a skipped point ran"
bundle=$(sweep_json "$sweep" 's["points"][0]["bundle"]')
[ -f "$bundle" ] && pass || fail "bundle of the completed point: [$bundle]"
expect_status 0 "verify accepts the sweep's bundle" -- "$CCL_HARNESS" verify "$bundle"
[ "$(run_json "$(sweep_json "$sweep" 's["points"][0]["run_dir"]')" 'r["state"]')" = completed ] && pass || fail "run state"
[ "$(ls -d "$sweep"/*/ | wc -l)" -eq 2 ] && pass || fail "run directories: $(ls "$sweep")"
echo "# edited" >>"$work/tiny-ddp.yaml"
expect_status 2 "resume refuses an edited card" -- "$CCL_HARNESS" sweep --resume "$sweep"
expect_output "edited card reported" "the card changed since the sweep began"
[ "$(ls -d "$sweep"/*/ | wc -l)" -eq 2 ] && pass || fail "a refused resume ran something"

# 3. Ctrl-C after the first point completed: exit 130, the point in flight cancelled; --resume
#    runs only the points not completed.
"$CCL_HARNESS" sweep $card --vary launch.steps=10,11,12 --results "$results" --grace 1 >"$SCRATCH/interrupt.log" 2>&1 &
harness=$!
for _ in $(seq 150); do grep -q "^  bundle: " "$SCRATCH/interrupt.log" 2>/dev/null && break; sleep 0.2; done
kill -INT "$harness"
status=0
wait "$harness" || status=$?
[ "$status" -eq 130 ] && pass || fail "Ctrl-C exit status $status; output:"$'\n'"$(cat "$SCRATCH/interrupt.log")"
sweep=$(latest_sweep)
done_before=$(sweep_json "$sweep" 'sum(p["state"] == "completed" for p in s["points"])')
[ "$done_before" -ge 1 ] && [ "$done_before" -lt 3 ] && pass || fail "completed before the resume: $done_before"
[ "$(sweep_json "$sweep" 'any(p["state"] in ("cancelled", "pending") for p in s["points"])')" = True ] && pass ||
    fail "states after Ctrl-C: $(sweep_json "$sweep" '[p["state"] for p in s["points"]]')"
sweep_json "$sweep" '[p["reason"] for p in s["points"] if p["state"] == "cancelled"]' | grep -qv "\[''\]" && pass ||
    fail "cancel reason: $(sweep_json "$sweep" '[p["reason"] for p in s["points"]]')"
grep -q "sweep --resume" "$SCRATCH/interrupt.log" && pass || fail "no resume hint"
dirs_before=$(ls -d "$sweep"/*/ | wc -l)
expect_status 0 "resume" -- "$CCL_HARNESS" sweep --resume "$sweep"
expect_output "resume runs only the missing points" "resuming $((3 - done_before)) point(s)"
expect_json "$sweep/sweep.json" '[p["state"] for p in j["points"]]' "['completed', 'completed', 'completed']" "states after resume"
[ "$(ls -d "$sweep"/*/ | wc -l)" -eq $((dirs_before + 3 - done_before)) ] && pass || fail "run directories after resume"
completed_runs=$(for d in "$sweep"/*/; do run_json "$d" 'r["state"]'; done | grep -c '^completed$')
[ "$completed_runs" -eq 3 ] && pass || fail "completed run directories: $completed_runs"
expect_status 0 "a finished sweep resumes to nothing" -- "$CCL_HARNESS" sweep --resume "$sweep"
expect_output "nothing to resume" "resuming 0 point(s)"

# 4. status lists the runs (inside the sweeps) and the sweeps.
expect_status 0 "status" -- "$CCL_HARNESS" status "$results"
expect_output "sweep row" "$(basename "$sweep")"
expect_output "sweep counts" "3 completed"
expect_output "a run row" "$(basename "$(sweep_json "$sweep" 's["points"][0]["run_dir"]')")"
expect_output "failed run listed" " failed "
expect_status 0 "status --json" -- "$CCL_HARNESS" status "$results" --json
if /usr/bin/python3 - "$OUT" <<'PY'; then pass; else fail "status --json: $OUT"; fi
import json, sys
d = json.loads(sys.argv[1])
assert len(d["sweeps"]) == 2, d["sweeps"]
runs = [r for r in d["runs"] if r["state"] == "completed"]
assert len(runs) == 4, [r["state"] for r in d["runs"]]
assert all(r["bundle"].endswith(".tar.zst") and r["duration_s"] is not None for r in runs)
assert any(r["avg_step_time"] is not None for r in runs)
PY

# A value the field cannot hold is a usage error before any point runs, not a skipped point.
expect_status 2 "an unparsable --vary value" -- "$CCL_HARNESS" sweep workloads/tiny-ddp/tiny-ddp.yaml \
    --vary workload.data.batch_size=8,abc --results "$SCRATCH/never"
expect_output "naming the value and what the field takes" "--vary workload.data.batch_size=abc: expected a positive integer, got \"abc\""
[ ! -e "$SCRATCH/never" ] && pass || fail "a refused sweep wrote $SCRATCH/never"

finish
