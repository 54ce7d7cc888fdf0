#!/bin/bash
# `ccl-harness run` on this machine, for real: the tiny DDP workload end to end, then the ways a
# run ends badly (a failing rank, the time limit, Ctrl-C, a rank that writes no trace).
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"

# 1. The real workload: 2 ranks, 2 normalized traces with step markers and gloo collectives.
expect_status 0 "tiny-ddp runs locally" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
expect_output "rank output is prefixed" "[rank_1] "
expect_output "the run ends with its headline metrics" "  metrics: avg_step_time "
# Issue 26: descriptors a caller left open (a CI runner, ctest, a multiplexer) change nothing; the
# harness's children start with stdin, stdout and stderr only (tests/unit/test_process.cpp).
expect_status 0 "tiny-ddp runs with descriptors 3-12 open in the caller" -- bash -c \
    'for fd in 3 4 5 6 7 8 9 10 11 12; do eval "exec $fd</dev/null"; done; exec "$@"' stray-descriptors \
    "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
run=$(latest_run)
expect_json "$run/run.json" 'j["state"]' completed "state is not completed"
[ "$(run_json "$run" '[t["state"] for t in r["transitions"]]')" = "['rendered', 'running', 'completed']" ] && pass ||
    fail "transitions: $(run_json "$run" 'r["transitions"]')"
expect_json "$run/run.json" '[k["exit_code"] for k in j["ranks"]]' "[0, 0]" "rank exit codes"
for rank in 0 1; do
    trace="$run/traces/kineto_trace_$rank.json"
    if /usr/bin/python3 - "$trace" "$rank" <<'PY'; then pass; else fail "trace $trace is not a normalized Kineto trace"; fi
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, dict) and isinstance(d["traceEvents"], list), "object form"
assert d["distributedInfo"]["rank"] == int(sys.argv[2]) and d["distributedInfo"]["world_size"] == 2
assert d["distributedInfo"]["backend"] == "gloo"
events = d["traceEvents"]
assert all("cat" in e for e in events if e.get("ph") == "X"), "every complete event has cat"
steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
assert len(steps) == 5 and all(e["cat"] == "user_annotation" and e["ph"] == "X" for e in steps), steps
# The window is wait 1 + warm-up 2, so Kineto numbers the recorded steps 3..7.
assert sorted(int(e["name"].split("#")[1]) for e in steps) == [3, 4, 5, 6, 7], [e["name"] for e in steps]
assert any("gloo" in e["name"] or "allreduce" in e["name"] for e in events), "gloo collectives"
PY
done
[ -d "$run/rendered" ] && [ -f "$run/card.yaml" ] && [ -f "$run/plan.json" ] && [ -f "$run/logs/rank_0.log" ] && pass ||
    fail "run directory layout"
[ ! -e "$run/rendered/traces" ] && pass || fail "raw traces left in rendered/"

# Fixtures: the same card with a stand-in entry point, to make ranks misbehave on purpose.
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$work/"
cp "$(dirname "$0")/fixtures/misbehave.py" "$work/"

start=$(date +%s)
expect_status 1 "a failing rank fails the run" -- env MISBEHAVE=fail "$CCL_HARNESS" run "$work/tiny-ddp.yaml" \
    --set launch.script=misbehave.py --results "$results" --grace 2
run=$(latest_run)
[ $(( $(date +%s) - start )) -lt 60 ] && pass || fail "the other rank was not stopped"
expect_json "$run/run.json" 'j["state"]' failed "state after a failing rank"
expect_output "exit code reported" "rank_1 ended with exit 3"
expect_output "log tail reported" "rank 1: simulated crash"
expect_json "$run/run.json" 'j["ranks"][1]["exit_code"]' 3 "rank 1 exit code"
expect_json "$run/run.json" 'j["ranks"][0]["signal"]' 15 "rank 0 was not stopped with SIGTERM"

# Issue 31: a workload's output reaches the terminal escaped (its log keeps the bytes), and a
# progress bar's carriage returns leave its last state, as a terminal would show it.
expect_status 0 "a workload printing escape sequences" -- env MISBEHAVE=escapes "$CCL_HARNESS" run "$work/tiny-ddp.yaml" \
    --set launch.script=misbehave.py --results "$results"
