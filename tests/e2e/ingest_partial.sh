#!/bin/bash
# `ccl-harness ingest --ranks` end to end, as a contributor with an archived rank-0-only row does it
# (issue 28): a real public single-rank Kineto trace under a 4-GPU card is refused without --ranks
# (the error says which --ranks accepts it), ingested with --ranks 0 into a bundle that verify
# reports as "partial: ranks 0 of 4", whose metrics mark straggler n/a with the reason and compute
# the per-rank metrics over rank 0, saying so. Bad --ranks and tampered partial bundles fail.
#
# The trace: tests/fixtures/real_traces/hta_nccl_cut/rank0_trace.json.gz, rank 0 of an NCCL job,
# from facebookresearch/HolisticTraceAnalysis tests/data/ at f4d0062c (MIT; see that README), cut
# to three ProfilerStep markers. Its own distributedInfo says a world of 2; ingest takes the job's
# size from the card, as it does for every archive, so the card here says 4 as the issue's did.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ingest_lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
export TMPDIR="$SCRATCH/tmp"
mkdir -p "$TMPDIR"
real="$CCL_SOURCE_DIR/tests/fixtures/real_traces"
PY=/usr/bin/python3

member() { # member BUNDLE FILE: FILE of the bundle's <name>/ on stdout
    tar --zstd -xOf "$1" "$(basename "$1" .tar.zst)/$2"
}

# A 4-GPU TorchTitan card (the reference Qwen3-4B card on one Perlmutter node: dp_shard 4).
card="$SCRATCH/qwen3-4b-4gpu.yaml"
sed -e 's/total_count: 8/total_count: 4/' -e 's/^    tp: 2$/    tp: 1/' \
    workloads/qwen3-4b-torchtitan-perlmutter/qwen3-4b-torchtitan-perlmutter.yaml >"$card"
expect_status 0 "the 4-GPU card is valid" -- "$CCL_HARNESS" validate "$card"
archive="$SCRATCH/row/r0"
mkdir -p "$archive"
cp "$real/hta_nccl_cut/rank0_trace.json.gz" "$archive/"

# 1. Without --ranks: the old refusal, now naming the option that accepts the archive.
expect_status 2 "rank 0 only, no --ranks" -- "$CCL_HARNESS" ingest "$card" "$archive" --results "$results"
expect_output "says which ranks lack a trace" "no torch trace for ranks 1, 2, 3 (the card's total_count is 4: every rank needs one"
expect_output "names the --ranks that accepts it" "--ranks 0 accepts the ranks it has"
expect_eq "nothing under results/" "0" "$(entries)"

# 2. --ranks 0: a bundle marked partial, everywhere it is read.
expect_status 0 "ingest --ranks 0" -- "$CCL_HARNESS" ingest "$card" "$archive" --ranks 0 --results "$results"
expect_output "the trace placed" "kineto_trace_0.json.gz <- rank0_trace.json.gz"
expect_output "says partial" "valid, unpinned, ingested, partial: ranks 0 of 4 (6 files, 1 traces, 3 steps)"
bundle=$(bundle_of)
[ -f "$bundle" ] && pass || fail "ingest printed no bundle"
name=$(basename "$bundle" .tar.zst)
expect_eq "provenance records the ranks" "[0] 4" \
    "$(member "$bundle" provenance.json | "$PY" -c 'import json,sys; i=json.load(sys.stdin)["ingested"]; print(i["ranks_present"], i["total_count"])')"
expect_eq "the card's metric source records them" "[0] ['json']" \
    "$(member "$bundle" "$name.yaml" | "$PY" -c 'import sys,yaml; m=yaml.safe_load(sys.stdin)["metric_source"]; print(m["ranks_present"], m["traces"])')"
# The card schema knows the field: the bundle's card validates without an unknown-key warning.
member "$bundle" "$name.yaml" >"$SCRATCH/partial-card.yaml"
expect_status 0 "the partial card validates" -- "$CCL_HARNESS" validate "$SCRATCH/partial-card.yaml"
if grep -q "ranks_present" <<<"$OUT"; then fail "validate warns about ranks_present: $OUT"; else pass; fi
"$CCL_HARNESS" ingest "$card" "$archive" --ranks 0 --results "$results" --json >"$SCRATCH/ingest.json" 2>/dev/null ||
    fail "ingest --ranks 0 --json"
expect_json "$SCRATCH/ingest.json" "j['partial']" "{'ranks_present': [0], 'summary': 'ranks 0 of 4', 'total_count': 4}" \
    "ingest --json: partial"

