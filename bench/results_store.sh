#!/bin/bash
# The results store at scale: 10,000 synthetic run directories (copies of one real run's records,
# run.json's run_id made unique, no traces), indexed; then `results list --where ...` against
# `status` over the same directories. Prints times, the database's size and peak RSS.
#   bench/results_store.sh SOURCE_RUN_DIR [COUNT]     (CCL_HARNESS: the binary, default build/ccl-harness)
set -euo pipefail
source_run=${1:?usage: bench/results_store.sh SOURCE_RUN_DIR [COUNT]}
count=${2:-10000}
harness=${CCL_HARNESS:-$(cd "$(dirname "$0")/.." && pwd)/build/ccl-harness}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$source_run" "$work/results" "$count" <<'PY'
import json, os, shutil, sys
src, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
record = json.load(open(os.path.join(src, "run.json")))
base = record["run_id"]
for i in range(count):
    run_id = "%s-bench%05d" % (base, i)
    d = os.path.join(out, run_id)
    os.makedirs(d)
    for name in ("card.yaml", "plan.json", "metrics.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(d, name))
    record["run_id"] = run_id
    record["state"] = "completed" if i % 3 else "failed"
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump(record, f)
PY
measure() { # measure LABEL COMMAND...: wall seconds and peak RSS
    local label=$1
    shift
    /usr/bin/time -v "$@" >/dev/null 2>"$work/time.txt"
    printf '%-28s %8s s  %8s KiB peak RSS\n' "$label" \
        "$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")" \
        "$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")"
}
db="$work/results.db"
echo "$count run directories"
measure "results index (first)" "$harness" results --store "$db" index "$work/results"
measure "results index (unchanged)" "$harness" results --store "$db" index "$work/results"
measure "results list --where" "$harness" results --store "$db" list --where state=failed --metric avg_step_time --json
measure "status --state failed" "$harness" status "$work/results" --state failed --json
echo "database: $(du -k "$db" | cut -f1) KiB (+ wal $(du -k "$db-wal" 2>/dev/null | cut -f1 || echo 0) KiB)"