if grep -q $'\x1b' <<<"$OUT"; then fail "an escape sequence reached the terminal"; else pass; fi
expect_output "shown escaped" '[rank_0] \x1b]0;owned\x07\x1b[2Jrank 0 cleared your screen'
expect_output "a progress bar's last state" '[rank_1] 100%|####|'
grep -q $'\x1b\[2J' "$(latest_run)/logs/rank_0.log" && pass || fail "the log lost the workload's bytes: $(ls "$(latest_run)/logs")"

expect_status 1 "time limit" -- env MISBEHAVE="sleep" "$CCL_HARNESS" run "$work/tiny-ddp.yaml" \
    --set launch.script=misbehave.py --set launch.time_limit=00:00:02 --results "$results" --grace 1
run=$(latest_run)
expect_json "$run/run.json" 'j["state"]' timeout "state after the time limit"

expect_status 1 "a rank without a trace" -- env MISBEHAVE=notrace "$CCL_HARNESS" run "$work/tiny-ddp.yaml" \
    --set launch.script=misbehave.py --results "$results"
run=$(latest_run)
expect_json "$run/run.json" 'j["state"]' failed "state with a missing trace"
expect_output "missing rank named" "traces missing: no kineto_trace_1.json (rank 1)"

# Ctrl-C: SIGINT to the harness stops every rank and records "cancelled"; exit 130.
MISBEHAVE="sleep" "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=misbehave.py --results "$results" \
    --grace 1 >"$SCRATCH/interrupt.log" 2>&1 &
harness=$!
for _ in $(seq 50); do grep -q "starting" "$SCRATCH/interrupt.log" 2>/dev/null && break; sleep 0.2; done
kill -INT "$harness"
status=0
wait "$harness" || status=$?
[ "$status" -eq 130 ] && pass || fail "Ctrl-C exit status $status"
run=$(latest_run)
expect_json "$run/run.json" 'j["state"]' cancelled "state after Ctrl-C"
pgrep -f "$work" >/dev/null && fail "ranks survived Ctrl-C" || pass
/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$run/run.json" && pass || fail "run.json half-written"

# --dry-run prints the submission and writes nothing.
before=$(ls "$results" | wc -l)
expect_status 0 "dry run" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results" --dry-run
expect_output "dry run says what" "would submit: 2 local ranks"
[ "$(ls "$results" | wc -l)" -eq "$before" ] && pass || fail "--dry-run created a run directory"

# A card that cannot run is refused before anything is created.
expect_status 2 "strict check before running" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results" \
    --set Model-executor.model_plan_parallelization.dp_replicate=3
[ "$(ls "$results" | wc -l)" -eq "$before" ] && pass || fail "a refused card created a run directory"

# run --repeat N: N runs of the card, each its own run directory and bundle, and the spread of the
# headline metrics over them.
"$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local --results "$SCRATCH/repeat" --repeat 2 --json \
    >"$SCRATCH/repeat.json" 2>"$SCRATCH/repeat.err" && pass || fail "run --repeat 2: $(tail -5 "$SCRATCH/repeat.err")"
expect_json "$SCRATCH/repeat.json" '(len(j["runs"]), j["completed"], j["exit_code"])' "(2, 2, 0)"
expect_json "$SCRATCH/repeat.json" 'len({r["run_dir"] for r in j["runs"]})' 2
expect_json "$SCRATCH/repeat.json" \
    'all(s["min"] <= s["mean"] <= s["max"] and s["runs"] == 2 for s in j["spread"].values()) and "avg_step_time" in j["spread"]' True
expect_eq "two bundles" 2 "$(ls "$SCRATCH"/repeat/*.tar.zst | grep -c .)"
expect_status 0 "the summary in words" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local \
    --results "$SCRATCH/repeat" --repeat 2
expect_output "the spread" "avg_step_time over 2 runs: mean"
expect_status 2 "--repeat 0" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --repeat 0
expect_output "says the range" "--repeat 0: expected 1 to 100 runs"
expect_status 2 "--repeat with --reuse" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --repeat 2 --reuse
expect_output "says why" "repeats are new runs"

finish
