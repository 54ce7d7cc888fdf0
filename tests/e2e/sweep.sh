#!/bin/bash
# `ccl-harness sweep` and `ccl-harness status` on this machine, for real: tiny-ddp over a 2x2
# matrix with one point failing at run time and points skipped by validate --strict, then a
# sweep stopped with Ctrl-C and finished with --resume, and sweeps that --reuse its points. Bad
# input first: it must write nothing.
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

# 3b. --reuse: points rendered alike as completed runs in the results store (lib.sh's
#     CCL_HARNESS_STORE; the sweeps above recorded their points) run nothing and take those runs'
#     directories and bundles; a point with nothing alike runs.
first_sweep=$sweep
expect_status 0 "sweep --reuse of finished points" -- "$CCL_HARNESS" sweep $card --vary launch.steps=10,11,12 \
    --results "$results" --reuse --json
reused_sweep=$(latest_sweep)
expect_json "$reused_sweep/sweep.json" '[(p["state"], p["reused"]) for p in j["points"]]' \
    "[('completed', True), ('completed', True), ('completed', True)]" "--reuse: every point reused"
expect_eq "--reuse: no run directory in the new sweep" 0 "$(find "$reused_sweep" -mindepth 1 -type d | wc -l)"
expect_json "$reused_sweep/sweep.json" "all(p['run_dir'].startswith('${first_sweep%/}/') for p in j['points'])" True \
    "--reuse: the points name the earlier sweep's runs"
expect_output "--reuse: --json says so" '"reused": true'
expect_status 0 "sweep --reuse, one point new" -- "$CCL_HARNESS" sweep $card --vary launch.steps=12,13 --results "$results" --reuse
expect_output "--reuse: the reused point is named" "reused: launch.steps=12"
mixed_sweep=$(latest_sweep)
expect_json "$mixed_sweep/sweep.json" '[(p["state"], p["reused"]) for p in j["points"]]' \
    "[('completed', True), ('completed', False)]" "--reuse: only the new point ran"
expect_eq "--reuse: one run directory, the new point's" 1 "$(find "$mixed_sweep" -mindepth 1 -maxdepth 1 -type d | wc -l)"
bundle=$(sweep_json "$mixed_sweep" 's["points"][0]["bundle"]')
expect_status 0 "--reuse: the reused point's bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
rm -rf "$reused_sweep" "$mixed_sweep"

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
# --where reads each run's effective card (the results store's rules, from the directories).
# (The Ctrl-C above may leave a cancelled run of 11 steps beside the completed one.)
expect_status 0 "status --where a card field" -- "$CCL_HARNESS" status "$results" --where launch.steps=11 --where state=completed
expect_output "--where keeps the one run with the values" "1 of "
expect_output "--where is said" "match --where launch.steps=11 --where state=completed"
expect_output "--where keeps its sweep" "$(basename "$sweep")"
# Two completed runs of 12 steps: section 2's train.py point and section 3's third point.
expect_status 0 "compare --where" -- "$CCL_HARNESS" compare "$results" --where launch.steps=12 --where state=completed --json
/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["runs"]) == 2 and d["not_matching"] >= 3, d' "$OUT" &&
    pass || fail "compare --where: $OUT"
expect_status 2 "status --where without a value" -- "$CCL_HARNESS" status "$results" --where launch.steps
expect_output "a bad --where is named" "--where launch.steps: not FIELD=VALUE"

# A value the field cannot hold is a usage error before any point runs, not a skipped point.
expect_status 2 "an unparsable --vary value" -- "$CCL_HARNESS" sweep workloads/tiny-ddp/tiny-ddp.yaml \
    --vary workload.data.batch_size=8,abc --results "$SCRATCH/never"
expect_output "naming the value and what the field takes" "--vary workload.data.batch_size=abc: expected a positive integer, got \"abc\""
[ ! -e "$SCRATCH/never" ] && pass || fail "a refused sweep wrote $SCRATCH/never"

finish