expect_status 0 "verify the partial bundle" -- "$CCL_HARNESS" verify "$bundle"
expect_output "verify: partial: ranks 0 of 4" "$bundle: valid, unpinned, ingested, partial: ranks 0 of 4 (6 files, 1 traces, 3 steps)"
"$CCL_HARNESS" verify --json "$bundle" >"$SCRATCH/verify.json" || fail "verify --json"
expect_json "$SCRATCH/verify.json" "j['valid'], j['partial']['summary'], j['partial']['ranks_present'], j['partial']['total_count']" \
    "(True, 'partial: ranks 0 of 4', [0], 4)" "verify --json: partial"

# 3. metrics: straggler needs every rank; the others are rank 0's, and say so. The values are
# the ones the CCL-Bench tools print for this trace (tests/fixtures/real_traces/README.md).
expect_status 0 "metrics on the partial bundle" -- "$CCL_HARNESS" metrics "$bundle"
expect_output "says partial" "partial: ranks 0 of 4 traced (the card's metric_source.ranks_present)"
expect_output "straggler n/a with the reason" "straggler                   n/a               partial: ranks 0 of 4 traced; straggler compares every rank's communication time"
expect_output "avg_step_time computed" "avg_step_time               0.219727 s"
expect_output "and says over which ranks" "note: partial: the mean over the traced ranks 0 of 4"
"$CCL_HARNESS" metrics --json "$bundle" >"$SCRATCH/metrics.json" 2>/dev/null || fail "metrics --json"
expect_json "$SCRATCH/metrics.json" "j['partial'], j['metrics']['straggler']['value'], j['metrics']['straggler']['why'].startswith('partial: ranks 0 of 4')" \
    "('ranks 0 of 4', None, True)" "metrics --json: straggler n/a"
expect_json "$SCRATCH/metrics.json" "[round(j['metrics'][m]['value'], 9) for m in ('avg_step_time', 'total_communication_time')]" \
    "[0.219726905, 0.012300029]" "metrics --json: the tools' values for rank 0"
expect_json "$SCRATCH/metrics.json" \
    "sorted(m for m, v in j['metrics'].items() if v['value'] is not None and any(n.startswith('partial: ') for n in v.get('notes', [])))" \
    "['avg_step_time', 'collective_volume', 'communication_fraction', 'compute_comm_overlap', 'mfu', 'total_communication_time', 'total_kernel_time', 'total_trace_time']" \
    "every computed metric says it is over the traced ranks"

# 4. Bad input: one clear error, exit 2, nothing written.
before=$(entries)
bad_case "--ranks 5 on a 4-rank card" "--ranks \"5\": rank 5, but the card's total_count is 4 (ranks 0-3)" -- \
    "$card" "$archive" --ranks 5
bad_case "--ranks abc" "--ranks \"abc\": \"abc\" is not a rank" -- "$card" "$archive" --ranks abc
bad_case "--ranks empty" "--ranks \"\": empty" -- "$card" "$archive" --ranks ""
bad_case "--ranks 0,1 with rank 0's trace only" \
    "--ranks 0,1: TRACE_DIR $archive has no torch trace for rank 1 (it has rank 0); list only the ranks it has: --ranks 0" -- \
    "$card" "$archive" --ranks 0,1
two="$SCRATCH/row/two"
mkdir -p "$two"
cp "$real/hta_sampled_nccl2/rank0_trace.json.gz" "$real/hta_sampled_nccl2/rank1_trace.json.gz" "$two/"
bad_case "a trace of a rank --ranks does not list" "$two/rank1_trace.json.gz: a trace of rank 1, which --ranks 0 does not list" -- \
    "$card" "$two" --ranks 0
expect_status 0 "--ranks 0,1 over ranks 0 and 1 (of HTA's sampled pair)" -- \
    "$CCL_HARNESS" ingest "$card" "$two" --ranks 0-1 --results "$results"
expect_output "partial: ranks 0,1 of 4" "valid, unpinned, ingested, partial: ranks 0,1 of 4"
pair=$(bundle_of)
"$CCL_HARNESS" metrics --json "$pair" >"$SCRATCH/pair.json" 2>/dev/null || fail "metrics on ranks 0,1 of 4"
expect_json "$SCRATCH/pair.json" "j['metrics']['straggler']['value'], j['metrics']['straggler']['why'][:30]" \
    "(None, 'partial: ranks 0,1 of 4 traced')" "two ranks of four: straggler still n/a"

