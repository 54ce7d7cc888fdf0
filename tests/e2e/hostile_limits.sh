#!/bin/bash
# Small hostile inputs must cost a clear refusal, never a crash, a hang or gigabytes of memory
# (issue 13): deep JSON nesting, gzip bombs squeezed again by zstd, YAML alias bombs and
# non-scalar keys, data after the tar's end, and card values PyYAML would misread. The limits
# themselves are docs/limits.md's.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
fixture="$CCL_SOURCE_DIR/tests/e2e/fixtures/bundle_fixture.py"
PY=/usr/bin/python3
tmp="$SCRATCH/tmp"
mkdir -p "$tmp"
h() { TMPDIR="$tmp" "$CCL_HARNESS" "$@"; }
# A memory ceiling for the commands that once blew up: 1 GiB of address space is far more than
# an honest small bundle needs, far less than the bombs below took.
capped() { (ulimit -v 1048576 && TMPDIR="$tmp" timeout 60 "$CCL_HARNESS" "$@"); }

# One real bundle to start from: tiny-ddp, run and packed by the harness.
results="$SCRATCH/results"
expect_status 0 "tiny-ddp runs" -- h run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
archive=$(ls "$results"/*.tar.zst | head -n 1)
name=$(basename "$archive" .tar.zst)
expect_status 0 "the honest bundle verifies" -- h verify "$archive"
base="$SCRATCH/base"
mkdir -p "$base"
tar --zstd -xf "$archive" -C "$base"

variant() { # variant NAME: a fresh copy of the bundle directory at $SCRATCH/NAME/$name
    rm -rf "${SCRATCH:?}/$1"
    mkdir -p "$SCRATCH/$1"
    cp -r "$base/$name" "$SCRATCH/$1/"
    echo "$SCRATCH/$1/$name"
}
repack() { # repack NAME: re-manifests the variant and packs it as $SCRATCH/NAME.tar.zst
    "$PY" "$fixture" manifest "$SCRATCH/$1/$name"
    pack_dir "$SCRATCH/$1" "$name" "$SCRATCH/$1.tar.zst"
}

# 1. A trace nested 200,000 arrays deep: an error naming the file, not SIGSEGV.
dir=$(variant deep)
"$PY" -c 'import sys; open(sys.argv[1], "w").write("{\"traceEvents\": [{\"ph\": \"i\", \"args\": " + "[" * 200000 + "]" * 200000 + "}]}")' "$dir/kineto_trace_0.json"
repack deep
expect_status 1 "verify: a trace nested 200,000 deep is invalid" -- capped verify "$SCRATCH/deep.tar.zst"
expect_output "the nesting is named" "nested deeper than 1024"
expect_output "the trace is named" "kineto_trace_0.json"
expect_status 2 "metrics: a trace nested 200,000 deep is refused" -- capped metrics "$dir"
expect_output "metrics names the nesting" "nested deeper than the limit of 1024"

# 2. A gzip'd trace that inflates to 60 MiB of white space, in a bundle of a few tens of KB:
# refused by its fully uncompressed size, before anything reads it whole.
dir=$(variant gzbomb)
"$PY" - "$dir/kineto_trace_0.json" <<'PY'
import gzip, os, sys
path = sys.argv[1]
text = open(path, "rb").read().rstrip()
with gzip.open(path + ".gz", "wb", 9) as out:
    out.write(text[:-1])
    chunk = b" " * (1 << 20)
    for _ in range(60):
        out.write(chunk)
    out.write(b"}")
os.remove(path)
PY
sed -i 's/kineto_trace_0\.json/kineto_trace_0.json.gz/g' "$dir/provenance.json" 2>/dev/null || true
repack gzbomb
size=$(stat -c %s "$SCRATCH/gzbomb.tar.zst")
[ "$size" -lt 400000 ] && pass || fail "the gzip bomb bundle is not small: $size bytes"
expect_status 2 "verify: a gzip bomb squeezed by zstd is refused" -- capped verify "$SCRATCH/gzbomb.tar.zst"
expect_output "counted inflated" "counting gzip files inflated"
expect_output "names the variable" "CCL_HARNESS_MAX_INFLATE_RATIO"
expect_status 2 "metrics: the same bundle is refused" -- capped metrics "$SCRATCH/gzbomb.tar.zst"
expect_output "metrics: counted inflated" "decompression bomb"
# Raised on purpose, the same bundle unpacks, and the reader still holds no 60 MiB unit.
OUT=$(CCL_HARNESS_MAX_INFLATE_RATIO=100000 CCL_HARNESS_MAX_JSON_VALUE=8M capped metrics "$SCRATCH/gzbomb.tar.zst" 2>&1) && st=0 || st=$?
[ "$st" -eq 2 ] && pass || fail "metrics with the ratio raised: exit $st: $OUT"
expect_output "one value bounded" "larger than 8 MiB"

# 3. A YAML alias bomb in the bundle's card: verify says invalid (validate, compare and submit
# all load cards through the same reader), in bounded time and memory.
dir=$(variant alias)
{
    echo 'lol0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    for i in 1 2 3 4 5 6 7 8; do
        p=$((i - 1))
        echo "lol$i: &a$i [*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p]"
    done
} >>"$dir/$name.yaml"
repack alias
expect_status 1 "verify: an alias bomb in the card is invalid" -- capped verify "$SCRATCH/alias.tar.zst"
expect_output "the bomb is named" "an alias bomb?"
expect_status 2 "compare: the alias bomb is refused, not walked" -- capped compare "$SCRATCH/alias.tar.zst" "$archive"
expect_output "compare names the bound" "CCL_HARNESS_MAX_YAML_EXPANDED"
# 3b. Within the bound, amplification: a card of ~600,000 nodes and a 300 KB value aliased 50
# times, in a bundle of a few tens of KB. compare compares the first 10,000 paths, prints at most
# 200 differing ones and bounds each value; it says what it left out.
dir=$(variant amplified)
{
    "$PY" -c 'print("a_long: &l " + "x" * 300000); print("a_longs: [" + ",".join(["*l"] * 50) + "]")'
    echo 'amp0: &b0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    for i in 1 2 3 4 5; do
        p=$((i - 1))
        echo "amp$i: &b$i [*b$p,*b$p,*b$p,*b$p,*b$p,*b$p,*b$p,*b$p,*b$p]"
    done
} >>"$dir/$name.yaml"
repack amplified
size=$(stat -c %s "$SCRATCH/amplified.tar.zst")
[ "$size" -lt 200000 ] && pass || fail "the amplifying bundle is not small: $size bytes"
expect_status 0 "compare: an amplifying card is compared within bounds" -- \
    capped compare "$SCRATCH/amplified.tar.zst" "$archive" --html "$SCRATCH/amplified.html"
[ "${#OUT}" -lt 200000 ] && pass || fail "compare printed ${#OUT} bytes for a small bundle"
page=$(stat -c %s "$SCRATCH/amplified.html")
[ "$page" -lt 2000000 ] && pass || fail "compare wrote a $page-byte page"
expect_output "what was not compared is said" "card has more than 10000 paths"
expect_output "what was not shown is said" "more differing path(s) (compare --json lists every one)"
expect_output "a long value is shown by its size and digest" "... (300000 bytes, sha256 "
grep -q "card has more than 10000 paths" "$SCRATCH/amplified.html" && pass || fail "the page does not say what it left out"
OUT=$(capped compare --json "$SCRATCH/amplified.tar.zst" "$archive" 2>&1) || fail "compare --json: $OUT"
"$PY" -c 'import json,sys; j=json.loads(sys.stdin.read()); assert max(r["card_paths_left_out"] for r in j["runs"]) > 500000, j["runs"]; assert len(j["differences"]) <= 10050' <<<"$OUT" &&
    pass || fail "compare --json: card_paths_left_out or the differences unbounded"
big="$SCRATCH/big.yaml"
"$PY" -c 'import sys; f=open(sys.argv[1],"w"); f.write("version: 1\n"); [f.write("k%d: %s\n" % (i, "x"*60)) for i in range(130000)]' "$big"
expect_status 2 "validate: an 8 MB card is refused by size" -- capped validate "$big"
expect_output "size named" "CCL_HARNESS_MAX_CARD_BYTES"

# 4. Non-scalar mapping keys: refused where the card is read, with file:line:col.
dir=$(variant keys)
printf '? [a, b]\n: 1\n' >>"$dir/$name.yaml"
repack keys
expect_status 1 "verify: a sequence as a mapping key is invalid" -- h verify "$SCRATCH/keys.tar.zst"
expect_output "key refused with its position" "a mapping key must be a scalar"
# Issue 31: errors about a packed bundle's files name the bundle, never the scratch directory it
# was unpacked into (gone when the message is read, and none of the reader's business).
expect_status 2 "compare: the bad key" -- h compare "$SCRATCH/keys.tar.zst" "$archive"
expect_output "compare names the file in the bundle" "keys.tar.zst:$name/$name.yaml:"
if grep -q "ccl-harness-compare-" <<<"$OUT"; then fail "compare showed its scratch directory: $OUT"; else pass; fi
h metrics "$SCRATCH/keys.tar.zst" >"$SCRATCH/keys.metrics" 2>&1 || true
grep -q "keys.tar.zst:$name/$name.yaml:" "$SCRATCH/keys.metrics" && pass || fail "metrics: $(cat "$SCRATCH/keys.metrics")"
if grep -q "ccl-harness-metrics-" "$SCRATCH/keys.metrics"; then fail "metrics showed its scratch directory"; else pass; fi
expect_status 2 "metrics: the deep trace in a packed bundle" -- capped metrics "$SCRATCH/deep.tar.zst"
expect_output "metrics names the trace in the bundle" "deep.tar.zst:$name/kineto_trace_0.json: byte"
expect_status 1 "verify: the deep trace" -- capped verify "$SCRATCH/deep.tar.zst"
if grep -q "ccl-harness-verify-" <<<"$OUT"; then fail "verify showed its scratch directory: $OUT"; else pass; fi
printf 'version: 1\n{a: 1}: 2\n' >"$SCRATCH/flowkey.yaml"
expect_status 2 "validate: a flow mapping as a key" -- h validate "$SCRATCH/flowkey.yaml"
expect_output "position" "flowkey.yaml:2:1: a mapping key must be a scalar"

# 5. Nothing but zero padding after the tar's end: a second bundle, another zstd frame, or data
# inside the frame after the end-of-archive all make the bundle unusable.
cat "$archive" "$archive" >"$SCRATCH/twice.tar.zst"
expect_status 2 "verify: two bundles back to back" -- h verify "$SCRATCH/twice.tar.zst"
expect_output "frame named" "data after the zstd frame"
{ cat "$archive"; head -c 1000000 /dev/urandom | zstd -q -c; } >"$SCRATCH/appended.tar.zst"
expect_status 2 "verify: a zstd frame of data appended" -- h verify "$SCRATCH/appended.tar.zst"
expect_output "appended frame named" "data after the zstd frame"
{ zstd -q -d -c "$archive"; head -c 100000 /dev/urandom; } | zstd -q -c >"$SCRATCH/inside.tar.zst"
expect_status 2 "verify: data after the end-of-archive in the same frame" -- h verify "$SCRATCH/inside.tar.zst"
expect_output "trailing data named" "data after the tar's end-of-archive"
{ zstd -q -d -c "$archive"; head -c 20480 /dev/zero; } | zstd -q -c >"$SCRATCH/padded.tar.zst"
expect_status 0 "verify: zero padding after the end is fine" -- h verify "$SCRATCH/padded.tar.zst"

# 6. Card values PyYAML (the CCL-Bench tools' parser) would misread are quoted in the effective
# card: what PyYAML reads back is what the harness read.
values=($'carriage\rreturn' '=' 'yes' 'No' 'on' 'OFF' 'y' '~' '%percent' '@at' '`tick' $'tab\there' $'bell\x07' '010'
    '2024-01-01' '1:30' '<<' $'line\nbreak' $'nel\xc2\x85' $'ls\xe2\x80\xa8' ' padded ' 'a: b' 'x #y' '- item' '"q"' "'s'")
card="$SCRATCH/quoting.yaml"
cp workloads/tiny-ddp/tiny-ddp.yaml "$card"
cp workloads/tiny-ddp/train.py "$SCRATCH/"
sets=()
for i in "${!values[@]}"; do
    sets+=(--set "launch.env.V$i=$("$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "${values[$i]}")")
done
expect_status 0 "render with hostile values" -- h render "$card" --out "$SCRATCH/quoting" "${sets[@]}"
expect_status 0 "PyYAML reads the rendered card as the harness read it" -- "$PY" - "$SCRATCH/quoting/card.yaml" "${values[@]}" <<'PY'
import sys, yaml
env = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))["launch"]["env"]
bad = [(i, v, env.get("V%d" % i)) for i, v in enumerate(sys.argv[2:]) if env.get("V%d" % i) != v]
sys.exit("misread: %r" % bad if bad else 0)
PY
# The effective card in a bundle, whatever wrote its run directory: secrets redacted, quoted.
run_dir="$results/$name"
"$PY" - "$run_dir/card.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("launch:\n", "launch:\n  env:\n    HF_TOKEN: hunter2-secret\n    ODD: \"a\\rb=\"\n", 1)
open(path, "w").write(text)
PY
expect_status 0 "pack a run directory whose card holds a secret" -- h pack "$run_dir" --out "$SCRATCH/secret.tar.zst"
expect_status 0 "the bundle verifies" -- h verify "$SCRATCH/secret.tar.zst"
mkdir -p "$SCRATCH/secret"
tar --zstd -xf "$SCRATCH/secret.tar.zst" -C "$SCRATCH/secret"
bundle_card="$SCRATCH/secret/$name/$name.yaml"
! grep -q hunter2 "$bundle_card" && pass || fail "the secret value was packed in the card"
expect_status 0 "the bundle's card reads in PyYAML with the name kept and the value redacted" -- "$PY" -c '
import sys, yaml
env = yaml.safe_load(open(sys.argv[1]))["launch"]["env"]
assert env["HF_TOKEN"] == "[REDACTED]", env
assert env["ODD"] == "a\rb=", env' "$bundle_card"

[ -z "$(ls -A "$tmp")" ] && pass || fail "left in TMPDIR: $(ls -A "$tmp")"

# A card that is a FIFO is refused before it is read (reading it would block for ever).
mkfifo "$SCRATCH/fifo-card.yaml"
expect_status 2 "a FIFO card" -- timeout 10 "$CCL_HARNESS" validate "$SCRATCH/fifo-card.yaml"
expect_output "a FIFO named" "not a regular file"

# Issue 31 D1: ingest streams every trace it keeps, as metrics does, under the same 1 GiB ceiling.
# A sparse kineto_trace_1.json (its start, then 20 GiB of holes: nothing on disk) is refused at
# its first bad byte; a ~150 MB legacy autograd trace, gzip'd to a few MB, is converted an event
# at a time (it took 2.6 GB for 1.4 MB of gzip before).
ingest_dir="$SCRATCH/ingest-limits"
mkdir -p "$ingest_dir/sparse" "$ingest_dir/legacy"
cp "$results/$name/traces/kineto_trace_0.json" "$ingest_dir/sparse/"
printf '{"traceEvents":[' >"$ingest_dir/sparse/kineto_trace_1.json"
truncate -s 20G "$ingest_dir/sparse/kineto_trace_1.json"
expect_status 2 "ingest a sparse 20 GiB trace under 1 GiB" -- capped ingest workloads/tiny-ddp/tiny-ddp.yaml "$ingest_dir/sparse" \
    --results "$ingest_dir/results"
expect_output "names the file and the byte" "kineto_trace_1.json: byte 16:"
$PY - "$ingest_dir/legacy" <<'PY'
import gzip, os, sys
out = sys.argv[1]
event = '{"name": "aten::mm", "ph": "X", "ts": %d, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {"Input dims": [[64, 64], [64, 64]]}}'
def legacy(rank, count):
    parts = []
    for step in range(3):
        parts.append('{"name": "ProfilerStep#%d", "ph": "X", "ts": %d, "dur": %d, "tid": 1, "pid": "CPU functions", "args": {}}'
                     % (step, step * count * 3, count * 3))
        parts.extend(event % (step * count * 3 + i * 3) for i in range(count))
    return "[" + ",\n".join(parts) + "]"
open(os.path.join(out, "rank0_trace.json"), "w").write(legacy(0, 100))
with gzip.open(os.path.join(out, "rank1_trace.json.gz"), "wt", compresslevel=6) as f:
    f.write(legacy(1, 450000))
PY
legacy_bytes=$(gzip -dc "$ingest_dir/legacy/rank1_trace.json.gz" | wc -c)
[ "$legacy_bytes" -gt 140000000 ] && pass || fail "the legacy trace is only $legacy_bytes bytes"
expect_status 0 "ingest a ~150 MB legacy trace (gzip) under 1 GiB" -- \
    bash -c 'ulimit -v 1048576 && TMPDIR="$1" timeout 300 "$2" ingest workloads/tiny-ddp/tiny-ddp.yaml "$3" --results "$4"' \
    _ "$tmp" "$CCL_HARNESS" "$ingest_dir/legacy" "$ingest_dir/results"
expect_output "converted" "kineto_trace_1.json <- rank1_trace.json.gz"

# Issue 31 D14: metrics never opens a FIFO, named as the trace or lying in the directory, and says
# when it reads a trace through a link.
mkfifo "$SCRATCH/fifo-trace.json"
expect_status 2 "metrics on a FIFO" -- timeout 10 "$CCL_HARNESS" metrics "$SCRATCH/fifo-trace.json"
expect_output "the FIFO refused" "not a regular file"
mkdir -p "$SCRATCH/fifo-dir"
cp "$results/$name/traces/kineto_trace_0.json" "$SCRATCH/fifo-dir/"
mkfifo "$SCRATCH/fifo-dir/kineto_trace_1.json"
ln -s "$results/$name/traces/kineto_trace_1.json" "$SCRATCH/fifo-dir/linked_trace.json"
expect_status 0 "metrics on a directory holding a FIFO" -- timeout 20 "$CCL_HARNESS" metrics "$SCRATCH/fifo-dir"
expect_output "the link said" "linked_trace.json: a symbolic link to $results/$name/traces/kineto_trace_1.json, read there"
# ... and never quotes a byte of a file that is not a trace (a link in someone else's directory
# to one of yours: the message gets pasted).
mkdir -p "$SCRATCH/leak-dir"
printf 'Zsecret-key-material\n' >"$SCRATCH/leak-target"
ln -s "$SCRATCH/leak-target" "$SCRATCH/leak-dir/kineto_trace_0.json"
expect_status 2 "metrics on a link to a file that is no trace" -- "$CCL_HARNESS" metrics "$SCRATCH/leak-dir"
expect_output "says it is not a trace" "not a trace: expected a JSON object"
if grep -q "Z" <<<"${OUT#*found}"; then fail "metrics quoted the file's first byte: $OUT"; else pass; fi

finish
