#!/bin/bash
# `ccl-harness metrics` on Nsight Systems SQLite exports like a user: a generated two-rank export
# (tests/fixtures/nsys/make_nsys_export.py) against hand-computed values and against the same
# events as Kineto JSON, Kineto and nsys side by side, an export of two GPUs, a report without its
# export, the real 2022.1 export in tests/fixtures/nsys/, and hostile files.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
make_export=tests/fixtures/nsys/make_nsys_export.py


two="$SCRATCH/two"
/usr/bin/python3 "$make_export" two_ranks "$two"

# 1. Two ranks, one export each. By hand from make_nsys_export.py's RANKS (µs):
#    step time: the inner step (ProfilerStep#2) lasts 100 on rank 0, 120 on rank 1: mean 110 µs.
#    comm time: rank 0's all-reduce [130,170] = 40; rank 1's [140,200] plus [90,110] clipped to the
#    step's start, [100,110]: 70; mean 55 µs per step.
#    overlap: rank 0 all-reduce ∩ gemm [100,150] = 20 of 40 = 50 %; rank 1 [100,110] and [140,160]
#    under gemm [100,160] = 30 of 70 = 42.857 %; mean 46.4286 %.
"$CCL_HARNESS" metrics "$two" --json >"$SCRATCH/two.json" && pass || fail "metrics --json on two nsys exports"
expect_metrics_true "step time" "$SCRATCH/two.json" 'abs(m["avg_step_time"] - 110e-6) < 1e-12'
expect_metrics_true "comm time" "$SCRATCH/two.json" 'abs(m["total_communication_time"] - 55e-6) < 1e-12'
expect_metrics_true "overlap" "$SCRATCH/two.json" 'abs(m["compute_comm_overlap"] - (50 + 300 / 7) / 2) < 1e-9'
expect_metrics_true "both ranks from the exports" "$SCRATCH/two.json" \
    '[(x["rank"], x["format"], x["file"].split("/")[-1], x["kernels"], x["steps"]) for x in r["ranks"]] == [(0, "nsys-sqlite", "nsys_0.sqlite", 6, 3), (1, "nsys-sqlite", "nsys_1.sqlite", 5, 3)]'
expect_metrics_true "the GPU from TARGET_INFO_GPU" "$SCRATCH/two.json" 'r["ranks"][0]["devices"] == ["NVIDIA A100-SXM4-40GB"]'
expect_metrics_true "notes say where each rank was read from" "$SCRATCH/two.json" \
    '"nsys_1.sqlite: read from the Nsight Systems export (rank 1)" in r["notes"]'

