#!/bin/bash
# Issue 13, paths, upload, output hygiene, args, signals and bounds: names from a bundle are data
# (a provenance run.card cannot make reproduce write elsewhere), what verify and submit print is
# escaped, --json is valid UTF-8, launch.args arrive exactly as written, sweeps are bounded and
# interruptible, metrics honours Ctrl-C, and uploads follow curl's semantics against small
# hostile servers (1xx, oversized answers, 5xx after the body, silence, Retry-After).
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
PY=/usr/bin/python3
fixture="$CCL_SOURCE_DIR/tests/e2e/fixtures/bundle_fixture.py"
export CCL_HARNESS_SUBMIT_RETRY_BASE_MS=10
tmp="$SCRATCH/tmp"
mkdir -p "$tmp"
export TMPDIR="$tmp"
no_escape_bytes() { # no_escape_bytes WHAT: $OUT holds no ESC, CR or invalid UTF-8
    if "$PY" -c 'import sys; t=sys.stdin.buffer.read(); t.decode("utf-8"); sys.exit(1 if (b"\x1b" in t or b"\r" in t) else 0)' <<<"$OUT"; then
        pass
    else
        fail "$1: raw control bytes or invalid UTF-8 printed: $(od -c <<<"$OUT" | head -n 5)"
    fi
}

