#!/bin/bash
# Detach and attach through the real one-node Slurm cluster (clusters/slurm-local): `run --detach`,
# a harness killed -9 mid-job and one sent SIGHUP, each taken to a verified bundle by `attach`;
# attach of a finished run, of a nonsense directory, and while another attach holds the run.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-local/cluster.sh
if ! bash "$cluster" start >/dev/null 2>&1; then
    echo "attach: skipped: clusters/slurm-local does not start here" >&2
    exit 125
fi
eval "$(bash "$cluster" env)"
results="$SCRATCH/results"
card=workloads/tiny-ddp/tiny-ddp.yaml

wait_for() { # wait_for FILE TEXT SECONDS
    local i
    for ((i = 0; i < $3 * 5; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}

# A run attach finished is what `run` would have left: completed, both ranks' traces, the
# accounting, provenance with the job and the ranks' hosts, and a bundle verify accepts.
check_finished() { # check_finished RUN_DIR WHAT
    local run=${1%/} what=$2
    expect_eq "$what: state" completed "$(run_json "$run" 'r["state"]')"
    expect_eq "$what: traces" "['kineto_trace_0.json', 'kineto_trace_1.json']" "$(run_json "$run" 'sorted(r["traces"])')"
    for rank in 0 1; do
        [ -s "$run/traces/kineto_trace_$rank.json" ] && pass || fail "$what: no trace of rank $rank"
        [ -s "$run/logs/rank_$rank.log" ] && pass || fail "$what: no log of rank $rank"
    done
    grep -q "COMPLETED" "$run/accounting/sacct.txt" && pass || fail "$what: no accounting"
    expect_json "$run/provenance.json" \
        'bool(j["harness"]["commit"]) and bool(j["inputs"]) and len(j["hosts"]) > 0 and len(j["scheduler"]["job_ids"]) == 1 and "accounting" in j["scheduler"]' \
        True "$what: provenance complete"
    [ -s "$run/metrics.json" ] && pass || fail "$what: no metrics.json"
    expect_status 0 "$what: the bundle verifies" -- "$CCL_HARNESS" verify "$run.tar.zst"
    expect_output "$what: both traces bundled" "2 traces"
}

# 1. run --detach returns at once with the run and how to attach; the job goes on.
expect_status 0 "run --detach" -- "$CCL_HARNESS" run "$card" --cluster slurm-local --results "$results" --detach
expect_output "run --detach names the command to attach" "follow it to the end with: ccl-harness attach $results/"
run=$(latest_run)
run=${run%/}
job=$(run_json "$run" 'r["job_ids"][0]')
expect_eq "detached run: state" submitted "$(run_json "$run" 'r["state"]')"
expect_eq "detached run: no harness follows it" None "$(run_json "$run" 'r["harness"]')"
expect_eq "detached run: its job" "$job" "$(run_json "$run" 'r["detached_job"]')"
launch_sum=$(sha256sum <"$run/rendered/launch.sbatch")
expect_status 0 "attach a detached run" -- "$CCL_HARNESS" attach "$run"
expect_output "attach says what it follows" "attached to run $(basename "$run"): job $job"
check_finished "$run" "run --detach, then attach"
expect_eq "rendered/ is what ran" "$launch_sum" "$(sha256sum <"$run/rendered/launch.sbatch")"

# ...and --json gives the same as data.
expect_status 0 "run --detach --json" -- sh -c "\"\$0\" run $card --cluster slurm-local --results $results --detach --json >$SCRATCH/detach.json 2>/dev/null" "$CCL_HARNESS"
expect_json "$SCRATCH/detach.json" '(j["state"], j["exit_code"], j["attach"] == "ccl-harness attach " + j["run_dir"], bool(j["detached_job"]))' \
    "('submitted', 0, True, True)"
json_run=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_dir"])' "$SCRATCH/detach.json")

# 2. Another attach while one follows the run is refused, and leaves it to the first.
"$CCL_HARNESS" attach "$json_run" >"$SCRATCH/first-attach.log" 2>&1 &
first=$!
wait_for "$SCRATCH/first-attach.log" "attached to run" 30 && pass || fail "the first attach did not start: $(cat "$SCRATCH/first-attach.log")"
expect_status 1 "a second attach at once" -- "$CCL_HARNESS" attach "$json_run"
expect_output "a second attach says who holds the run" "another \`ccl-harness attach\` is following this run"
first_status=0
wait "$first" || first_status=$?
expect_eq "the first attach finishes the run" 0 "$first_status"
check_finished "$json_run" "attach --json's run, attached once"

# 3. The harness killed -9 mid-job: run.json says running with the job; attach loses nothing.
"$CCL_HARNESS" run "$card" --cluster slurm-local --results "$results" >"$SCRATCH/killed.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/killed.log" "RUNNING" 60 && pass || fail "the job did not start: $(cat "$SCRATCH/killed.log")"
kill -9 "$harness"
wait "$harness" 2>/dev/null || true
run=$(latest_run)
run=${run%/}
expect_eq "killed harness: state left" running "$(run_json "$run" 'r["state"]')"
expect_status 0 "attach the run of a killed harness" -- "$CCL_HARNESS" attach "$run"
check_finished "$run" "killed -9, then attach"
expect_eq "killed -9, then attach: transitions" "['rendered', 'submitted', 'running', 'completed']" \
    "$(run_json "$run" '[t["state"] for t in r["transitions"]]')"

# 4. SIGHUP (a dropped SSH session) is a detach: exit 0, the job untouched, attach finishes it.
"$CCL_HARNESS" run "$card" --cluster slurm-local --results "$results" >"$SCRATCH/hangup.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/hangup.log" "submitted job" 60 && pass || fail "no submission: $(cat "$SCRATCH/hangup.log")"
kill -HUP "$harness"
hangup_status=0
wait "$harness" || hangup_status=$?
expect_eq "SIGHUP: run exits as a detach" 0 "$hangup_status"
grep -q "detached from Slurm job" "$SCRATCH/hangup.log" && pass || fail "SIGHUP: no detach said: $(cat "$SCRATCH/hangup.log")"
run=$(latest_run)
run=${run%/}
job=$(run_json "$run" 'r["job_ids"][0]')
state=$(squeue -h -j "$job" -o %T 2>/dev/null || true)
state=${state:-$(sacct -X -n -P -j "$job" -o State 2>/dev/null | head -n 1)}
case "$state" in
PENDING | RUNNING | COMPLETING | COMPLETED) pass ;;
*) fail "SIGHUP: job $job is [$state], not left to run" ;;
esac
expect_status 0 "attach after SIGHUP" -- "$CCL_HARNESS" attach "$run"
check_finished "$run" "SIGHUP, then attach"

