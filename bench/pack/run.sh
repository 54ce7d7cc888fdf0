#!/bin/bash
# The pack benchmark (issue 5): `ccl-harness pack` against `tar -cf - DIR | zstd -T0 -3` followed
# by `sha256sum` of every file, on one generated run directory, in the same run. Prints wall
# times, their ratio and both peak RSS (GNU time -v), then removes what it generated.
#
#   bench/pack/run.sh [--workdir DIR] [--total-mb N] [--ranks N] [--repeat N] [--harness PATH]
#
# Defaults: $TMPDIR (else /tmp), 2048 MB of Kineto JSON over 4 ranks, 3 alternating rounds
# (the median is reported), build/ccl-harness. Both sides read from a warm page cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
workdir="${TMPDIR:-/tmp}"
total_mb=2048
ranks=4
repeat=3
harness="$root/build/ccl-harness"
while [ $# -gt 0 ]; do
    case "$1" in
    --workdir) workdir=$2; shift 2 ;;
    --total-mb) total_mb=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --harness) harness=$2; shift 2 ;;
    *) echo "usage: $0 [--workdir DIR] [--total-mb N] [--ranks N] [--repeat N] [--harness PATH]" >&2; exit 2 ;;
    esac
done
[ -x "$harness" ] || { echo "no ccl-harness at $harness (build it, or pass --harness)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is needed for the peak RSS" >&2; exit 2; }

work=$(mktemp -d "$workdir/ccl-pack-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
name=bench-20000101T000000Z-000000
run="$work/$name"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) hardware threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "tools: $(zstd --version | head -1); $(tar --version | head -1); ccl-harness $("$harness" --version 2>/dev/null || echo '?')"
start=$(date +%s.%N)
/usr/bin/python3 "$here/gen_run.py" "$run" --total-mb "$total_mb" --ranks "$ranks"
echo "generated in $(/usr/bin/python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)") s; run directory: $(du -sb "$run" | cut -f1) bytes"
cat "$run"/traces/* "$run"/logs/* >/dev/null  # the same warm page cache for both sides

pipeline() {
    tar -cf - -C "$work" "$name" | zstd -T0 -3 -q >"$work/pipeline.tar.zst"
    find "$run" -type f -print0 | sort -z | xargs -0 sha256sum >"$work/pipeline.sha256"
}
export -f pipeline
export work name run

# wall seconds, peak RSS (KiB) and CPU seconds (user + system) from a GNU time -v report
measure() {
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = t[n] + 60 * t[n-1] + (n > 2 ? 3600 * t[n-2] : 0) }
                /Maximum resident set size/ { rss = $2 }
                /User time \(seconds\)|System time \(seconds\)/ { cpu += $2 }
                END { printf "%.2f %d %.2f\n", s, rss, cpu }' "$1"
}

: >"$work/pipeline.times"
: >"$work/pack.times"
for round in $(seq "$repeat"); do
    rm -f "$work/pipeline.tar.zst" "$work/pack.tar.zst"
    /usr/bin/time -v -o "$work/t" bash -c pipeline
    measure "$work/t" >>"$work/pipeline.times"
    /usr/bin/time -v -o "$work/t" "$harness" pack "$run" --out "$work/pack.tar.zst" >/dev/null
    measure "$work/t" >>"$work/pack.times"
    echo "round $round: pipeline $(tail -1 "$work/pipeline.times") / pack $(tail -1 "$work/pack.times") (wall s, RSS KiB, CPU s)"
done

# The bundle must say what sha256sum says about every trace.
tar --zstd -xOf "$work/pack.tar.zst" "$name/manifest.json" >"$work/manifest.json"
/usr/bin/python3 - "$work/manifest.json" "$work/pipeline.sha256" "$run" <<'EOF'
import json, os, sys
manifest = {f["path"]: f["sha256"] for f in json.load(open(sys.argv[1]))["files"]}
for line in open(sys.argv[2]):
    digest, path = line.rstrip("\n").split("  ", 1)
    rel = os.path.relpath(path, sys.argv[3])
    if rel.startswith("traces/") and manifest.get(rel[len("traces/"):]) != digest:
        sys.exit(f"manifest disagrees with sha256sum on {rel}")
print("check: manifest.json agrees with sha256sum on every trace")
EOF

/usr/bin/python3 - "$work" <<'EOF'
import os, statistics, sys
work = sys.argv[1]
def load(name):
    rows = [tuple(map(float, line.split())) for line in open(os.path.join(work, name))]
    return statistics.median(r[0] for r in rows), max(r[1] for r in rows), statistics.median(r[2] for r in rows)
pipe_s, pipe_rss, pipe_cpu = load("pipeline.times")
pack_s, pack_rss, pack_cpu = load("pack.times")
print(f"pipeline (tar | zstd -T0 -3, then sha256sum): {pipe_s:.2f} s wall, {pipe_cpu:.2f} s CPU (medians), "
      f"peak RSS {pipe_rss / 1024:.1f} MiB (largest process), archive {os.path.getsize(os.path.join(work, 'pipeline.tar.zst'))} bytes")
print(f"ccl-harness pack: {pack_s:.2f} s wall, {pack_cpu:.2f} s CPU (medians), peak RSS {pack_rss / 1024:.1f} MiB, "
      f"archive {os.path.getsize(os.path.join(work, 'pack.tar.zst'))} bytes")
print(f"ratio pack / pipeline: {pack_s / pipe_s:.2f} wall, {pack_cpu / pipe_cpu:.2f} CPU (target <= 1); "
      f"pack peak RSS {pack_rss / 1024:.1f} MiB (target < 128)")
EOF