# 1. Launch.args exactly as written: empty and space-holding items are words of their own.
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$work/"
cat >"$work/train.py" <<'PY'
import json, sys
json.dump(sys.argv[1:], sys.stdout)
PY
args=("--tag" "" " padded " "two words")
json_list=$("$PY" -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${args[@]}")
expect_status 0 "render with empty and padded args" -- "$CCL_HARNESS" render -q "$work/tiny-ddp.yaml" --set "launch.args=$json_list" --out "$SCRATCH/out"
result=$(RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 CCL_RUN_DIR="$SCRATCH/out" bash "$SCRATCH/out/launch.sh" 2>/dev/null || true)
got=$("$PY" -c 'import json,sys; a=json.loads(sys.stdin.read()); print(json.dumps(a[a.index("--trace-dir")+2:]))' <<<"$result" 2>/dev/null || echo "unreadable: $result")
[ "$got" = "$json_list" ] && pass || fail "launch.args arrived changed: $got, the card says $json_list"

# 2. Sweeps are counted before they are built, and Ctrl-C stops the checking.
v100=$(seq -s, 1 100)
SECONDS=0
expect_status 2 "a million-point sweep is refused" -- timeout -k 5 30 "$CCL_HARNESS" sweep workloads/tiny-ddp/tiny-ddp.yaml --dry-run \
    --vary "workload.data.batch_size=$v100" --vary "workload.data.seq_len=$v100" --vary "workload.model.iteration=$v100"
expect_output "limit named" "1000000 points, over the limit of 1000"
[ "$SECONDS" -lt 10 ] && pass || fail "refusing the sweep took ${SECONDS}s"
expect_status 2 "--max-points lowers the limit" -- "$CCL_HARNESS" sweep workloads/tiny-ddp/tiny-ddp.yaml --dry-run \
    --max-points 2 --vary "workload.data.batch_size=8,16,32"
expect_output "lowered limit named" "3 points, over the limit of 2"
# Bash starts background jobs with SIGINT ignored: only a handler of our own can notice it.
"$CCL_HARNESS" sweep workloads/tiny-ddp/tiny-ddp.yaml --dry-run --max-points 1000000 \
    --vary "workload.data.batch_size=$v100" --vary "workload.data.seq_len=$v100" >"$SCRATCH/sweep.out" 2>&1 &
sweep_pid=$!
sleep 1
kill -INT "$sweep_pid" 2>/dev/null || true
SECONDS=0
code=0
timeout 30 tail --pid="$sweep_pid" -f /dev/null || true
kill -KILL "$sweep_pid" 2>/dev/null || true
wait "$sweep_pid" || code=$?
[ "$code" = 130 ] && pass || fail "sweep --dry-run after SIGINT: exit $code, wanted 130 ($(tail -n 2 "$SCRATCH/sweep.out"))"

# 3. metrics honours SIGINT between trace files: exit 130, nothing printed.
mkdir -p "$SCRATCH/traces"
for rank in 0 1 2; do
    "$PY" "$fixture" bigtrace "$SCRATCH/traces/kineto_trace_$rank.json" 40
done
"$CCL_HARNESS" metrics --threads 1 "$SCRATCH/traces" >"$SCRATCH/metrics.out" 2>"$SCRATCH/metrics.err" &
metrics_pid=$!
# The signal must land while a trace is being read (the reader takes a fraction of a second per
# file here): wait until the process has one open, which is after its handlers are installed.
for _ in $(seq 1000); do
    ls -l "/proc/$metrics_pid/fd" 2>/dev/null | grep -q kineto_trace_ && break
    sleep 0.005
done
kill -INT "$metrics_pid" 2>/dev/null || true
code=0
wait "$metrics_pid" || code=$?
[ "$code" = 130 ] && pass || fail "metrics after SIGINT: exit $code, wanted 130"
[ ! -s "$SCRATCH/metrics.out" ] && pass || fail "metrics printed a report after SIGINT"
rm -rf "$SCRATCH/traces"

# 4. A real bundle to tamper with.
results="$SCRATCH/results"
expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run -q workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
bundle=$(ls "$results"/*.tar.zst | head -n 1)
name=$(basename "$bundle" .tar.zst)
# Issue 31 D8: status prints directory names and run.json's target escaped, one line each: a
# newline in a run directory's name cannot draw a fake row, an escape cannot recolour the table.
fake="$SCRATCH/fake-status"
mkdir -p "$fake"
cp -r "$results/$name" "$fake/$name"$'\n''FAKE-completed-row'
cp -r "$results/$name" "$fake/evil"
"$PY" - "$fake/evil/run.json" <<'PY'
import json, sys
path = sys.argv[1]
record = json.load(open(path))
record["target"] = "loc\x1b[2Jal"
json.dump(record, open(path, "w"))
PY
expect_status 0 "status over crafted names" -- "$CCL_HARNESS" status "$fake"
if grep -q "^FAKE-completed-row" <<<"$OUT"; then fail "a directory name drew its own row: $OUT"; else pass; fi
no_escape_bytes "status"

# list clusters: a profile file name from the user's config directory, escaped, one line.
xdg="$SCRATCH/xdg"
mkdir -p "$xdg/ccl-harness/clusters"
cp clusters/local.yaml "$xdg/ccl-harness/clusters/evil"$'\n''FAKE-cluster-row.yaml'
for how in "" --names; do
    expect_status 0 "list clusters $how over a crafted profile name" -- env XDG_CONFIG_HOME="$xdg" "$CCL_HARNESS" list clusters ${how:+"$how"}
    if grep -q "^FAKE-cluster-row" <<<"$OUT"; then fail "list clusters $how: a file name drew its own row"; else pass; fi
done

# explain, render and run print a card's diagnostics escaped, as validate does: an unknown key
# spelt with an escape sequence cannot clear the screen.
cp workloads/tiny-ddp/tiny-ddp.yaml "$SCRATCH/escape-key.yaml"
printf '%s\n' '"stray\e[2Jkey": 1' >>"$SCRATCH/escape-key.yaml"
for command in explain render validate; do
    extra=()
    if [ "$command" = render ]; then extra=(--out "$SCRATCH/escape-render"); fi
    "$CCL_HARNESS" "$command" "$SCRATCH/escape-key.yaml" "${extra[@]}" >"$SCRATCH/escape-key.out" 2>&1 || true
    OUT=$(cat "$SCRATCH/escape-key.out")
    expect_output "$command names the key" 'stray\x1b[2Jkey'
    no_escape_bytes "$command's diagnostics"
done

remake() { # remake DIR EDIT...: unpacks the bundle into DIR, applies the Python EDIT to it, re-manifests, packs DIR/$name.tar.zst
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    tar --zstd -xf "$bundle" -C "$dir"
    "$PY" -c "$2" "$dir/$name"
    "$PY" "$fixture" manifest "$dir/$name"
    pack_dir "$dir" "$name" "$dir/$name.tar.zst"
}
set_card='import json,sys; p=sys.argv[1]+"/provenance.json"; d=json.load(open(p)); d["run"]["card"]=CARD; json.dump(d,open(p,"w"),indent=2,sort_keys=True)'

# 5. provenance run.card is a name, never a destination: verify refuses, reproduce writes nothing outside.
canary_dir="$SCRATCH/canary"
mkdir -p "$canary_dir"
for card in "../../../../../../../..$canary_dir/escaped" "$canary_dir/absolute" "a\u0000b"; do
    remake "$SCRATCH/evil" "${set_card/CARD/\"$card\"}"
    expect_status 1 "verify refuses run.card $card" -- "$CCL_HARNESS" verify "$SCRATCH/evil/$name.tar.zst"
    expect_output "run.card named" "provenance.json: run.card:"
    code=0
    "$CCL_HARNESS" reproduce --dry-run "$SCRATCH/evil/$name.tar.zst" >"$SCRATCH/reproduce.out" 2>&1 || code=$?
    [ "$code" != 0 ] && pass || fail "reproduce --dry-run accepted run.card $card"
done
[ -z "$(ls -A "$canary_dir")" ] && pass || fail "reproduce wrote outside its scratch directory: $(ls -A "$canary_dir")"

# 6. verify prints names from the bundle escaped, and --json stays valid UTF-8.
# Unlisted files, so that verify names them: one drawing a fake verdict line, one not UTF-8.
remake "$SCRATCH/names" 'pass'
touch "$SCRATCH/names/$name/$(printf '\r\033[2K%s.tar.zst: valid (16 files, 2 traces, 10 steps)' "$name")"
touch "$SCRATCH/names/$name/$(printf 'bad\xff\xfename')"
pack_dir "$SCRATCH/names" "$name" "$SCRATCH/names/$name.tar.zst"
expect_status 1 "a bundle with a crafted file name is invalid" -- "$CCL_HARNESS" verify "$SCRATCH/names/$name.tar.zst"
no_escape_bytes "verify"
expect_output "the name shown escaped" '\r\x1b[2K'
expect_status 1 "verify --json" -- "$CCL_HARNESS" verify --json "$SCRATCH/names/$name.tar.zst"
if "$PY" -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8", errors="strict"))' <<<"$OUT"; then
    pass
else
    fail "verify --json is not valid UTF-8 JSON"
fi

# 7. Upload against small hostile servers.
server_py="$SCRATCH/server.py"
cat >"$server_py" <<'PY'
import socket, sys
mode, port_file, log = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
open(port_file, "w").write(str(s.getsockname()[1]))
count = 0
def reply(status, body, extra=b""):
    return b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n" % (status, len(body), extra) + body
while True:
    c, _ = s.accept()
    count += 1
    data = b""
    while b"\r\n\r\n" not in data:
        data += c.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = int([l for l in lines if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    key = [l for l in lines if l.lower().startswith(b"idempotency-key:")]
    with open(log, "a") as f:
        f.write((key[0].split(b":", 1)[1].strip().decode() if key else "no-key") + "\n")
    while len(rest) < length:
        got = c.recv(1 << 20)
        if not got:
            break
        rest += got
    ok = reply(200, b'{"upload_id": "up-1"}')
    try:
        if mode == "continue":
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n" + ok)
        elif mode == "huge":
            body = b"\x1b[2J" + b"A" * (64 << 20)
            c.sendall(reply(200, body))
        elif mode == "fail":
            c.sendall(reply(500, b'{"error": "internal"}'))
        elif mode == "silent":
            import time
            time.sleep(30)
        elif mode == "later":
            c.sendall(reply(503, b'{"error": "busy"}', b"Retry-After: 0\r\n") if count == 1 else ok)
        elif mode == "escape":
            c.sendall(reply(200, b'stored \x1b[2J\x1b]0;pwned\x07 \xff'))
    except OSError:
        pass
    c.close()
PY
server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap stop_server EXIT
start_server() { # start_server MODE: sets $url and $log
    stop_server
    local dir="$SCRATCH/server-$1"
    rm -rf "$dir"
    mkdir -p "$dir"
    log="$dir/requests.log"
    : >"$log"
    "$PY" "$server_py" "$1" "$dir/port" "$log" &
    server_pid=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.05
    done
    url="http://127.0.0.1:$(cat "$dir/port")"
}
requests() { wc -l <"$log" | tr -d ' '; }
submit() { "$CCL_HARNESS" submit "$bundle" --to "$url" "$@"; }

start_server continue
expect_status 0 "100 Continue and 102 before 200 is an upload" -- submit
expect_output "upload id" "upload id: up-1"
sha=$(sha256sum "$bundle" | cut -d' ' -f1)
[ "$(head -n 1 "$log")" = "\"sha256:$sha\"" ] && pass || fail "Idempotency-Key: $(head -n 1 "$log"), wanted \"sha256:$sha\""

start_server huge
expect_status 1 "a 64 MB answer in one go is refused" -- submit
expect_output "size named" "response larger than 8388608 bytes"
[ "${#OUT}" -lt 100000 ] && pass || fail "the oversized answer was printed (${#OUT} characters)"

start_server fail
expect_status 1 "500 after the whole body" -- submit
expect_output "not retried" "not retried"
[ "$(requests)" = 1 ] && pass || fail "500 after the whole body was retried: $(requests) uploads"

start_server silent
SECONDS=0
expect_status 1 "a silent server with --timeout 2" -- submit --timeout 2
[ "$SECONDS" -lt 10 ] && pass || fail "--timeout 2 took ${SECONDS}s"
[ "$(requests)" = 1 ] && pass || fail "a silent server got $(requests) uploads"

# Issue 31 D9: --timeout that is no number of seconds, and a --ca-file that is a FIFO, are refused
# before anything is sent (NaN passed CLI11's check; 1e10 wrapped into an immediate "not retried").
for value in nan inf 1e10 -3; do
    before=$(requests)
    expect_status 2 "--timeout $value" -- submit --timeout "$value"
    [ "$(requests)" = "$before" ] && pass || fail "--timeout $value sent the bundle"
done
expect_output "says what it takes" "expected a positive number of seconds, at most 604800"
mkfifo "$SCRATCH/ca.fifo"
SECONDS=0
expect_status 2 "--ca-file naming a FIFO" -- timeout 20 "$CCL_HARNESS" submit "$bundle" --to "${url/http:/https:}" --ca-file "$SCRATCH/ca.fifo" --timeout 5
expect_output "a FIFO named" "not a regular file"
[ "$SECONDS" -lt 10 ] && pass || fail "--ca-file FIFO took ${SECONDS}s"

start_server later
expect_status 0 "503 with Retry-After is retried" -- submit
[ "$(requests)" = 2 ] && pass || fail "503 + Retry-After: $(requests) requests, wanted 2"
[ "$(sort -u "$log" | wc -l)" = 1 ] && pass || fail "the retry carried another Idempotency-Key"

start_server escape
expect_status 0 "an answer without an id" -- submit
no_escape_bytes "submit"
expect_output "body shown escaped" 'stored \x1b[2J\x1b]0;pwned\x07 \xff'
stop_server

finish
