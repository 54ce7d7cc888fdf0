#!/bin/bash
# `ccl-harness verify`, the maintainers' submission checker: bundles made from a real tiny-ddp run
# pass, every kind of tampering and the common mistakes are named, and hostile archives are
# refused without anything written outside the scratch directory, which is always removed.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
fixture="$CCL_SOURCE_DIR/tests/e2e/fixtures/bundle_fixture.py"
PY=/usr/bin/python3
results="$CCL_TEST_TMP/verify-results"
rm -rf "$results"

# verify unpacks archives under $TMPDIR: a fresh one shows whether anything is left behind.
tmp="$SCRATCH/tmp"
mkdir -p "$tmp"
verify() { TMPDIR="$tmp" "$CCL_HARNESS" verify "$@"; }
no_leftovers() { # no_leftovers WHAT
    if [ -z "$(ls -A "$tmp")" ]; then pass; else fail "$1: left in TMPDIR: $(ls -A "$tmp")"; rm -rf "${tmp:?}"/*; fi
}
flip_byte() { # flip_byte FILE OFFSET
    "$PY" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[int(sys.argv[2])]^=1; open(p,"wb").write(b)' "$1" "$2"
}

# 1. A real run, assembled into a bundle as docs/bundle.md lays it out.
expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
auto_bundle=$(sed -n 's/^ *bundle: \([^ ]*\.tar\.zst\).*/\1/p' <<<"$OUT" | head -n 1)
bundles="$SCRATCH/bundles"
assemble_latest_run "$bundles"
archive="$SCRATCH/$name.tar.zst"
pack_dir "$bundles" "$name" "$archive"

expect_status 0 "a bundle directory is valid" -- verify "$bundle"
expect_output "summary" "$bundle: valid ("
expect_output "two traces, ten steps" "2 traces, 10 steps)"
expect_status 0 "its .tar.zst is valid" -- verify "$archive"
expect_output "summary" "$archive: valid ("
no_leftovers "a valid archive"
expect_status 0 "--json" -- verify --json "$archive"
if "$PY" - "$OUT" "$name" <<'PY'; then pass; else fail "--json report: $OUT"; fi
import json, sys
r = json.loads(sys.argv[1])
assert r["valid"] is True and r["name"] == sys.argv[2] and r["problems"] == [], r
assert [t["path"] for t in r["traces"]] == ["kineto_trace_0.json", "kineto_trace_1.json"], r["traces"]
assert all(t["form"] == "kineto" and t["steps"] == 5 and t["events"] > 0 for t in r["traces"]), r["traces"]
PY

# What `run` and `ccl-harness pack` make must verify too, once they pack (another part of issue 5).
if [ -n "$auto_bundle" ]; then
    expect_status 0 "the bundle run packed is valid" -- verify "$auto_bundle"
    # A bundle packed before ttft and tpot existed (its metrics.json lacks them, its manifest
    # matches) is still valid: verify says what the older harness did not store.
    older="$SCRATCH/older"
    rm -rf "$older" && mkdir -p "$older" && tar --zstd -xf "$auto_bundle" -C "$older"
    older_dir=$(find "$older" -mindepth 1 -maxdepth 1 -type d)
    "$PY" -c 'import json,sys; p=sys.argv[1]; j=json.load(open(p)); [j["metrics"].pop(m) for m in ("ttft", "tpot")]; json.dump(j, open(p, "w"))' \
        "$older_dir/metrics.json"
    "$PY" "$fixture" manifest "$older_dir"
    expect_status 0 "a bundle packed before ttft and tpot is valid" -- verify "$older_dir"
    expect_output "saying what it lacks" "metrics.json: has no tpot, ttft: the bundle was packed by a harness without them"
fi
packed="$SCRATCH/packed/$name.tar.zst"
mkdir -p "$SCRATCH/packed"
if "$CCL_HARNESS" pack "$run" --out "$packed" >"$SCRATCH/pack.log" 2>&1; then
    expect_status 0 "a bundle from ccl-harness pack is valid" -- verify "$packed"
else
    echo "note: ccl-harness pack is not usable yet ($(tail -n 1 "$SCRATCH/pack.log")); checked hand-made bundles only"
fi

# 2. Tampering: one flipped byte in a trace, a script, the card; a deleted file; an added file.
# Each is named, in the directory and in its archive.
mutate() { # mutate CASE: a fresh copy of the bundle under $SCRATCH/CASE/<name>
    rm -rf "${SCRATCH:?}/$1"
    mkdir -p "$SCRATCH/$1"
    cp -r "$bundle" "$SCRATCH/$1/"
    copy="$SCRATCH/$1/$name"
    copy_archive="$SCRATCH/$1/$name.tar.zst"
}
expect_invalid() { # expect_invalid WHAT NEEDLE: the last copy and its archive both exit 1 and name it
    expect_status 1 "$1 (directory)" -- verify "$copy"
    expect_output "$1 (directory)" "$copy: $2"
    pack_dir "$(dirname "$copy")" "$name" "$copy_archive"
    expect_status 1 "$1 (archive)" -- verify "$copy_archive"
    expect_output "$1 (archive)" "$copy_archive: $2"
    expect_output "$1 (archive)" "invalid ("
    no_leftovers "$1"
}
mutate trace
flip_byte "$copy/kineto_trace_1.json" 200
expect_invalid "a flipped byte in a trace" "kineto_trace_1.json: sha256 is "
mutate script
flip_byte "$copy/scripts/launch.sh" 10
expect_invalid "a flipped byte in a script" "scripts/launch.sh: sha256 is "
mutate card
flip_byte "$copy/$name.yaml" 3
expect_invalid "a flipped byte in the card" "$name.yaml: sha256 is "
mutate deleted
rm "$copy/logs/rank_0.log"
expect_invalid "a deleted file" "logs/rank_0.log: missing (listed in the manifest)"
mutate added
echo "not part of the run" >"$copy/notes.txt"
expect_invalid "an added file" "notes.txt: not listed in the manifest"

# Several problems at once are all listed.
mutate several
flip_byte "$copy/kineto_trace_0.json" 100
rm "$copy/logs/rank_1.log"
echo extra >"$copy/extra.txt"
expect_status 1 "several problems" -- verify "$copy"
expect_output "several: trace" "kineto_trace_0.json: sha256 is "
expect_output "several: deleted" "logs/rank_1.log: missing"
expect_output "several: added" "extra.txt: not listed"
expect_output "several: count" "invalid (3 problems)"

# A truncated archive is a damaged submission: exit 1, naming the archive.
size=$(stat -c %s "$archive")
head -c $((size / 2)) "$archive" >"$SCRATCH/truncated.tar.zst"
expect_status 1 "a truncated archive" -- verify "$SCRATCH/truncated.tar.zst"
expect_output "truncated archive named" "$SCRATCH/truncated.tar.zst: truncated or damaged archive"
no_leftovers "a truncated archive"

# 3. Common mistakes get a message that says what to do.
expect_status 1 "a run directory" -- verify "$run"
expect_output "run directory" "this is a run directory; pack it first: ccl-harness pack $run"
tar -czf "$SCRATCH/$name.tar.gz" -C "$bundles" "$name"
expect_status 2 "a .tar.gz" -- verify "$SCRATCH/$name.tar.gz"
expect_output ".tar.gz" "a gzip-compressed file (a .tar.gz?); a bundle is a zstd-compressed tar"
mutate renamed
mv "$copy/kineto_trace_0.json" "$copy/rank0_trace.json"
"$PY" "$fixture" manifest "$copy"
expect_status 1 "a renamed trace" -- verify "$copy"
expect_output "renamed trace" "rank0_trace.json: a trace under a name the CCL-Bench tools do not read; expected kineto_trace_0.json"
expect_output "rank count" "card says total_count: 2 but the bundle has 1 rank trace (kineto_trace_1)"
mutate truncated-trace
head -c 5000 "$bundle/kineto_trace_1.json" >"$copy/kineto_trace_1.json"
"$PY" "$fixture" manifest "$copy"
expect_status 1 "a truncated trace" -- verify "$copy"
expect_output "truncated trace" "kineto_trace_1.json: truncated at byte 5000"
expect_status 2 "no such bundle" -- verify "$SCRATCH/absent.tar.zst"
expect_output "no such bundle" "absent.tar.zst: no such file or directory"

# Several bundles: each gets its summary; the exit status is the worst.
expect_status 1 "a valid and an invalid bundle" -- verify "$bundle" "$SCRATCH/added/$name"
expect_output "first summary" "$bundle: valid"
expect_output "second summary" "$SCRATCH/added/$name: invalid (1 problem)"
expect_status 2 "with an unusable one" -- verify "$bundle" "$SCRATCH/absent.tar.zst"
expect_output "the valid one is still reported" "$bundle: valid"
expect_status 2 "--json with an unusable one" -- verify --json "$bundle" "$SCRATCH/absent.tar.zst"
if "$PY" - "$OUT" <<'PY'; then pass; else fail "--json array: $OUT"; fi
import json, sys
r = json.loads(sys.argv[1])
assert isinstance(r, list) and len(r) == 2, r
assert r[0]["valid"] is True and r[1]["valid"] is False and "no such file" in r[1]["error"], r
PY
expect_status 1 "--quiet keeps the summary only" -- verify --quiet "$SCRATCH/several/$name"
[ "$(wc -l <<<"$OUT")" -eq 1 ] && pass || fail "--quiet printed: $OUT"

# 4. Hostile archives: refused with exit 2; the entry's target never appears; nothing is left.
for kind in dotdot absolute symlink device bomb; do
    canary="$SCRATCH/canary-$kind"
    "$PY" "$fixture" craft "$kind" "$SCRATCH/$kind.tar.zst" "$canary"
    expect_status 2 "crafted archive: $kind" -- verify "$SCRATCH/$kind.tar.zst"
    expect_output "$kind refused" "$SCRATCH/$kind.tar.zst: refused: entry "
    [ ! -e "$canary" ] && [ ! -L "$canary" ] && pass || fail "$kind: $canary was written"
    no_leftovers "crafted archive: $kind"
done
expect_status 2 "dotdot" -- verify "$SCRATCH/dotdot.tar.zst"
expect_output "dotdot reason" "a path that leaves the target directory"
expect_status 2 "absolute" -- verify "$SCRATCH/absolute.tar.zst"
expect_output "absolute reason" "an absolute path"
expect_status 2 "symlink" -- verify "$SCRATCH/symlink.tar.zst"
expect_output "symlink reason" "a symbolic link"
expect_status 2 "device" -- verify "$SCRATCH/device.tar.zst"
expect_output "device reason" "a device node"
expect_status 2 "bomb" -- verify "$SCRATCH/bomb.tar.zst"
expect_output "bomb reason" "a decompression bomb?"
rm -f "$SCRATCH/bomb.tar.zst"
"$PY" "$fixture" craft twotop "$SCRATCH/twotop.tar.zst" "$SCRATCH/canary-twotop"
expect_status 1 "two top-level directories" -- verify "$SCRATCH/twotop.tar.zst"
expect_output "two top-level directories" "a bundle archive holds exactly one directory, <name>/, at its top level; this one holds crafted/, other/"
no_leftovers "two top-level directories"

# 5. Ctrl-C while a large archive is checked: exit 130 and the scratch directory is gone.
mutate big
"$PY" "$fixture" bigtrace "$copy/kineto_trace_1.json" 256
"$PY" "$fixture" manifest "$copy"
pack_dir "$SCRATCH/big" "$name" "$SCRATCH/big.tar.zst"
rm -rf "${SCRATCH:?}/big"
TMPDIR="$tmp" "$CCL_HARNESS" verify "$SCRATCH/big.tar.zst" >"$SCRATCH/interrupt.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -n "$(ls -A "$tmp")" ] && break; sleep 0.02; done
kill -INT "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 130 ] && pass || fail "Ctrl-C: exit $status, wanted 130: $(cat "$SCRATCH/interrupt.log")"
no_leftovers "Ctrl-C"
rm -f "$SCRATCH/big.tar.zst"

finish
