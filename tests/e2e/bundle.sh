#!/bin/bash
# `ccl-harness pack` on a real tiny-ddp run: packed twice to the same bytes, unpacked with tar and
# checked against its manifest with sha256sum; the runs it refuses; Ctrl-C while packing.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"

expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
run=$(latest_run)
run=${run%/}
name=$(basename "$run")
# Runs write provenance.json once the provenance step is wired in; until then, a stand-in.
[ -f "$run/provenance.json" ] || echo '{"format": 1}' >"$run/provenance.json"

no_leftovers() { # no_leftovers DIR WHAT: no temporary archive may survive a pack
    if find "$1" -name '*.tmp-*' | grep -q .; then fail "$2: temporary file left: $(find "$1" -name '*.tmp-*')"; else pass; fi
}

# 1. The same run directory packs to the same bytes, whatever the thread count.
expect_status 0 "pack" -- "$CCL_HARNESS" pack "$run" --out "$SCRATCH/first.tar.zst"
expect_output "prints the bundle" "bundle: $SCRATCH/first.tar.zst"
first=$(sha256sum "$SCRATCH/first.tar.zst" | cut -d' ' -f1)
expect_output "prints the archive's sha256" "sha256: $first"
expect_status 0 "pack again, one thread" -- "$CCL_HARNESS" pack "$run" --out "$SCRATCH/second.tar.zst" --threads 1
second=$(sha256sum "$SCRATCH/second.tar.zst" | cut -d' ' -f1)
[ "$first" = "$second" ] && pass || fail "packing twice gave $first and $second"

expect_status 0 "pack --json" -- "$CCL_HARNESS" pack "$run" --out "$SCRATCH/third.tar.zst" --json
if /usr/bin/python3 - "$OUT" "$first" "$SCRATCH/third.tar.zst" "$name" <<'PY'; then pass; else fail "pack --json: $OUT"; fi
import json, os, sys
r = json.loads(sys.argv[1])
assert r["sha256"] == sys.argv[2] and r["bundle"] == sys.argv[3] and r["name"] == sys.argv[4], r
assert r["size"] == os.path.getsize(sys.argv[3]) and r["traces"] == ["json"], r
PY

# 2. Unpacked with tar, it is the documented layout and sha256sum agrees with its manifest.
mkdir -p "$SCRATCH/unpacked"
tar --zstd -xf "$SCRATCH/first.tar.zst" -C "$SCRATCH/unpacked" && pass || fail "tar cannot unpack the bundle"
bundle="$SCRATCH/unpacked/$name"
for file in "$name.yaml" kineto_trace_0.json kineto_trace_1.json scripts/launch.sh scripts/card.yaml logs/rank_0.log \
    run.json provenance.json manifest.json; do
    [ -f "$bundle/$file" ] && pass || fail "the bundle lacks $file"
done
[ -x "$bundle/scripts/launch.sh" ] && pass || fail "scripts/launch.sh lost its execute bit"
[ ! -e "$bundle/scripts/logs" ] && [ ! -e "$bundle/scripts/probe" ] && [ ! -e "$bundle/traces" ] && pass ||
    fail "scripts/ holds more than what was rendered: $(ls "$bundle/scripts")"
[ "$(tar --zstd -tf "$SCRATCH/first.tar.zst" | tail -n 1)" = "$name/manifest.json" ] && pass || fail "manifest.json is not last"
if /usr/bin/python3 - "$bundle" "$name" <<'PY' >"$SCRATCH/sums"; then pass; else fail "manifest or card content"; fi
import json, os, sys, yaml
bundle, name = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(bundle, "manifest.json")))
assert manifest["format"] == 1 and manifest["harness_version"], manifest
paths = [f["path"] for f in manifest["files"]]
assert paths == sorted(paths), "sorted"
on_disk = sorted(os.path.relpath(os.path.join(d, f), bundle) for d, _, fs in os.walk(bundle) for f in fs)
assert sorted(paths + ["manifest.json"]) == on_disk, (paths, on_disk)
card = yaml.safe_load(open(os.path.join(bundle, name + ".yaml")))
assert card["trace_url"] == name + ".tar.zst", card["trace_url"]
assert card["metric_source"]["traces"] == ["json"], card["metric_source"]
for f in manifest["files"]:
    print(f"{f['sha256']}  {f['path']}")
