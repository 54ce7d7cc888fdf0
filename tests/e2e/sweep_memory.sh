#!/bin/bash
# A sweep's memory does not grow with its workload's output (issue 15): the ranks' output streams
# through to each run's logs/ and to the terminal, and sweep reads each point's RunOutcome, never
# the printed text. Three points whose two ranks print 25 MB each (150 MB in all) must peak where
# three quiet points do, within a margin far below what holding the output would cost.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$(dirname "$0")/fixtures/misbehave.py" "$work/"
sed -i 's/^  script: train.py$/  script: misbehave.py/' "$work/tiny-ddp.yaml"
grep -q '^  script: misbehave.py$' "$work/tiny-ddp.yaml" || fail "the card copy does not run misbehave.py"

# peak_kib MODE: the harness's own peak RSS (KiB) over a 3-point sweep of misbehave.py. VmHWM
# of the harness process itself, read until it exits (GNU time's figure would be the largest
# descendant's: the probe's Python with torch).
peak_kib() {
    local out="$SCRATCH/$1" pid peak=0 hwm status=0
    mkdir -p "$out"
    env MISBEHAVE="$1" "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" --cluster local --vary launch.steps=12,13,14 \
        --results "$results/$1" >"$out/stdout" 2>"$out/stderr" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
        [ -n "$hwm" ] && peak=$hwm
        sleep 0.1
    done
    wait "$pid" || status=$?
    [ "$status" -eq 0 ] || fail "sweep ($1) exited $status: $(tail -n 5 "$out/stderr")"
    echo "$peak"
}

quiet=$(peak_kib quiet)
chatty=$(peak_kib chatty)
echo "sweep_memory: peak RSS quiet ${quiet} KiB, chatty ${chatty} KiB (150 MB of rank output)"
logged=$(cat "$results"/chatty/sweep-*/*/logs/*.log | wc -c)
[ "$logged" -ge 150000000 ] && pass || fail "the chatty ranks' output did not reach the logs (${logged} bytes)"
[ "$(wc -c <"$SCRATCH/chatty/stdout")" -ge 150000000 ] && pass || fail "the chatty ranks' output did not reach the terminal"
# 40 MiB: a third of one point's output; holding every point's would add 150 MB.
[ "$quiet" -gt 0 ] && [ "$chatty" -gt 0 ] && [ "$chatty" -le $((quiet + 40 * 1024)) ] && pass ||
    fail "peak RSS grew with the output: quiet ${quiet} KiB, chatty ${chatty} KiB"
finish
