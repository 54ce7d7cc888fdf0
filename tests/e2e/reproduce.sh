#!/bin/bash
# `ccl-harness reproduce` end to end on the local cluster, for real: a fresh bundle re-renders
# byte-identical scripts and runs again to a bundle that verifies and names its origin; a bundle
# made with other templates shows the diff and stops; a framework branch that moved after the
# run still reproduces the pinned commit; bad and unsafe bundles are refused before anything runs.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
cache="$SCRATCH/git-cache"
export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.invalid GIT_COMMITTER_NAME=Test \
    GIT_COMMITTER_EMAIL=test@example.invalid GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
# Scratch directories of verify/reproduce go here, so that leftovers can be seen.
export TMPDIR="$SCRATCH/tmp"
mkdir -p "$TMPDIR"

bundle_of() { sed -n 's/^  bundle: \(.*\.tar\.zst\).*/\1/p' <<<"$OUT" | tail -n 1; }
run_dirs() { find "$results" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
provenance() { # provenance BUNDLE EXPR: evaluates EXPR over the bundle's provenance.json (as p)
    local name
    name=$(basename "$1" .tar.zst)
    tar --zstd -xOf "$1" "$name/provenance.json" | /usr/bin/python3 -c 'import json,sys; p=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}
manifest_sha() {
    local name
    name=$(basename "$1" .tar.zst)
    tar --zstd -xOf "$1" "$name/manifest.json" | sha256sum | cut -d' ' -f1
}

# 1. A fresh bundle reproduces: same scripts, a new completed run, a bundle that verifies.
expect_status 0 "tiny-ddp runs and packs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
original=$(bundle_of)
[ -f "$original" ] && pass || fail "run printed no bundle path"
before=$(run_dirs)
expect_status 0 "reproduce --dry-run" -- "$CCL_HARNESS" reproduce "$original" --dry-run --results "$results"
expect_output "dry run compares the scripts" "files identical to the bundle's"
expect_output "dry run says what it would do" "dry run: would run tiny-ddp on local"
[ "$(run_dirs)" -eq "$before" ] && pass || fail "--dry-run created a run directory"
expect_status 0 "reproduce a fresh bundle" -- "$CCL_HARNESS" reproduce "$original" --results "$results"
expect_output "scripts identical" "files identical to the bundle's"
copy=$(bundle_of)
[ -f "$copy" ] && [ "$copy" != "$original" ] && pass || fail "reproduce printed no new bundle"
expect_status 0 "the reproduction's bundle verifies" -- "$CCL_HARNESS" verify "$copy"
[ "$(provenance "$copy" 'p["reproduces"]["manifest_sha256"]')" = "$(manifest_sha "$original")" ] && pass ||
    fail "provenance.reproduces does not name the original manifest"
[ "$(provenance "$copy" 'p["reproduces"]["bundle"]')" = "$(basename "$original")" ] && pass || fail "reproduces.bundle"
# compare labels the reproduction by what it reproduces, never as a numbered second copy.
expect_status 0 "compare the original and its reproduction" -- "$CCL_HARNESS" compare "$original" "$copy"
expect_output "the reproduction is labelled" "reproduces $(basename "$original" .tar.zst)"
if grep -qF " (2)" <<<"$OUT"; then fail "a numbered label: $OUT"; else pass; fi
expect_status 0 "compare --json" -- "$CCL_HARNESS" compare "$original" "$copy" --json
if /usr/bin/python3 - "$OUT" "$(basename "$original" .tar.zst)" <<'PY'; then pass; else fail "compare --json reproduces: $OUT"; fi
import json, sys
runs = json.loads(sys.argv[1])["runs"]
assert [r["reproduces"] for r in runs] == ["", sys.argv[2]], runs
assert runs[1]["label"] == "reproduces " + sys.argv[2], runs[1]["label"]
PY
# Unpacked bundles reproduce too.
mkdir -p "$SCRATCH/unpacked"
tar --zstd -xf "$original" -C "$SCRATCH/unpacked"
expect_status 0 "reproduce an unpacked bundle (dry run)" -- \
    "$CCL_HARNESS" reproduce "$SCRATCH/unpacked/$(basename "$original" .tar.zst)" --dry-run --results "$results"

# 2. Templates changed since the bundle was made: the diff is shown and nothing runs...
home="$SCRATCH/home"
mkdir -p "$home"
cp -r templates clusters containers "$home/"
printf '# a line this harness version does not render\n' >>"$home/templates/torch-ddp/local/launch.sh.mustache"
expect_status 0 "run with other templates" -- env CCL_HARNESS_HOME="$home" "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
other=$(bundle_of)
before=$(run_dirs)
expect_status 1 "reproduce with changed templates stops" -- "$CCL_HARNESS" reproduce "$other" --results "$results"
expect_output "a unified diff" "-# a line this harness version does not render"
expect_output "the diff names the bundled file" "--- bundle/scripts/launch.sh"
expect_output "the way forward" "--use-bundled-scripts"
[ "$(run_dirs)" -eq "$before" ] && pass || fail "a run started although the scripts differ"
# ...unless asked to run the bundled scripts as they are.
expect_status 0 "--use-bundled-scripts runs them" -- "$CCL_HARNESS" reproduce "$other" --use-bundled-scripts --results "$results"
run=$(ls -dt "$results"/*/ | head -n 1)
grep -qF "a line this harness version does not render" "$run/rendered/launch.sh" && pass || fail "the bundled launch.sh did not run"

# 3. The framework branch moves after the run: reproduce checks out the pinned commit.
upstream="$SCRATCH/upstream"
mkdir -p "$upstream"
git -C "$upstream" init --quiet -b main
cp workloads/tiny-ddp/train.py "$upstream/"
git -C "$upstream" add train.py
git -C "$upstream" commit --quiet -m "tiny workload"
pinned=$(git -C "$upstream" rev-parse HEAD)
mkdir -p "$SCRATCH/card"
card="$SCRATCH/card/tiny-ddp.yaml"
cp workloads/tiny-ddp/tiny-ddp.yaml "$card"
printf '  source:\n    repo: %s\n    ref: main\n' "$upstream" >>"$card"
expect_status 0 "run from a git source" -- "$CCL_HARNESS" run "$card" --results "$results" --git-cache "$cache"
sourced=$(bundle_of)
printf 'raise SystemExit("the branch moved")\n' >"$upstream/train.py"
git -C "$upstream" commit --quiet -am "break it"
expect_status 1 "a new run of the moved branch fails" -- "$CCL_HARNESS" run "$card" --results "$results" --git-cache "$cache"
expect_status 0 "reproduce after the branch moved" -- "$CCL_HARNESS" reproduce "$sourced" --results "$results" --git-cache "$cache"
expect_output "the pinned commit is used" "pinned $upstream at ${pinned:0:12}"
moved=$(bundle_of)
[ "$(provenance "$moved" 'p["sources"][0]["commit"]')" = "$pinned" ] && pass || fail "the reproduction did not run the pinned commit"

# 4. Bad bundles: nothing runs, nothing is left behind.
before=$(run_dirs)
expect_status 2 "a missing bundle" -- "$CCL_HARNESS" reproduce "$SCRATCH/nope.tar.zst" --results "$results"
expect_output "names it" "nope.tar.zst"
damaged="$SCRATCH/damaged"
mkdir -p "$damaged"
tar --zstd -xf "$original" -C "$damaged"
name=$(basename "$original" .tar.zst)
printf 'x' | dd of="$damaged/$name/scripts/launch.sh" bs=1 seek=10 conv=notrunc status=none
expect_status 1 "a tampered bundle is not reproduced" -- "$CCL_HARNESS" reproduce "$damaged/$name" --results "$results"
expect_output "names the tampered file" "scripts/launch.sh"
head -c 2000 "$original" >"$SCRATCH/truncated.tar.zst"
OUT=$("$CCL_HARNESS" reproduce "$SCRATCH/truncated.tar.zst" --results "$results" 2>&1) && status=0 || status=$?
[ "$status" -eq 1 ] || [ "$status" -eq 2 ] && pass || fail "a truncated bundle: exit $status"
canary="$SCRATCH/escaped"
mkdir -p "$SCRATCH/evil"
/usr/bin/python3 - "$SCRATCH/evil/evil.tar" "$canary" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tar:
    for name in ["evil/manifest.json", "../" * 12 + sys.argv[2].lstrip("/")]:
        info = tarfile.TarInfo(name)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
PY
zstd -q -f "$SCRATCH/evil/evil.tar" -o "$SCRATCH/evil/evil.tar.zst"
expect_status 2 "an archive escaping with ../ is refused" -- "$CCL_HARNESS" reproduce "$SCRATCH/evil/evil.tar.zst" --results "$results"
[ ! -e "$canary" ] && pass || fail "the ../ entry was written"
[ "$(run_dirs)" -eq "$before" ] && pass || fail "a bad bundle started a run"
[ -z "$(ls -A "$TMPDIR")" ] && pass || fail "scratch directories left in TMPDIR: $(ls -A "$TMPDIR")"

finish