# 5. Tampered partial bundles, their manifest re-sealed so that only the ranks disagree.
reseal() { # reseal DIR: manifest.json rewritten from the files, as a forger would
    "$PY" - "$1" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
files = []
for root, _, names in os.walk(d):
    for n in names:
        p = os.path.join(root, n)
        rel = os.path.relpath(p, d)
        if rel != "manifest.json":
            files.append({"path": rel, "sha256": hashlib.sha256(open(p, "rb").read()).hexdigest(), "size": os.path.getsize(p)})
m["files"] = sorted(files, key=lambda f: f["path"])
json.dump(m, open(os.path.join(d, "manifest.json"), "w"))
PY
}
set_provenance_ranks() { # set_provenance_ranks DIR RANKS: provenance.json's ingested.ranks_present, rewritten
    "$PY" -c 'import json,sys; p=sys.argv[1]; j=json.load(open(p)); j["ingested"]["ranks_present"]=json.loads(sys.argv[2]); json.dump(j, open(p, "w"))' \
        "$1/provenance.json" "$2"
}
tampered() { # tampered CASE: a fresh unpacked copy of the partial bundle in $copy
    rm -rf "${SCRATCH:?}/$1"
    mkdir -p "$SCRATCH/$1"
    tar --zstd -xf "$bundle" -C "$SCRATCH/$1"
    copy="$SCRATCH/$1/$name"
}
expect_tampered() { # expect_tampered WHAT NEEDLE: verify fails with exactly one problem, naming it
    reseal "$copy"
    expect_status 1 "$1" -- "$CCL_HARNESS" verify "$copy"
    expect_output "$1: says" "$2"
    expect_output "$1: one problem" "invalid (1 problem)"
}
tampered claims-more
sed -i 's/ranks_present: \[0\]/ranks_present: [0, 1]/' "$copy/$name.yaml"
set_provenance_ranks "$copy" "[0, 1]"
expect_tampered "a card claiming a rank it lacks" \
    "metric_source.ranks_present claims ranks 0,1 of 4, but the bundle has no kineto_trace_1.json"
tampered unclaimed
cp "$real/hta_sampled_nccl2/rank1_trace.json.gz" "$copy/kineto_trace_1.json.gz"
expect_tampered "a trace of a rank the card does not claim" \
    "kineto_trace_1.json.gz: a trace of rank 1, which the card's metric_source.ranks_present (0) does not claim"
tampered disagree
set_provenance_ranks "$copy" "[1]"
expect_tampered "provenance and card disagree" \
    "provenance.json: ingested.ranks_present records ranks 1 of 4, but the card claims ranks 0 of 4"
tampered unmarked
sed -i '/ranks_present/d' "$copy/$name.yaml"
reseal "$copy"
expect_status 1 "the card's claim removed" -- "$CCL_HARNESS" verify "$copy"
expect_output "names provenance's claim" "provenance.json records ranks 0 of 4 (ingested.ranks_present), but the card's metric_source has no ranks_present"
expect_output "and the missing ranks" "card says total_count: 4 but the bundle has 1 rank trace (kineto_trace_0)"
[ -z "$(ls -A "$TMPDIR")" ] && pass || fail "scratch left in \$TMPDIR: $(ls -A "$TMPDIR")"

# A card that names another GPU than the traces ran on: the bundle is valid (nothing in it is
# damaged), and verify says plainly that its numbers do not describe the card.
sed 's/model: nvidia_a100.*/model: nvidia_h100/' "$card" >"$SCRATCH/h100.yaml"
expect_status 0 "ingest under an H100 card" -- "$CCL_HARNESS" ingest "$SCRATCH/h100.yaml" "$archive" --ranks 0 --results "$SCRATCH/h100-results"
h100=$(bundle_of)
expect_status 0 "verify: valid, with a warning" -- "$CCL_HARNESS" verify "$h100"
expect_output "the device mismatch, said" "warning: $h100: metrics.json: the traces ran on NVIDIA A100-PG509-200 (their deviceProperties), but the card's xpu_spec.model is nvidia_h100"
"$CCL_HARNESS" verify --json "$h100" >"$SCRATCH/h100.json" || fail "verify --json"
expect_json "$SCRATCH/h100.json" "j['valid'], len(j['warnings']) >= 1, j['problems']" "(True, True, [])" "verify --json: warnings"
# The A100 card names the trace's GPU: no device warning. Its qwen3-4b model is not what HTA's
# trace ran, though, and the mfu that follows (about 300 %) is flagged as such.
expect_status 0 "the A100 bundle: no device warning" -- "$CCL_HARNESS" verify "$bundle"
if grep -q "deviceProperties" <<<"$OUT"; then fail "a device warning on the matching card: $OUT"; else pass; fi
expect_output "an mfu over 100 % is flagged" "warning: $bundle: metrics.json: mfu is implausible: "

