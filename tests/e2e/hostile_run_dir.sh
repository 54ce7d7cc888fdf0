#!/bin/bash
# A run directory is input: one from shared scratch or a colleague is handed to `attach`. run.json
# fields that are not their declared type (a job id that is an option, a newline, 100,000 digits)
# are refused with exit 2 naming run.json and the field before any Slurm tool runs (stubs on PATH
# record every call); symbolic links for traces/ and logs/ are refused and nothing is written where
# they point. On the test cluster: a second Ctrl-C during the wait after scancel ends the harness
# at once (130), the run kept open with its cancel pending, and `attach` finishes it.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"

# Stubs for every Slurm tool: each records its argv and succeeds, so a call shows in the log.
stubs="$SCRATCH/stubs"
calls="$SCRATCH/slurm-calls.log"
mkdir -p "$stubs"
for tool in scancel scontrol sacct squeue sbatch sinfo; do
    printf '#!/bin/bash\nprintf "%%s" "%s" >>"%s"; printf " [%%s]" "$@" >>"%s"; echo >>"%s"\n' \
        "$tool" "$calls" "$calls" "$calls" >"$stubs/$tool"
    chmod +x "$stubs/$tool"
done
# Bounded: a harness that took a hostile id would follow the stubs' empty answers for ever.
stubbed() { PATH="$stubs:$PATH" timeout -k 5 20 "$@"; }

# A run directory by hand (run/run_record.cpp's keys): a Slurm run, submitted, with the job ids
# JOB_IDS_JSON, then the members of EXTRA_JSON (an object) over those.
write_run() { # write_run DIR JOB_IDS_JSON [EXTRA_JSON]
    mkdir -p "$1/rendered" "$1/logs" "$1/traces"
    cp workloads/tiny-ddp/* "$1/rendered/"
    cp workloads/tiny-ddp/tiny-ddp.yaml "$1/rendered/card.yaml"
    cp workloads/tiny-ddp/tiny-ddp.yaml "$1/card.yaml"
    echo '{}' >"$1/plan.json"
    /usr/bin/python3 -c '
import json, os, sys
record = {"format": 1, "run_id": os.path.basename(sys.argv[1]), "card": "tiny-ddp", "target": "slurm-local",
          "executor": "slurm", "state": "submitted", "reason": "", "job_ids": json.loads(sys.argv[2]),
          "transitions": [{"state": "submitted", "time": "2026-11-24T12:15:00Z"}], "ranks": [], "traces": [],
          "scheduler": {}, "harness": None}
record.update(json.loads(sys.argv[3] or "{}"))
json.dump(record, open(os.path.join(sys.argv[1], "run.json"), "w"))
' "$1" "$2" "${3:-}"
}

hostile="$SCRATCH/hostile"
# 1. Job ids that are not job ids: refused (2), run.json and the field named, no Slurm tool run.
check_refused() { # check_refused WHAT FIELD JOB_IDS_JSON [EXTRA]
    local dir
    dir="$hostile/$(echo "$1" | tr -c 'a-z0-9\n' '-' | sed 's/^-*//')"
    write_run "$dir" "$3" "${4:-}"
    rm -f "$calls"
    expect_status 2 "attach, $1" -- stubbed "$CCL_HARNESS" attach "$dir"
    expect_output "attach, $1: names run.json and the field" "run.json: $2"
    [ ! -e "$calls" ] && pass || fail "attach, $1: a Slurm tool ran: $(cat "$calls")"
}
check_refused "an option as job id" "job_ids[0]: \"--user=root\": not a Slurm job id" '["--user=root"]'
check_refused "--help as job id" "job_ids[0]: \"--help\"" '["--help"]'
check_refused "a newline in a job id" 'job_ids[0]: control character in "42\n43"' '["42\n43"]'
check_refused "100000 digits" "job_ids[0]: " "[\"$(printf '7%.0s' $(seq 100000))\"]"
check_refused "an option as detached_job" "detached_job: \"-u root\"" '["42"]' '{"detached_job": "-u root"}'
check_refused "an option as pending cancel" "scheduler.cancel_pending: " '["42"]' '{"scheduler": {"cancel_pending": "--user=root"}}'
check_refused "an unknown state" 'state: unknown state "exploded"' '["42"]' '{"state": "exploded"}'
check_refused "a time that does not parse" "transitions[0].time: \"soon\" is not a UTC time" '["42"]' \
    '{"transitions": [{"state": "submitted", "time": "soon"}]}'