# 5. Attaching a run already final says so and changes nothing.
record_sum=$(sha256sum <"$run/run.json")
expect_status 0 "attach a completed run" -- "$CCL_HARNESS" attach "$run"
expect_output "attach of a completed run says so" "had already ended; nothing changed"
expect_output "attach of a completed run names its bundle" "bundle: $run.tar.zst"
expect_eq "attach of a completed run changes nothing" "$record_sum" "$(sha256sum <"$run/run.json")"

# 6. A nonsense directory: exit 2 and one error line.
mkdir -p "$SCRATCH/nonsense"
expect_status 2 "attach a directory that is no run" -- "$CCL_HARNESS" attach "$SCRATCH/nonsense"
expect_eq "one error line" 1 "$(grep -c . <<<"$OUT")"
expect_output "the error says what is wrong" "ccl-harness: error: $SCRATCH/nonsense: not a run directory"

# 7. --detach on a target whose job ends with the harness is refused before anything runs.
expect_status 2 "run --detach on local" -- "$CCL_HARNESS" run "$card" --cluster local --results "$SCRATCH/local" --detach
expect_output "run --detach on local says why" "--detach needs a Slurm target"
[ ! -e "$SCRATCH/local" ] && pass || fail "run --detach on local created $SCRATCH/local"

finish
