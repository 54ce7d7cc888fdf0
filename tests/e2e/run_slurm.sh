#!/bin/bash
# `ccl-harness run` through the real one-node Slurm cluster (clusters/slurm-local), and the
# rendered Perlmutter scripts checked by the real sbatch --test-only.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-local/cluster.sh
bash "$cluster" start >/dev/null
eval "$(bash "$cluster" env)"
state_dir=$(dirname "$SLURM_CONF")
results="$SCRATCH/results"

wait_for() { # wait_for FILE TEXT SECONDS
    local i
    for ((i = 0; i < $3 * 5; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}

# 1. The real workload: sbatch -> srun 2 tasks -> 2 normalized traces, accounting recorded.
expect_status 0 "tiny-ddp through slurm-local" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-local --results "$results"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "state $(run_json "$run" 'r["state"]')"
[ "$(run_json "$run" '[t["state"] for t in r["transitions"]]')" = "['rendered', 'submitted', 'running', 'completed']" ] && pass ||
    fail "transitions $(run_json "$run" 'r["transitions"]')"
[ -n "$(run_json "$run" 'r["job_ids"][0]')" ] && pass || fail "no job id"
grep -q "COMPLETED" "$run/accounting/sacct.txt" && pass || fail "no accounting: $(cat "$run/accounting/sacct.txt")"
grep -q "JobState=COMPLETED" "$run/accounting/scontrol.txt" && pass || fail "no scontrol record"
for rank in 0 1; do
    /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
steps = [e for e in d["traceEvents"] if e["name"].startswith("ProfilerStep#")]
assert d["distributedInfo"]["rank"] == int(sys.argv[2]) and len(steps) == 5
assert any("gloo" in e["name"] or "allreduce" in e["name"] for e in d["traceEvents"])
' "$run/traces/kineto_trace_$rank.json" "$rank" && pass || fail "trace of rank $rank"
    [ -s "$run/logs/rank_$rank.log" ] && pass || fail "log of rank $rank"
done
# ...ends with a bundle that verify accepts, holding the accounting and the job's provenance,
# and packing the same run directory again gives the same bytes.
bundle="${run%/}.tar.zst"
expect_status 0 "the Slurm run's bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
expect_status 0 "pack the Slurm run again" -- "$CCL_HARNESS" pack "$run" --out "$SCRATCH/again.tar.zst"
[ "$(sha256sum <"$bundle")" = "$(sha256sum <"$SCRATCH/again.tar.zst")" ] && pass || fail "packing twice gave different bytes"
name=$(basename "$bundle" .tar.zst)
tar --zstd -tf "$bundle" | grep -x "$name/accounting/sacct.txt" >/dev/null && pass || fail "the bundle lacks the accounting"
tar --zstd -xOf "$bundle" "$name/provenance.json" | /usr/bin/python3 -c '
import json, sys
p = json.load(sys.stdin)
assert p["scheduler"]["job_ids"], p["scheduler"]
assert p["environment"].get("SLURM_JOB_ID") == p["scheduler"]["job_ids"][0], p["environment"]
assert sorted(r for h in p["hosts"] for r in h["ranks"]) == [0, 1], p["hosts"]
assert all(h["tools"]["torch"] for h in p["hosts"]), p["hosts"]
' && pass || fail "provenance of the Slurm run: $(tar --zstd -xOf "$bundle" "$name/provenance.json")"

work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$(dirname "$0")/fixtures/misbehave.py" "$work/"
export CCL_HARNESS results work
misbehave() { # misbehave MODE [ARGS...]: runs the stand-in card through Slurm
    local mode=$1
    shift
    MISBEHAVE=$mode exec "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --cluster slurm-local --set launch.script=misbehave.py \
        --results "$results" "$@"
}

# 2. A rank that exits non-zero: srun --kill-on-bad-exit stops the other, the job fails.
expect_status 1 "failing rank under Slurm" -- bash -c "$(declare -f misbehave); misbehave fail" 
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "state after failing rank: $(run_json "$run" 'r["state"]')"
expect_output "job exit code" "FAILED with exit code"
grep -q "simulated crash" "$run/logs/rank_1.log" && pass || fail "rank 1 log"

# 3. A rank without its trace.
expect_status 1 "missing trace under Slurm" -- bash -c "$(declare -f misbehave); misbehave notrace"
expect_output "missing trace named" "no kineto_trace_1.json (rank 1)"

# 4. Cancelled from outside with scancel.
(misbehave sleep) >"$SCRATCH/scancel.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/scancel.log" "RUNNING" 30 || fail "job never ran"
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$SCRATCH/scancel.log")
scancel "$job"
status=0
wait "$harness" || status=$?
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = cancelled ] && pass || fail "state after scancel: $(run_json "$run" 'r["state"]')"

# 5. Ctrl-C: the harness cancels the job, records "cancelled", exits 130.
(misbehave sleep) >"$SCRATCH/ctrlc.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/ctrlc.log" "RUNNING" 30 || fail "job never ran"
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$SCRATCH/ctrlc.log")
kill -INT "$harness"
status=0
wait "$harness" || status=$?
[ "$status" -eq 130 ] && pass || fail "Ctrl-C exit status $status: $(cat "$SCRATCH/ctrlc.log")"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = cancelled ] && pass || fail "state after Ctrl-C"
scontrol show job "$job" | grep -q "JobState=CANCELLED" && pass || fail "job $job not cancelled in Slurm"