check_refused "an escape in target" "target: control character" '["42"]' '{"target": "slurm-local\u001b]0;owned\u0007"}'
check_refused "a profile file as target" "target: " '["42"]' '{"target": "/tmp/their-profile.yaml"}'
check_refused "a trace outside the run" "traces[0]: " '["42"]' '{"traces": ["../../../.bashrc"]}'
check_refused "an unknown executor" 'executor: unknown executor "ssh"' '["42"]' '{"executor": "ssh"}'
check_refused "a TPU name as option" "job_ids[0]: " '["--zone=elsewhere"]' '{"executor": "tpu-vm"}'
# A failed run's reason quotes its log as the job wrote it (tqdm's carriage returns, colour codes):
# that is read, not refused (it is printed escaped).
write_run "$hostile/tqdm-reason" '["42"]' \
    '{"state": "failed", "reason": "rank 0 ended with exit 1; last lines:\n\u001b[31mError\u001b[0m  45%|####  \r 46%|####"}'
rm -f "$calls"
stubbed "$CCL_HARNESS" attach "$hostile/tqdm-reason" >"$SCRATCH/tqdm.out" 2>&1 || true
if grep -q "run.json: reason" "$SCRATCH/tqdm.out"; then fail "a reason with log control characters refused: $(cat "$SCRATCH/tqdm.out")"; else pass; fi
grep -qF '\x1b[31mError' "$SCRATCH/tqdm.out" && pass || fail "the reason is not shown escaped: $(cat -A "$SCRATCH/tqdm.out")"
if grep -q $'\x1b\|\r' "$SCRATCH/tqdm.out"; then fail "raw control characters printed: $(cat -A "$SCRATCH/tqdm.out")"; else pass; fi
expect_status 2 "compare, a hostile run directory" -- stubbed "$CCL_HARNESS" compare "$hostile/an-option-as-job-id" \
    "$hostile/an-option-as-job-id"
expect_output "compare names run.json and the field" "run.json: job_ids[0]"
# status reads run.json through the same checks: each hostile record is listed unreadable, with
# the field that makes it so (it showed "submitted" for a job id that is an option).
expect_status 0 "status over the hostile run directories" -- "$CCL_HARNESS" status "$hostile"
expect_output "status names the job id field" 'run.json: job_ids[0]: "--user=root": not a Slurm job id'
expect_output "status names the target field" 'run.json: target: control character in'
if grep -E -q "^an-option-as-job-id +(submitted|running)" <<<"$OUT"; then fail "status took the record's state: $OUT"; else pass; fi

# 2. Symbolic links for the run directory's folders: refused (2), nothing written where they point.
victim="$SCRATCH/victim"
mkdir -p "$victim"
for folder in traces logs rendered/logs accounting; do
    dir="$hostile/linked-${folder//\//-}"
    write_run "$dir" '["42"]'
    rm -rf "${dir:?}/$folder"
    mkdir -p "$(dirname "$dir/$folder")"
    ln -s "$victim" "$dir/$folder"
    rm -f "$calls"
    expect_status 2 "attach, $folder/ a link" -- stubbed "$CCL_HARNESS" attach "$dir"
    expect_output "attach, $folder/ a link: says so" "$folder/ is a symbolic link; a run directory's folders must be its own"
    [ ! -e "$calls" ] && pass || fail "attach, $folder/ a link: a Slurm tool ran: $(cat "$calls")"
    expect_eq "attach, $folder/ a link: nothing written where it points" "" "$(ls -A "$victim")"