# The same events as Kineto JSON: every metric the same value, so nothing downstream can tell.
"$CCL_HARNESS" metrics "$two/kineto" --json >"$SCRATCH/two-kineto.json" && pass || fail "metrics on the Kineto twins"
same=$(/usr/bin/python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["metrics"]
b = json.load(open(sys.argv[2]))["metrics"]
diff = [k for k in sorted(set(a) | set(b)) if a.get(k, {}).get("value") != b.get(k, {}).get("value")]
print(",".join(diff) or "same")' "$SCRATCH/two.json" "$SCRATCH/two-kineto.json")
expect_eq "nsys and Kineto give the same metrics" same "$same"

expect_status 0 "the table for people" -- "$CCL_HARNESS" metrics "$two"
expect_output "overlap row" "compute_comm_overlap        46.4286 %"
expect_output "format column" "nsys-sqlite"
expect_status 0 "one export alone" -- "$CCL_HARNESS" metrics "$two/nsys_1.sqlite" --metric avg_step_time
expect_output "its step" "avg_step_time               0.00012 s"

# 2. Kineto stays the source of a rank that has both; the export is read only for the other rank.
mixed="$SCRATCH/mixed"
mkdir -p "$mixed"
cp "$two/kineto/kineto_trace_0.json" "$two/nsys_0.sqlite" "$two/nsys_1.sqlite" "$mixed/"
"$CCL_HARNESS" metrics "$mixed" --json >"$SCRATCH/mixed.json" && pass || fail "metrics on Kineto + nsys"
expect_metrics_true "rank 0 from Kineto, rank 1 from nsys" "$SCRATCH/mixed.json" \
    '[(x["rank"], x["format"]) for x in r["ranks"] if x["in_default"]] == [(0, "kineto"), (1, "nsys-sqlite")]'
expect_metrics_true "the note says so" "$SCRATCH/mixed.json" '"nsys_0.sqlite: not read: rank 0 is read from its Kineto trace" in r["notes"]'
expect_metrics_true "no rank counted twice" "$SCRATCH/mixed.json" 'abs(m["avg_step_time"] - 110e-6) < 1e-12'

# 3. One export of a process that drove two GPUs: one rank per device.
/usr/bin/python3 "$make_export" multi_device "$SCRATCH/serve.sqlite"
"$CCL_HARNESS" metrics "$SCRATCH/serve.sqlite" --json >"$SCRATCH/serve.json" && pass || fail "metrics on a two-GPU export"
expect_metrics_true "two ranks" "$SCRATCH/serve.json" '[(x["rank"], x["kernels"]) for x in r["ranks"]] == [(0, 6), (1, 6)]'
expect_metrics_true "named in the notes" "$SCRATCH/serve.json" 'any("holds the kernels of 2 GPUs (deviceId 0, 1)" in n for n in r["notes"])'

# 4. A report without its export: a note on how to export it, not an error; with nsys on PATH the
#    note gives the command to run.
reports="$SCRATCH/reports"
mkdir -p "$reports"
printf 'not really a report' >"$reports/nsys_0.nsys-rep"
expect_status 0 "a report alone" -- "$CCL_HARNESS" metrics "$reports"
expect_output "why it is not read" "nsys_0.nsys-rep: an Nsight Systems report, not read: only nsys reads it (not on PATH)"
expect_output "how to export it" "nsys export --type=sqlite --output nsys_0.sqlite nsys_0.nsys-rep"
mkdir -p "$SCRATCH/bin"
printf '#!/bin/sh\nexit 0\n' >"$SCRATCH/bin/nsys"
chmod +x "$SCRATCH/bin/nsys"
expect_status 0 "a report, nsys on PATH" -- env PATH="$SCRATCH/bin:$PATH" "$CCL_HARNESS" metrics "$reports"
expect_output "export it and run again" "export it (nsys export --type=sqlite --output nsys_0.sqlite nsys_0.nsys-rep) and run metrics again"

# 5. The real export (Nsight Systems 2022.1, schema 2.9.1): its 12 kernels and its GPU; no steps.
cp tests/fixtures/nsys/profile1.sqlite "$SCRATCH/profile1.sqlite"
before=$(sha256sum <"$SCRATCH/profile1.sqlite")
"$CCL_HARNESS" metrics "$SCRATCH/profile1.sqlite" --json >"$SCRATCH/real.json" && pass || fail "metrics on the real export"
expect_metrics_true "its kernels" "$SCRATCH/real.json" 'r["ranks"][0]["kernels"] == 12 and r["ranks"][0]["devices"][0] == "GeForce GTX 1060 with Max-Q Design"'
expect_eq "read without a byte written" "$before" "$(sha256sum <"$SCRATCH/profile1.sqlite")"
[ "$(find "$SCRATCH" -maxdepth 1 -name 'profile1.sqlite-*' | wc -l)" -eq 0 ] && pass || fail "a journal or WAL beside the real export"

# 6. Hostile exports: exit 2, one message naming the file and what is wrong with it.
hostile() { # hostile WHAT FILE NEEDLE
    expect_status 2 "$1" -- "$CCL_HARNESS" metrics "$2"
    expect_output "$1 names the file" "$2: "
    expect_output "$1 says why" "$3"
    if grep -qiE "segmentation|terminate called|internal" <<<"$OUT"; then fail "$1: $OUT"; else pass; fi
}
bad="$SCRATCH/bad"
mkdir -p "$bad"
printf '{"traceEvents": []}\n%0200d' 0 >"$bad/nsys_0.sqlite"
hostile "JSON named .sqlite" "$bad/nsys_0.sqlite" "not an SQLite database"
head -c 10000 "$two/nsys_0.sqlite" >"$bad/cut.sqlite"
hostile "truncated" "$bad/cut.sqlite" "truncated"
head -c 8192 "$two/nsys_0.sqlite" >"$bad/paged.sqlite"
hostile "header past the end" "$bad/paged.sqlite" "truncated: its header counts 6 pages of 4096 bytes"
/usr/bin/python3 - "$two/nsys_0.sqlite" "$bad/huge.sqlite" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[28:32] = (2621440).to_bytes(4, "big")  # 10 GiB of 4 KiB pages
open(sys.argv[2], "wb").write(data)
EOF
hostile "a 10 GiB page count" "$bad/huge.sqlite" "its header counts 2621440 pages of 4096 bytes (10737418240 bytes)"
/usr/bin/python3 "$make_export" view "$bad/view.sqlite"
hostile "a view named like the kernel table" "$bad/view.sqlite" "CUPTI_ACTIVITY_KIND_KERNEL is a view, not a table: refused"
/usr/bin/python3 "$make_export" reversed "$bad/reversed.sqlite"
hostile "a kernel ending before it starts" "$bad/reversed.sqlite" "CUPTI_ACTIVITY_KIND_KERNEL row 3: end (99000) before start (100000)"
# In a directory the bad export is still the error, named.
expect_status 2 "a bad export in a directory" -- "$CCL_HARNESS" metrics "$bad"
expect_output "named" "nsys_0.sqlite: not an SQLite database"

finish
