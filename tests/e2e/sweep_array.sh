#!/bin/bash
# `ccl-harness sweep` on the one-node Slurm cluster (clusters/slurm-local) as a job array: six
# points of tiny-ddp (five real train.py points, one stand-in whose rank 1 exits 3) rendered
# first, then ONE sbatch --array=0-5%3; the failing task stops none of the others, five bundles
# verify, --resume submits a new array for the failed index alone, and --reuse keeps a point run
# before out of the array.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-local/cluster.sh
bash "$cluster" start >/dev/null
eval "$(bash "$cluster" env)"
results="$SCRATCH/results"
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml workloads/tiny-ddp/train.py "$work/"
cp "$(dirname "$0")/fixtures/misbehave.py" "$work/"

sweep_json() { # sweep_json SWEEP_DIR EXPR: evaluates a Python expression over sweep.json (as s)
    /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]+"/sweep.json")); print(eval(sys.argv[2]))' "$1" "$2"
}

# 1. Six points, --zip: point 2 runs misbehave.py for 10 steps, whose rank 1 exits 3 (fail10).
expect_status 1 "an array sweep with a failing point" -- env MISBEHAVE=fail10 "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" \
    --cluster slurm-local --zip --vary launch.script=train.py,train.py,misbehave.py,train.py,train.py,train.py \
    --vary launch.steps=8,9,10,11,12,13 --max-parallel 3 --results "$results"
expect_output "one array for the six points" "submitted job array"
expect_output "--array with the throttle" "--array=0-5%3"
expect_output "summary" "5 completed, 1 failed, 0 skipped, 0 cancelled, 0 not run"
sweep=$(ls -d "$results"/sweep-*/ | head -n 1)
[ "$(ls "$sweep"/array-*.sbatch | wc -l)" -eq 1 ] && pass || fail "wrappers: $(ls "$sweep")"
grep -q '^#SBATCH --nodes=1$' "$sweep/array-1.sbatch" && grep -q '^#SBATCH --time=00:10:00$' "$sweep/array-1.sbatch" && pass ||
    fail "the wrapper lost the points' geometry: $(cat "$sweep/array-1.sbatch")"
expect_json "$sweep/sweep.json" '[p["state"] for p in j["points"]]' \
    "['completed', 'completed', 'failed', 'completed', 'completed', 'completed']" "point states"
array=$(sweep_json "$sweep" 's["points"][0]["job_id"].split("_")[0]')
expect_json "$sweep/sweep.json" '[p["job_id"] for p in j["points"]]' \
    "['${array}_0', '${array}_1', '${array}_2', '${array}_3', '${array}_4', '${array}_5']" "one array, task i = point i"
expect_json "$sweep/sweep.json" 'j["points"][2]["slurm_state"]' "FAILED" "the failed task's Slurm state"
sweep_json "$sweep" 's["points"][2]["reason"]' | grep "job ${array}_2 FAILED with exit code 3:0" >/dev/null && pass ||
    fail "failure reason: $(sweep_json "$sweep" 's["points"][2]["reason"]')"
failed_run=$(sweep_json "$sweep" 's["points"][2]["run_dir"]')
[ "$(run_json "$failed_run" 'r["state"], r["job_ids"]')" = "('failed', ['${array}_2'])" ] && pass ||
    fail "failed run record: $(run_json "$failed_run" 'r["state"], r["job_ids"]')"
[ -f "$failed_run/logs/tiny-ddp-${array}_2.out" ] && pass || fail "the failed task's batch log: $(ls "$failed_run/logs")"
verified=0
for i in 0 1 3 4 5; do
    bundle=$(sweep_json "$sweep" "s['points'][$i]['bundle']")
    "$CCL_HARNESS" verify "$bundle" >/dev/null 2>&1 && verified=$((verified + 1))
done
[ "$verified" -eq 5 ] && pass || fail "verified bundles: $verified of 5"
completed_run=$(sweep_json "$sweep" 's["points"][4]["run_dir"]')
[ "$(run_json "$completed_run" '[t["state"] for t in r["transitions"]]')" = "['rendered', 'submitted', 'running', 'completed']" ] && pass ||
    fail "transitions: $(run_json "$completed_run" 'r["transitions"]')"
[ -s "$completed_run/accounting/scontrol.txt" ] && pass || fail "accounting of an array task"

# 2. --resume submits a second array for index 2 alone (now without the fault).
expect_status 0 "resume" -- "$CCL_HARNESS" sweep --resume "$sweep"
expect_output "resume submits only the unfinished index" "--array=2)"
[ "$(ls "$sweep"/array-*.sbatch | wc -l)" -eq 2 ] && pass || fail "wrappers after resume: $(ls "$sweep")"
expect_json "$sweep/sweep.json" '[p["state"] for p in j["points"]]' \
    "['completed', 'completed', 'completed', 'completed', 'completed', 'completed']" "states after resume"
[ "$(sweep_json "$sweep" 's["points"][2]["job_id"].split("_")[0] != s["points"][0]["job_id"].split("_")[0]')" = True ] && pass ||
    fail "index 2 was not resubmitted in a new array"

# 3. --reuse: a point rendered alike as one of the completed runs (lib.sh's results store; the
#    sweep recorded them) is settled before the array and never joins it; the new point does.
expect_status 0 "sweep --reuse" -- "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" --cluster slurm-local --zip \
    --vary launch.script=train.py,train.py --vary launch.steps=8,14 --results "$results" --reuse
reused_sweep=$(ls -dt "$results"/sweep-*/ | head -n 1)
expect_output "--reuse: the array holds the new point alone" "--array=1)"
expect_json "$reused_sweep/sweep.json" '[(p["state"], p["reused"], p["job_id"] == "") for p in j["points"]]' \
    "[('completed', True, True), ('completed', False, False)]" "--reuse: point 0 reused, point 1 ran in the array"
expect_json "$reused_sweep/sweep.json" 'j["points"][0]["run_dir"]' "$(sweep_json "$sweep" 's["points"][0]["run_dir"]')" \
    "--reuse: point 0 is the first sweep's run"

finish
