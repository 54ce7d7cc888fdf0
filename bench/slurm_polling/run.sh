#!/bin/bash
# Scheduler calls per job-minute on clusters/slurm-local: one `ccl-harness run` of tiny-ddp, and
# an N-point (default 50) `ccl-harness sweep` submitted as one job array. A PATH shim counts every
# sbatch/squeue/scontrol/sacct/scancel the harness runs, then execs the real one.
#   bash bench/slurm_polling/run.sh [POINTS]
# The array's points run tests/e2e/fixtures/misbehave.py (a trace per rank, no torch), so the
# figure is the harness's polling, not the workload's length; tasks queue on the one node.
set -euo pipefail
cd "$(dirname "$0")/../.."
points=${1:-50}
harness=${CCL_HARNESS:-build-h2/ccl-harness}
[ -x "$harness" ] || harness=build/ccl-harness
bash clusters/slurm-local/cluster.sh start >/dev/null
eval "$(bash clusters/slurm-local/cluster.sh env)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/shim" "$work/card"
for tool in sbatch squeue scontrol sacct scancel; do
    real=$(command -v "$tool")
    printf '#!/bin/bash\necho %s >>"%s/calls"\nexec %s "$@"\n' "$tool" "$work" "$real" >"$work/shim/$tool"
    chmod +x "$work/shim/$tool"
done
cp workloads/tiny-ddp/tiny-ddp.yaml workloads/tiny-ddp/train.py tests/e2e/fixtures/misbehave.py "$work/card/"

measure() { # measure LABEL JOBS COMMAND...: prints calls, wall time and calls per job-minute
    local label=$1 jobs=$2 start end calls
    shift 2
    : >"$work/calls"
    start=$(date +%s.%N)
    PATH="$work/shim:$PATH" "$@" >"$work/$label.log" 2>&1 || true
    end=$(date +%s.%N)
    calls=$(wc -l <"$work/calls")
    /usr/bin/python3 - "$label" "$jobs" "$calls" "$start" "$end" "$work/calls" <<'PY'
import collections, sys
label, jobs, calls, start, end, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
minutes = (end - start) / 60
by_tool = collections.Counter(line.strip() for line in open(log))
print(f"{label}: {jobs} job(s), {minutes * 60:.0f} s wall, {calls} scheduler calls "
      f"({', '.join(f'{k} {v}' for k, v in sorted(by_tool.items()))}); "
      f"{calls / minutes:.1f} calls per wall-minute, {calls / (minutes * jobs):.2f} per job-minute (wall x jobs)")
PY
}

measure single-job 1 "$harness" run "$work/card/tiny-ddp.yaml" --cluster slurm-local --results "$work/results"
steps=$(seq -s, 8 $((points + 7)))
measure "array-$points" "$points" "$harness" sweep "$work/card/tiny-ddp.yaml" --cluster slurm-local \
    --vary launch.script=misbehave.py --vary launch.steps="$steps" --results "$work/results"
grep -h "^sweep sweep-.*: [0-9]* completed" "$work/array-$points.log" || true