done
dir="$hostile/linked-run-json"
write_run "$dir" '["42"]'
mv "$dir/run.json" "$SCRATCH/elsewhere.json"
ln -s "$SCRATCH/elsewhere.json" "$dir/run.json"
expect_status 2 "attach, run.json a link" -- stubbed "$CCL_HARNESS" attach "$dir"
expect_output "attach, run.json a link: says so" "run.json is a symbolic link"

# 2b. A sweep directory is input too: sweep.json's overrides are printed by --resume, escaped
# one line each (a newline drew a fake progress line, an escape sequence cleared the screen).
sweep_work="$SCRATCH/sweep-card"
mkdir -p "$sweep_work"
cp workloads/tiny-ddp/tiny-ddp.yaml tests/e2e/fixtures/misbehave.py "$sweep_work/"
expect_status 0 "a one-point local sweep" -- "$CCL_HARNESS" sweep "$sweep_work/tiny-ddp.yaml" --cluster local \
    --vary launch.script=misbehave.py --results "$SCRATCH/sweeps"
sweep_dir=$(ls -d "$SCRATCH/sweeps"/sweep-*/ | head -n 1)
/usr/bin/python3 - "$sweep_dir/sweep.json" <<'PY'
import json, sys
path = sys.argv[1]
s = json.load(open(path))
s["points"][0].update(state="pending", run_dir="", bundle="", reason="",
                      overrides=["launch.steps=1\u001b[2J\nsweep x: point 1/1: (card as is)"])
json.dump(s, open(path, "w"))
PY
OUT=$("$CCL_HARNESS" sweep --resume "$sweep_dir" 2>&1) || true
if grep -q $'\x1b' <<<"$OUT"; then fail "resume printed an escape sequence: $OUT"; else pass; fi
if grep -q "^sweep x: point 1/1" <<<"$OUT"; then fail "an override drew its own line: $OUT"; else pass; fi
expect_output "resume shows the override escaped" 'launch.steps=1\x1b[2J\nsweep x: point 1/1'

# 3. On the test cluster: a real run directory with traces/ linked elsewhere, and the second Ctrl-C.
cluster=clusters/slurm-local/cluster.sh
if ! bash "$cluster" start >/dev/null 2>&1; then
    echo "hostile_run_dir: the test cluster does not start here: its checks are skipped" >&2
    finish || exit 1
    exit 125
