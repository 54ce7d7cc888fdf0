#!/bin/bash
# The metrics benchmark: one Kineto trace of SIZE_MB (default 1100 MB), `ccl-harness metrics
# --reference` against reference.py (json.load and the same formulas) in one run, each under
# /usr/bin/time -v. Prints wall time, the speed ratio, both peak RSS (and as a multiple of the
# trace size), and checks that the two agree to 1e-9 relative.
#
# Usage: bench/metrics/run.sh [WORK_DIR]     (env: CCL_HARNESS, SIZE_MB, STEPS, PYTHON)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
harness=${CCL_HARNESS:-$root/build/ccl-harness}
python=${PYTHON:-python3}
size_mb=${SIZE_MB:-1100}
steps=${STEPS:-10}
work=${1:-${TMPDIR:-/tmp}/ccl-metrics-bench}
[ -x "$harness" ] || { echo "no ccl-harness at $harness (build it, or set CCL_HARNESS)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 2; }
mkdir -p "$work/trace"
trace="$work/trace/kineto_trace_0.json"
if [ ! -f "$trace" ] || [ "$(stat -c %s "$trace")" -lt $((size_mb * 1000000 * 99 / 100)) ]; then
    "$python" "$here/gen_trace.py" "$trace" --size-mb "$size_mb" --steps "$steps"
fi
bytes=$(stat -c %s "$trace")

measure() { # measure NAME COMMAND...: runs it, keeps stdout in $work/NAME.json, /usr/bin/time in $work/NAME.time
    local name=$1
    shift
    /usr/bin/time -v "$@" >"$work/$name.json" 2>"$work/$name.time"
}
field() { sed -n "s/^[[:space:]]*$2: //p" "$work/$1.time"; }
seconds() { # h:mm:ss or m:ss.ss to seconds
    awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }' <<<"$1"
}

# Cold caches are not ours to drop; read the file once so both runs start from the page cache.
cat "$trace" >/dev/null
measure harness "$harness" metrics "$work/trace" --reference --json
measure python "$python" "$here/reference.py" "$work/trace"

h_wall=$(seconds "$(field harness 'Elapsed (wall clock) time (h:mm:ss or m:ss)')")
p_wall=$(seconds "$(field python 'Elapsed (wall clock) time (h:mm:ss or m:ss)')")
h_rss=$(field harness 'Maximum resident set size (kbytes)')
p_rss=$(field python 'Maximum resident set size (kbytes)')
"$python" - "$work" "$bytes" "$h_wall" "$p_wall" "$h_rss" "$p_rss" \
    "$(field harness 'User time (seconds)')" "$(field python 'User time (seconds)')" <<'PY'
import json, sys
work, size, h_wall, p_wall, h_rss, p_rss, h_user, p_user = sys.argv[1:]
size, h_wall, p_wall = int(size), float(h_wall), float(p_wall)
h_rss, p_rss = int(h_rss) * 1024, int(p_rss) * 1024
harness = {k: v["value"] for k, v in json.load(open(work + "/harness.json"))["metrics"].items()}
python = json.load(open(work + "/python.json"))
print(f"trace: {size / 1e6:.0f} MB, {json.load(open(work + '/harness.json'))['ranks'][0]['events']} events")
print(f"ccl-harness metrics --reference: {h_wall:8.2f} s wall ({h_user} s user), peak RSS {h_rss / 1e6:8.1f} MB = {h_rss / size:.3f} x trace")
print(f"reference.py (json.load):        {p_wall:8.2f} s wall ({p_user} s user), peak RSS {p_rss / 1e6:8.1f} MB = {p_rss / size:.3f} x trace")
print(f"speed ratio: {p_wall / h_wall:.1f}x (wall), {float(p_user) / max(float(h_user), 1e-9):.1f}x (user CPU)")
bad = []
for name, want in python.items():
    if name.endswith("_by_name"):
        continue
    got = harness.get(name)
    if (want is None) != (got is None) or (want is not None and abs(got - want) > 1e-9 * max(abs(got), abs(want))):
        bad.append(f"{name}: ccl-harness {got}, reference.py {want}")
    print(f"  {name:26} {got!r:>24} {want!r:>24}")
if bad:
    print("DISAGREE:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("values agree to 1e-9 relative")
PY
