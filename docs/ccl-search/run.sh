#!/bin/bash
# CCL-Search's run_script backed by ccl-harness. Upstream's execute() (agent/ccl_bench_agent/
# execute.py at 1d257f0) runs `bash run_script` with every config key as an upper-case environment
# variable (tp=4 -> TP=4), TRACE_DIR and WORKLOAD_NAME set, and reads only the exit status and the
# last 600 characters of stderr. Here the trial is `ccl-harness eval`: the card of the keys file
# with the config's values, run (or, when an identical run already completed, reused) to a
# verified bundle, its canonical traces copied into $TRACE_DIR for the CCL-Bench tools.
#
# Environment: CCL_SEARCH_KEYS (default: tiny-ddp.keys.yaml beside this script), CCL_SEARCH_CLUSTER
# (default: the card's), CCL_SEARCH_RESULTS (default: ccl-harness's results directory),
# CCL_HARNESS (default: ccl-harness on PATH).
# Exit status: 0 the trial succeeded; 1 it did not, with one line on stderr saying why
# ("failed (failure class): reason"); 2 bad input (a key, the keys file, the card).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
keys=${CCL_SEARCH_KEYS:-$here/tiny-ddp.keys.yaml}
harness=${CCL_HARNESS:-ccl-harness}
: "${TRACE_DIR:?TRACE_DIR is not set: CCL-Search execute() sets it}"
args=(eval --keys "$keys" --config-from-env --trace-dir "$TRACE_DIR" --json)
[ -z "${CCL_SEARCH_CLUSTER:-}" ] || args+=(--cluster "$CCL_SEARCH_CLUSTER")
[ -z "${CCL_SEARCH_RESULTS:-}" ] || args+=(--results "$CCL_SEARCH_RESULTS")
result=$(mktemp)
trap 'rm -f "$result"' EXIT
status=0
"$harness" "${args[@]}" >"$result" || status=$?
# One line for the agent's log: what ran (or was reused) and why a trial failed.
python3 - "$result" "$status" <<'PY' >&2
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)  # ccl-harness said why on stderr already
if "error" in r:
    sys.exit(0)  # bad input: ccl-harness said it on stderr already
if r["status"] == "success":
    print(f"trial {'reused' if r['cached'] else 'ran'}: score {r['score']} ({r['run_dir']})")
else:
    cls = f" ({r['failure_class']})" if r.get("failure_class") else ""
    print(f"trial {r['status']}{cls}: {r['error_msg']}")
PY
exit "$status"