fi
eval "$(bash "$cluster" env)"
results="$SCRATCH/results"
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml tests/e2e/fixtures/misbehave.py "$work/"
wait_for() { # wait_for FILE TEXT SECONDS
    local i
    for ((i = 0; i < $3 * 5; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}

# A detached real run whose traces/ is replaced by a link: attach refuses before following it.
expect_status 0 "run --detach" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-local --results "$results" \
    --detach
run=$(latest_run)
run=${run%/}
rmdir "$run/traces"
ln -s "$victim" "$run/traces"
expect_status 2 "attach a real run whose traces/ is a link" -- "$CCL_HARNESS" attach "$run"
expect_output "attach a real run whose traces/ is a link: says so" "traces/ is a symbolic link"
expect_eq "the real run: nothing written where traces/ points" "" "$(ls -A "$victim")"
expect_eq "the real run: still open" submitted "$(run_json "$run" 'r["state"]')"
rm "$run/traces"
mkdir "$run/traces"
expect_status 0 "attach once its traces/ is its own" -- "$CCL_HARNESS" attach "$run"
expect_eq "attach once its traces/ is its own: completed" completed "$(run_json "$run" 'r["state"]')"

# The second Ctrl-C: a scancel that does not take (a stub) keeps the real job RUNNING after the
# first; the second ends the harness at once, the cancel left pending in run.json.
mkdir -p "$stubs-scancel"
cp "$stubs/scancel" "$stubs-scancel/scancel"
(MISBEHAVE=sleep PATH="$stubs-scancel:$PATH" exec "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --cluster slurm-local \
    --set launch.script=misbehave.py --results "$results") >"$SCRATCH/twice.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/twice.log" "RUNNING" 60 || fail "the job never ran: $(cat "$SCRATCH/twice.log")"
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$SCRATCH/twice.log")
rm -f "$calls"
kill -INT "$harness"
wait_for "$SCRATCH/twice.log" "Ctrl-C again to stop waiting" 10 && pass || fail "the wait is not said: $(cat "$SCRATCH/twice.log")"
# The wait is said before scancel runs (executor_slurm.cpp's cancelling event): wait for the call.
wait_for "$calls" "scancel.*\[$job\]" 10 || true
expect_eq "the first Ctrl-C ran scancel with the job after --" "scancel [--] [$job]" "$(cat "$calls" 2>/dev/null)"
sleep 3
scontrol show job "$job" | grep -q "JobState=RUNNING" && pass || fail "job $job is not running after the stub scancel"
start=$SECONDS
kill -INT "$harness"
status=0
wait "$harness" || status=$?
expect_eq "the second Ctrl-C: exit status" 130 "$status"
[ $((SECONDS - start)) -le 5 ] && pass || fail "the second Ctrl-C took $((SECONDS - start)) s"
grep -q "cancel pending" "$SCRATCH/twice.log" && pass || fail "no word of the pending cancel: $(cat "$SCRATCH/twice.log")"
run=$(latest_run)
run=${run%/}
expect_eq "pending: run.json's job" "$job" "$(run_json "$run" 'r["scheduler"].get("cancel_pending")')"
expect_eq "pending: the run stays open" True "$(run_json "$run" 'r["state"] in ("submitted", "running")')"
expect_eq "pending: the reason says so" True "$(run_json "$run" '"cancel pending" in r["reason"]')"
expect_eq "pending: no harness follows it" None "$(run_json "$run" 'r["harness"]')"
expect_eq "pending: its job id kept" "$job" "$(run_json "$run" 'r["detached_job"]')"
# attach (the real scancel now) sends the cancel again and finishes the record.
expect_status 130 "attach finishes the pending cancel" -- "$CCL_HARNESS" attach "$run" --no-pack
expect_output "attach says it cancels again" "its cancel was pending; sending scancel again"
expect_eq "attach: the run is cancelled" cancelled "$(run_json "$run" 'r["state"]')"
scontrol show job "$job" | grep -q "JobState=CANCELLED" && pass || fail "job $job not cancelled in Slurm"

# The same for a sweep's job array: each task's run keeps its cancel pending, for attach.
(MISBEHAVE=sleep PATH="$stubs-scancel:$PATH" exec "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" --cluster slurm-local \
    --vary launch.script=misbehave.py --results "$results") >"$SCRATCH/twice-array.log" 2>&1 &
harness=$!
wait_for "$SCRATCH/twice-array.log" "RUNNING" 60 || fail "the array task never ran: $(cat "$SCRATCH/twice-array.log")"
array=$(sed -n 's/.*submitted job array \([0-9]*\).*/\1/p' "$SCRATCH/twice-array.log")
kill -INT "$harness"
wait_for "$SCRATCH/twice-array.log" "cancelling job array" 10 || fail "no cancel: $(cat "$SCRATCH/twice-array.log")"
sleep 2
kill -INT "$harness"
status=0
wait "$harness" || status=$?
expect_eq "the sweep's second Ctrl-C: exit status" 130 "$status"
sweep_dir=$(ls -dt "$results"/sweep-*/ | head -n 1)
task_run=$(dirname "$(ls "$sweep_dir"*/run.json | head -n 1)")
task_run=${task_run%/}
expect_eq "array: the task's run keeps its cancel pending" "${array}_0" "$(run_json "$task_run" 'r["scheduler"].get("cancel_pending")')"
expect_eq "array: the task's run stays open" True "$(run_json "$task_run" 'r["state"] in ("submitted", "running")')"
expect_status 130 "attach finishes the array task's pending cancel" -- "$CCL_HARNESS" attach "$task_run" --no-pack
expect_output "attach cancels the task again" "its cancel was pending; sending scancel again"
expect_eq "array: the task's run is cancelled" cancelled "$(run_json "$task_run" 'r["state"]')"

finish
