# shellcheck shell=bash
# Shared helpers for the end-to-end suites: they drive the built binary like a user would.
# Each suite runs under CTest with CCL_HARNESS (the binary), CCL_SOURCE_DIR, CCL_SHARED_DIR and
# CCL_TEST_TMP (a scratch directory inside the build tree) in the environment.
set -euo pipefail

: "${CCL_HARNESS:?set by CTest}" "${CCL_SOURCE_DIR:?}" "${CCL_TEST_TMP:?}"
CCL_SHARED_DIR="${CCL_SHARED_DIR:-$CCL_SOURCE_DIR/../shared}"
# shellcheck disable=SC2034  # read by the suites that source this file
CORPUS="$CCL_SHARED_DIR/ccl-bench-cards"

case "$CCL_TEST_TMP" in
*/build*/*) ;;
*) echo "refusing to use scratch directory outside the build tree: $CCL_TEST_TMP" >&2; exit 1 ;;
esac
# A developer's own defaults.yaml must not change what a suite sees (user_defaults.sh tests it).
export CCL_HARNESS_DEFAULTS=none
SCRATCH="$CCL_TEST_TMP/$(basename "$0" .sh)"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
# Every run, attach, ingest and sweep records its runs in the per-user results store: here one
# per suite, never the developer's own (results_store.sh tests the recording).
export CCL_HARNESS_STORE="$SCRATCH/user-store.db"

failures=0
checks=0

pass() { checks=$((checks + 1)); }
fail() {
    checks=$((checks + 1))
    failures=$((failures + 1))
    echo "FAIL: $*" >&2
}

# expect_status CODE DESCRIPTION -- COMMAND...: runs COMMAND, keeps its output in $OUT.
expect_status() {
    local want=$1 what=$2
    shift 3
    local got=0
    OUT=$("$@" 2>&1) || got=$?
    if [ "$got" -eq "$want" ]; then pass; else fail "$what: exit $got, wanted $want; output:"$'\n'"$OUT"; fi
}

expect_output() {
    local what=$1 needle=$2
    if grep -qF -- "$needle" <<<"$OUT"; then pass; else fail "$what: output lacks [$needle]; output:"$'\n'"$OUT"; fi
}

# expect_eq WHAT EXPECTED ACTUAL: the two strings are equal.
expect_eq() {
    if [ "$2" = "$3" ]; then pass; else fail "$1: got [$3], wanted [$2]"; fi
}

# expect_json FILE EXPR EXPECTED [WHAT]: the Python expression EXPR over the JSON document in FILE
# (as j) prints EXPECTED (Python's str(): True, ['a', 'b'], (1, 2)). python3, not jq: .ci/setup
# installs it for the suites anyway.
expect_json() {
    local file=$1 expr=$2 want=$3 what=${4:-$1: $2} got
    if got=$(/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$file" "$expr" 2>&1); then
        expect_eq "$what" "$want" "$got"
    else
        fail "$what: cannot evaluate $expr over $file: $got"
    fi
}

# pack_dir PARENT NAME ARCHIVE: PARENT/NAME packed as ARCHIVE (.tar.zst) in the layout
# docs/bundle.md describes, with GNU tar, byte for byte the same each time.
pack_dir() {
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@946684800 --zstd -cf "$3" -C "$1" "$2"
}
# assemble_latest_run OUT_DIR: the newest run under $results assembled into a bundle directory
# under OUT_DIR by tests/e2e/fixtures/bundle_fixture.py; sets run (no trailing /), name (its id)
# and bundle (the directory).
# shellcheck disable=SC2034 # run, name and bundle are set for the calling suite
assemble_latest_run() {
    run=$(latest_run)
    run=${run%/}
    name=$(basename "$run")
    mkdir -p "$1"
    bundle=$(/usr/bin/python3 "$CCL_SOURCE_DIR/tests/e2e/fixtures/bundle_fixture.py" assemble "$run" "$1")
}

# metrics_value FILE EXPR: a Python expression over a `metrics --json` report in FILE (r: the
# report; m: the metrics' values by name).
metrics_value() {
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); m={k: v["value"] for k, v in r["metrics"].items()}; print(eval(sys.argv[2]))' "$1" "$2"
}
# expect_metrics_true WHAT FILE EXPR: metrics_value FILE EXPR must print True.
expect_metrics_true() {
    local got
    got=$(metrics_value "$2" "$3" 2>&1) || true
    if [ "$got" = True ]; then pass; else fail "$1: $3 is $got"; fi
}

# expect_metrics BUNDLE [METRIC=WHY]...: `ccl-harness metrics --json BUNDLE` gives every metric a
# value, except each METRIC named, which must be n/a with WHY in its reason (what the trace
# cannot support, said by the metric itself), and the metrics the card itself rules out (ttft
# and tpot of a training card, tpot of one output token).
expect_metrics() {
    local bundle=$1 got
    shift
    if got=$("$CCL_HARNESS" metrics --json "$bundle" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
metrics = json.load(sys.stdin)["metrics"]
allowed = dict(a.split("=", 1) for a in sys.argv[1:])
problems = []
for name, metric in sorted(metrics.items()):
    why = str(metric.get("why", ""))
    ruled_out = why.startswith("only inference runs have") or why.startswith("output_len 1:") or why.startswith("not GPU kernels:")
    if metric.get("value") is None and name not in allowed and not ruled_out:
        problems.append("%s is n/a: %s" % (name, why))
    elif name in allowed and (metric.get("value") is not None or allowed[name] not in why):
        problems.append("%s: wanted n/a for [%s], got %s (%s)" % (name, allowed[name], metric.get("value"), why))
print("; ".join(problems))
' "$@" 2>&1); then
        [ -z "$got" ] && pass || fail "metrics of $(basename "$bundle"): $got"
    else
        fail "metrics of $(basename "$bundle"): $got"
    fi
}

# megatron_double_repo DIR: the Megatron-LM double as a git repository tagged with the reference
# card's ref, laid out like Megatron-LM where the script uses it (pretrain_gpt.py at the root,
# tools/preprocess_data.py),
# carrying the shared double library and contract. Run from the checkout root.
megatron_double_repo() {
    local repo=$1
    mkdir -p "$repo/tests/doubles/lib" "$repo/docs/contracts"
    mkdir -p "$repo/tools"
    cp tests/doubles/megatron-lm/pretrain_gpt.py "$repo/"
    cp tests/doubles/megatron-lm/tools/preprocess_data.py "$repo/tools/"
    cp tests/doubles/lib/double_common.py "$repo/tests/doubles/lib/"
    cp docs/contracts/megatron-lm-core_v0.15.3.yaml "$repo/docs/contracts/"
    git -C "$repo" init --quiet
    git -C "$repo" -c user.name=test -c user.email=test@example.invalid add -A
    git -C "$repo" -c user.name=test -c user.email=test@example.invalid commit --quiet -m "megatron-lm double"
    git -C "$repo" tag core_v0.15.3
}

# For the run suites, which keep their run directories under $results.
run_json() { # run_json RUN_DIR EXPR: evaluates a Python expression over run.json (as r)
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]+"/run.json")); print(eval(sys.argv[2]))' "$1" "$2"
}
latest_run() { ls -dt "${results:?latest_run reads \$results}"/*/ | head -n 1; }

# require_root_netns SUITE: the slurm-multi suites' preamble. Exits 125 (CTest's skip) unless this
# runs as root and may create network namespaces, as clusters/slurm-multi/cluster.sh needs.
require_root_netns() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$1: skipped: needs root" >&2
        exit 125
    fi
    local probe=cclm-probe-$$
    if ! ip netns add "$probe" 2>/dev/null; then
        echo "$1: skipped: cannot create network namespaces" >&2
        exit 125
    fi
    ip netns del "$probe"
}

finish() {
    echo "$(basename "$0"): $checks checks, $failures failed"
    [ "$failures" -eq 0 ]
}