# Issue 31 D11: traces that lie about their rank. HTA's two real NCCL ranks (distributedInfo 0 and
# 1) under each other's names: ingest refuses them (nothing left under results/), and verify fails
# a bundle that holds one, naming both ranks.
swapped="$SCRATCH/swapped"
mkdir -p "$swapped"
cp "$real/hta_sampled_nccl2/rank0_trace.json.gz" "$swapped/kineto_trace_1.json.gz"
cp "$real/hta_sampled_nccl2/rank1_trace.json.gz" "$swapped/kineto_trace_0.json.gz"
two="$SCRATCH/two-rank.yaml"
sed -e 's/total_count: 4/total_count: 2/' "$card" >"$two"
sed -i 's/^    dp_shard: 4$/    dp_shard: 2/' "$two"
before=$(entries)
expect_status 2 "ingest of two swapped rank traces" -- "$CCL_HARNESS" ingest "$two" "$swapped" --results "$results"
expect_output "says whose trace it is" "named rank 1, but its distributedInfo.rank is 0: it is another rank's trace"
expect_eq "nothing more under results/" "$before" "$(entries)"
lying="$SCRATCH/lying"
mkdir -p "$lying"
tar --zstd -xf "$bundle" -C "$lying"
lying_dir="$lying/$(basename "$bundle" .tar.zst)"
trace_name=$(cd "$lying_dir" && ls kineto_trace_*.json* | head -n 1)
rank_of_name=$(sed -E 's/kineto_trace_([0-9]+).*/\1/' <<<"$trace_name")
$PY - "$lying_dir/$trace_name" "$((rank_of_name + 7))" <<'PY'
import gzip, json, sys
path, rank = sys.argv[1], int(sys.argv[2])
opener = gzip.open if path.endswith(".gz") else open
with opener(path, "rt") as f:
    trace = json.load(f)
trace.setdefault("distributedInfo", {})["rank"] = rank
with opener(path, "wt") as f:
    json.dump(trace, f)
PY
expect_status 1 "verify a bundle whose trace names another rank" -- "$CCL_HARNESS" verify "$lying_dir"
expect_output "names both" "named rank $rank_of_name, but its distributedInfo.rank is $((rank_of_name + 7))"

# Issue 31 D8: a file name with a newline cannot print a line of its own in ingest's error.
crafted="$SCRATCH/crafted"
mkdir -p "$crafted"
cp "$real/hta_nccl_cut/rank0_trace.json.gz" "$crafted/"
cp "$real/hta_nccl_cut/rank0_trace.json.gz" "$crafted/rank0_trace.json.gz"$'\n''ingested 2 traces, all valid.json'
expect_status 2 "a trace name with a newline" -- "$CCL_HARNESS" ingest "$card" "$crafted" --ranks 0 --results "$results"
if grep -q "^ingested 2 traces" <<<"$OUT"; then fail "the name drew its own line: $OUT"; else pass; fi
expect_output "shown escaped" 'rank0_trace.json.gz\ningested 2 traces'
# ... nor can a --scripts or --logs file's: refused at its directory, before a run directory exists.
scripts="$SCRATCH/crafted-scripts"
mkdir -p "$scripts"
echo "echo hi" >"$scripts/run"$'\n''ccl-harness: ingested 2 traces, all valid.sh'
bad_case "a --scripts name with a newline" '"run\nccl-harness: ingested 2 traces, all valid.sh": a control character in the name' -- \
    "$card" "$archive" --ranks 0 --scripts "$scripts"
if grep -q "^ccl-harness: ingested" <<<"$OUT"; then fail "the script's name drew its own line: $OUT"; else pass; fi
if grep -q "^ingested 1 trace" <<<"$OUT"; then fail "ingest said it ingested before refusing: $OUT"; else pass; fi

# Issue 31 D11: a trace whose distributedInfo.rank is there but names no rank (negative, a string,
# a fraction, past 1e9) is a damaged or forged trace, reported as such, not as "no distributedInfo".
lying="$SCRATCH/lying"
for value in -3 '"1"' 2.5 1e308; do
    rm -rf "$lying" && mkdir -p "$lying"
    "$PY" - "$real/hta_nccl_cut/rank0_trace.json.gz" "$lying/worker0.1700000000000000001.pt.trace.json" "$value" <<'PY'
import gzip, json, sys
trace = json.load(gzip.open(sys.argv[1]))
trace["distributedInfo"]["rank"] = json.loads(sys.argv[3])
json.dump(trace, open(sys.argv[2], "w"))
PY
    bad_case "distributedInfo.rank $value" "carries no rank and its distributedInfo.rank is" -- "$card" "$lying" --ranks 0
    expect_output "distributedInfo.rank $value: says why" "which names no rank (a whole number from 0 to 1000000000)"
done

finish