PY
(cd "$bundle" && sha256sum -c --quiet "$SCRATCH/sums") && pass || fail "sha256sum -c against manifest.json"
diff <(grep -v '^trace_url:' "$run/card.yaml") <(grep -v '^trace_url:' "$bundle/$name.yaml") >/dev/null && pass ||
    fail "the effective card differs from the run's card beyond trace_url"

# 3. Beside the run directory by default; never over an existing bundle unless --force.
rm -f "$results/$name.tar.zst"  # `run` may have packed it already
expect_status 0 "pack with the default output" -- "$CCL_HARNESS" pack "$run"
[ "$(sha256sum "$results/$name.tar.zst" | cut -d' ' -f1)" = "$first" ] && pass || fail "default output differs"
expect_status 2 "an existing bundle is kept" -- "$CCL_HARNESS" pack "$run"
expect_output "says how to replace it" "exists; pass --force to replace it"
expect_status 0 "--force replaces it" -- "$CCL_HARNESS" pack "$run" --force

# 4. What pack refuses, with exit 2 and nothing written.
variant() { # variant NAME: a copy of the run directory to break
    rm -rf "${SCRATCH:?}/$1"
    mkdir -p "$SCRATCH/$1"
    cp -a "$run" "$SCRATCH/$1/$name"
    echo "$SCRATCH/$1/$name"
}
refused() { # refused WHAT MESSAGE DIR [ARGS...]
    local what=$1 message=$2 dir=$3
    shift 3
    expect_status 2 "$what" -- "$CCL_HARNESS" pack "$dir" --out "$SCRATCH/refused.tar.zst" "$@"
    expect_output "$what: message" "$message"
    [ ! -e "$SCRATCH/refused.tar.zst" ] && pass || fail "$what: a bundle was written"
    no_leftovers "$SCRATCH" "$what"
}
dir=$(variant failed)
/usr/bin/python3 -c 'import json,sys; p=sys.argv[1]+"/run.json"; r=json.load(open(p)); r["state"]="failed"; r["reason"]="rank 1 exited 3"; json.dump(r, open(p, "w"))' "$dir"
refused "a failed run" "is failed (rank 1 exited 3); only a completed run is packed" "$dir"
dir=$(variant noprov)
rm "$dir/provenance.json"
refused "no provenance.json" "made by an older harness or interrupted; rerun it" "$dir"
dir=$(variant link)
ln -s /etc/passwd "$dir/logs/passwd.log"
refused "a symbolic link in logs/" "passwd.log\": a symbolic link cannot go into a bundle" "$dir"
dir=$(variant notraces)
rm "$dir"/traces/*
refused "no traces" "no traces" "$dir"
refused "not a run directory" "not a run directory (no run.json)" "$SCRATCH/unpacked"
refused "a missing directory" "not a run directory" "$SCRATCH/absent"
expect_status 2 "an output inside the run directory" -- "$CCL_HARNESS" pack "$run" --out "$run/logs/b.tar.zst"
expect_output "says why" "cannot be written inside the run directory"
[ ! -e "$run/logs/b.tar.zst" ] && pass || fail "a bundle was written inside the run directory"

# 5. Ctrl-C while packing: exit 130, no bundle, no temporary file. A sparse 4 GiB trace takes
# seconds to hash and compress, and no disk.
dir=$(variant interrupt)
truncate -s 4G "$dir/traces/kineto_trace_2.json"
"$CCL_HARNESS" pack "$dir" --out "$SCRATCH/interrupt/out.tar.zst" >"$SCRATCH/interrupt.log" 2>&1 &
packer=$!
for _ in $(seq 200); do
    find "$SCRATCH/interrupt" -maxdepth 1 -name '*.tmp-*' | grep -q . && break
    sleep 0.05
done
kill -INT "$packer"
status=0
wait "$packer" || status=$?
[ "$status" -eq 130 ] && pass || fail "interrupted pack: exit $status, wanted 130: $(cat "$SCRATCH/interrupt.log")"
grep -q "interrupted" "$SCRATCH/interrupt.log" && pass || fail "interrupted pack says nothing: $(cat "$SCRATCH/interrupt.log")"
[ ! -e "$SCRATCH/interrupt/out.tar.zst" ] && pass || fail "an interrupted pack left a bundle"
no_leftovers "$SCRATCH/interrupt" "interrupted pack"
rm -rf "$SCRATCH/interrupt"

finish