# 6. slurmctld stopped and restarted while the job runs: the run still completes.
(misbehave slow) >"$SCRATCH/restart.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/restart.log" "RUNNING" 30 || fail "job never ran"
# Client commands retry for about 18 s before they give up: stay down longer than that.
kill "$(cat "$state_dir/run/slurmctld.pid")"
sleep 25
bash "$cluster" start >/dev/null
status=0
wait "$harness" || status=$?
[ "$status" -eq 0 ] && pass || fail "run across a controller restart exited $status: $(cat "$SCRATCH/restart.log")"
grep -q "controller unreachable" "$SCRATCH/restart.log" && pass || fail "the outage was not noticed"

# 7. A requeued job is followed, not lost: it runs again and completes.
(misbehave short --requeue) >"$SCRATCH/requeue.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/requeue.log" "RUNNING" 30 || fail "job never ran"
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$SCRATCH/requeue.log")
scontrol requeue "$job"
# Slurm holds a requeued job for two minutes (BeginTime); release it sooner.
for _ in $(seq 20); do scontrol show job "$job" | grep -q "JobState=PENDING" && break; sleep 0.5; done
# Released before slurmd has finished the first run, the job's new launch is refused ("Job
# credential revoked") and it fails: let the node go idle first, as it would on a real cluster.
for _ in $(seq 40); do scontrol show node localhost | grep -q "State=IDLE " && break; sleep 0.5; done
sleep 3
scontrol update JobId="$job" StartTime=now
status=0
wait "$harness" || status=$?
[ "$status" -eq 0 ] && pass || fail "requeued run exited $status: $(cat "$SCRATCH/requeue.log")"
grep -q "job $job: requeued (restart 1)" "$SCRATCH/requeue.log" && pass || fail "the requeue was not seen: $(cat "$SCRATCH/requeue.log")"
[ "$(run_json "$(latest_run)" 'r["scheduler"]["restarts"]')" = 1 ] && pass || fail "run.json does not count the restart"

# 8. The time limit (Slurm's granularity is a minute).
expect_status 1 "time limit under Slurm" -- bash -c "$(declare -f misbehave); misbehave sleep --set launch.time_limit=1"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = timeout ] && pass || fail "state after the time limit: $(run_json "$run" 'r["state"]')"
# Its failure class (docs/failures.md), from Slurm's TIMEOUT; failure_class.sh covers the others.
expect_eq "failure class after the time limit" time_limit "$(run_json "$run" 'r.get("failure_class")')"
expect_output "the summary names it" "timeout (time_limit): job "

# 9. Rendered Perlmutter job scripts are accepted by the real sbatch; broken ones are not.
for card in workloads/*/*.yaml; do
    grep -q "cluster: perlmutter" "$card" || continue
    name=$(basename "$card" .yaml)
    "$CCL_HARNESS" render -q "$card" --out "$SCRATCH/pm/$name" >/dev/null
    # The test cluster has one node: --nodes=1 on the command line overrides the script's count only.
    (cd "$SCRATCH/pm/$name" && sbatch --test-only --nodes=1 launch.sbatch) >"$SCRATCH/test-only.txt" 2>&1 && pass ||
        fail "sbatch --test-only rejected $name: $(cat "$SCRATCH/test-only.txt")"
done
some=$(find "$SCRATCH/pm" -name launch.sbatch | head -n 1)
[ -n "$some" ] && pass || fail "no Perlmutter reference card rendered"
bad_script() { # bad_script SED: a copy of a rendered script with one defect
    sed "$1" "$some" >"$(dirname "$some")/bad.sbatch"
    (cd "$(dirname "$some")" && sbatch --test-only --nodes=1 bad.sbatch) >/dev/null 2>&1
}
bad_script 's/^#SBATCH --gpus-per-node=4$/#SBATCH --gpus-per-node=8/' && fail "8 GPUs per node accepted" || pass
bad_script 's/^#SBATCH --constraint=.*/#SBATCH --constraint=cpu/' && fail "-C cpu accepted" || pass
bad_script 's/^#SBATCH --time=/#SBATCH --timee=/' && fail "misspelt option accepted" || pass

# 10. A sweep through the cluster: two values of two parameters, one point made to fail (the
#     stand-in entry point fails when run for 10 steps); the other three end with bundles.
sweep_results="$SCRATCH/sweep"
cp workloads/tiny-ddp/train.py "$work/"
expect_status 1 "a 2x2 sweep through slurm-local" -- env MISBEHAVE=fail10 "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" \
    --cluster slurm-local --vary launch.script=train.py,misbehave.py --vary launch.steps=12,10 --results "$sweep_results"
sweep_dir=$(find "$sweep_results" -mindepth 1 -maxdepth 1 -type d -name 'sweep-*' | head -n 1)
/usr/bin/python3 - "$sweep_dir/sweep.json" <<'PY' && pass || fail "sweep.json states: $(cat "$sweep_dir/sweep.json")"
import json, sys
points = json.load(open(sys.argv[1]))["points"]
states = {tuple(p["overrides"]): p["state"] for p in points}
failed = [k for k, v in states.items() if v == "failed"]
assert failed == [("launch.script=misbehave.py", "launch.steps=10")], states
assert sorted(states.values()) == ["completed", "completed", "completed", "failed"], states
PY
bundles=$(find "$sweep_dir" -maxdepth 1 -name '*.tar.zst' | wc -l)
[ "$bundles" -eq 3 ] && pass || fail "the sweep left $bundles bundles, wanted 3"
for bundle in "$sweep_dir"/*.tar.zst; do
    expect_status 0 "a sweep point's bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
done

finish
