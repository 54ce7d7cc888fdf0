#!/bin/bash
# Failure classes (docs/failures.md): runs that end badly in known ways, locally and on the
# slurm-local test cluster, each recorded in run.json with its class and evidence, said in the
# summary, shown by `status` and carried by --json.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"

# The tiny-ddp card with a stand-in entry point, chosen by $FAILCLASS: rank 1 ends the way a
# framework does, the other ranks wait to be stopped.
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$work/"
cat >"$work/failclass.py" <<'PY'
import argparse, os, sys, time
rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
mode = os.environ["FAILCLASS"]
print(f"rank {rank} starting ({mode})", flush=True)
if rank == 1 and mode == "oom":
    # torch.OutOfMemoryError's message (c10/cuda/CUDACachingAllocator.cpp), as a traceback ends.
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "train.py", line 80, in <module>', file=sys.stderr)
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
          "79.10 GiB of which 3.06 GiB is free.", file=sys.stderr, flush=True)
    sys.exit(1)
if rank == 1 and mode == "flag":
    # argparse itself, refusing the launch's arguments: "error: unrecognized arguments", exit 2.
    argparse.ArgumentParser(prog="train.py").parse_args()
if rank == 1 and mode == "plain":
    print("rank 1: something nobody has seen before", flush=True)
    sys.exit(3)
time.sleep(120)
PY

failclass() { # failclass MODE [ARGS...]: runs the stand-in card locally
    local mode=$1
    shift
    FAILCLASS=$mode "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=failclass.py --results "$results" --grace 1 "$@"
}
class_of() { run_json "$1" 'r.get("failure_class")'; }

# 1. Device memory: run.json, the summary, status and status --json.
expect_status 1 "a rank out of device memory" -- failclass oom
run=$(latest_run)
expect_eq "run.json failure_class after CUDA OOM" out_of_memory_device "$(class_of "$run")"
expect_output "the summary names the class" "failed (out_of_memory_device): rank_1 ended with exit 1"
expect_output "the summary quotes the evidence" 'failure class out_of_memory_device: logs/rank_1.log: "torch.OutOfMemoryError: CUDA out of memory.'
run_json "$run" 'r["failure_evidence"]' | grep -q "CUDACachingAllocator.cpp" && pass || fail "evidence lacks its source: $(run_json "$run" 'r["failure_evidence"]')"
expect_status 0 "status after the OOM" -- "$CCL_HARNESS" status "$results"
expect_output "status shows the class" "  failure class out_of_memory_device: logs/rank_1.log: "
json=$("$CCL_HARNESS" status "$results" --json 2>/dev/null) || fail "status --json exited $?"
/usr/bin/python3 -c '
import json, sys
runs = json.loads(sys.argv[1])["runs"]
assert runs[-1]["failure_class"] == "out_of_memory_device", runs[-1]
assert runs[-1]["failure_evidence"].startswith("logs/rank_1.log: "), runs[-1]
' "$json" && pass || fail "status --json: $json"

# 2. The framework refusing its arguments (argparse, exit 2), with run --json.
code=0
json=$(failclass flag --json 2>/dev/null) || code=$?
expect_eq "a rank refusing its arguments: exit status" 1 "$code"
/usr/bin/python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert j["state"] == "failed" and j["failure_class"] == "framework_refused_flag", j
assert "error: unrecognized arguments" in j["failure_evidence"], j["failure_evidence"]
' "$json" && pass || fail "run --json: $json"
expect_eq "run.json failure_class after argparse's refusal" framework_refused_flag "$(class_of "$(latest_run)")"

# 3. A plain failure stays unknown, with what was looked at.
expect_status 1 "a plain failure" -- failclass plain
run=$(latest_run)
expect_eq "run.json failure_class of a plain failure" unknown "$(class_of "$run")"
run_json "$run" 'r["failure_evidence"]' | grep -q "rank_1 exit 3; no known signature in" && pass ||
    fail "unknown's evidence: $(run_json "$run" 'r["failure_evidence"]')"

# 4. The time limit, locally (the executor's own clock).
expect_status 1 "past the local time limit" -- failclass sleep --set launch.time_limit=00:00:02
expect_eq "run.json failure_class past the time limit" time_limit "$(class_of "$(latest_run)")"

# 5. A completed run has no class; a record an older harness wrote (without one) still loads, and
#    a hand-edited class outside the table is refused, naming the file and field.
expect_status 0 "a completed run" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
expect_eq "no failure_class when completed" None "$(class_of "$(latest_run)")"
edited() { # edited NAME PYTHON: a copy of the plain failure's run directory, its run.json (r) edited
    mkdir -p "$SCRATCH/$1"
    cp -r "$run" "$SCRATCH/$1/"
    /usr/bin/python3 -c 'import json,sys; p=sys.argv[1]; r=json.load(open(p)); exec(sys.argv[2]); json.dump(r, open(p, "w"))' \
        "$SCRATCH/$1/$(basename "$run")/run.json" "$2"
}
edited older 'r.pop("failure_class"); r.pop("failure_evidence")'
expect_status 0 "status over an older record" -- "$CCL_HARNESS" status "$SCRATCH/older"
expect_output "an older record is listed as failed" " failed "
grep -q "run.json" <<<"$OUT" && fail "an older record is refused: $OUT" || pass
edited gremlins 'r["failure_class"] = "gremlins"'
expect_status 0 "status over a record with an unknown class" -- "$CCL_HARNESS" status "$SCRATCH/gremlins"
expect_output "the field is named" 'run.json: failure_class: unknown failure class "gremlins"'

# 6. On the test cluster: scancel from outside is "cancelled" (skipped when it is down).
cluster=clusters/slurm-local/cluster.sh
if bash "$cluster" start >/dev/null 2>&1; then
    eval "$(bash "$cluster" env)"
    log="$SCRATCH/scancel.log"
    env FAILCLASS=sleep "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --cluster slurm-local --set launch.script=failclass.py \
        --results "$results" >"$log" 2>&1 &
    harness=$!
    for _ in $(seq 150); do grep -q "RUNNING" "$log" 2>/dev/null && break; sleep 0.2; done
    job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$log")
    [ -n "$job" ] && scancel "$job"
    wait "$harness" || true
    run=$(latest_run)
    expect_eq "run.json failure_class after scancel" cancelled "$(class_of "$run")"
    run_json "$run" 'r["failure_evidence"]' | grep -q "Slurm state CANCELLED" && pass ||
        fail "scancel's evidence: $(run_json "$run" 'r["failure_evidence"]'); $(cat "$log")"
    # A failed Slurm job: its rank's OOM line decides, not Slurm's FAILED.
    expect_status 1 "a rank out of device memory under Slurm" -- env FAILCLASS=oom "$CCL_HARNESS" run "$work/tiny-ddp.yaml" \
        --cluster slurm-local --set launch.script=failclass.py --results "$results"
    expect_eq "run.json failure_class under Slurm" out_of_memory_device "$(class_of "$(latest_run)")"
    expect_eq "Slurm's final state kept for the class" FAILED "$(run_json "$(latest_run)" 'r["scheduler"]["slurm_state"]')"
    # Slurm's time limit (a minute at least) is run_slurm.sh's case 8, which checks its class too.
else
    echo "slurm-local is not up: the Slurm checks are skipped"
fi

finish
