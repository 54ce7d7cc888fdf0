#!/bin/bash
# `ccl-harness submit` against a real HTTP server standing in for the CCL-Bench upload server:
# a real tiny-ddp bundle arrives byte for byte with its card as JSON; 413 is not retried; a 500
# is retried and then succeeds; a refused connection fails after the retries; a tampered bundle
# is refused before any request, as is one over the 500 MB limit; bad input exits 2.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
PY=/usr/bin/python3
server_py="$CCL_SOURCE_DIR/tests/e2e/fixtures/upload_server.py"
results="$CCL_TEST_TMP/submit-results"
rm -rf "$results"
# Retries wait 10 ms, 20 ms, 40 ms here instead of 0.5 s, 1 s, 2 s.
export CCL_HARNESS_SUBMIT_RETRY_BASE_MS=10

server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap stop_server EXIT

start_server() { # start_server MODE: sets $url, $log, $saved
    stop_server
    local dir="$SCRATCH/server-$1"
    rm -rf "$dir"
    mkdir -p "$dir/saved"
    log="$dir/requests.log"
    saved="$dir/saved"
    "$PY" "$server_py" --mode "$1" --port-file "$dir/port" --log "$log" --save-dir "$saved" &
    server_pid=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.05
    done
    url="http://127.0.0.1:$(cat "$dir/port")"
}
requests() { wc -l <"$log" | tr -d ' '; }
submit() { "$CCL_HARNESS" submit "$@"; }

# 1. A real bundle.
expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
bundle=$(sed -n 's/^ *bundle: \([^ ]*\.tar\.zst\).*/\1/p' <<<"$OUT" | head -n 1)
name=$(basename "$bundle" .tar.zst)
[ -f "$bundle" ] && pass || fail "no bundle in the run's output"

# 2. Uploaded: the id is printed, the server holds the same bytes and the card as a JSON object.
start_server ok
expect_status 0 "upload" -- submit "$bundle" --to "$url" --group test-lab --description "tiny-ddp e2e"
expect_output "upload id printed" "upload id: up-0001"
if cmp -s "$bundle" "$saved/$name.tar.zst"; then pass; else fail "the server did not receive identical bytes"; fi
fields_ok=$("$PY" -c 'import json,sys; f=json.load(open(sys.argv[1])); c=json.loads(f["workload_card"])
print(f["group_name"]=="test-lab" and f["description"]=="tiny-ddp e2e" and c["trace_url"]==sys.argv[2]+".tar.zst")' \
    "$saved/fields.json" "$name")
[ "$fields_ok" = True ] && pass || fail "fields sent: $(cat "$saved/fields.json")"
expect_status 0 "upload --json" -- submit "$bundle" --to "$url/" --json
json_ok=$("$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["uploaded"] and r["upload_id"]=="up-0002" and r["attempts"]==1)' "$OUT")
[ "$json_ok" = True ] && pass || fail "--json: $OUT"
stop_server

# 3. 413: not retried, explained.
start_server 413
expect_status 1 "413" -- submit "$bundle" --to "$url"
expect_output "413 explained" "the server refuses requests over its limit (500 MB"
[ "$(requests)" = 1 ] && pass || fail "413 was retried: $(requests) requests"

# 4. A 503 with Retry-After (the server says it stored nothing), then success on the retry.
start_server fail-once
expect_status 0 "503 then ok" -- submit "$bundle" --to "$url"
expect_output "retry announced" "attempt 1 failed: HTTP 503"
expect_output "then uploaded" "upload id: up-0002"
if cmp -s "$bundle" "$saved/$name.tar.zst"; then pass; else fail "retried upload not identical"; fi

# 5. A server that hangs up without answering after reading the whole body may have stored it:
#    never retried (curl's rule for a POST), and said so.
start_server close
expect_status 1 "connection closed" -- submit "$bundle" --to "$url"
expect_output "closed named" "closed the connection without answering"
expect_output "not retried" "after the whole bundle was sent; not retried"
[ "$(requests)" = 1 ] && pass || fail "close: $(requests) requests, wanted 1"

# 6. Nobody listening: refused, retried, then exit 1.
stop_server
expect_status 1 "connection refused" -- submit "$bundle" --to "$url"
expect_output "refused named" "upload failed after 4 attempts: cannot connect to 127.0.0.1"

# 7. A tampered bundle is never sent.
start_server ok
tampered="$SCRATCH/tampered"
rm -rf "$tampered"
mkdir -p "$tampered"
tar --zstd -xf "$bundle" -C "$tampered"
"$PY" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[200]^=1; open(p,"wb").write(b)' \
    "$tampered/$name/kineto_trace_1.json"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@946684800 --zstd \
    -cf "$tampered/$name.tar.zst" -C "$tampered" "$name"
expect_status 1 "tampered bundle" -- submit "$tampered/$name.tar.zst" --to "$url"
expect_output "problem listed" "kineto_trace_1.json"
expect_output "nothing sent" "nothing was sent"
[ "$(requests)" = 0 ] && pass || fail "tampered bundle reached the server: $(requests) requests"
expect_status 1 "tampered bundle --json" -- submit "$tampered/$name.tar.zst" --to "$url" --json
[ "$(requests)" = 0 ] && pass || fail "tampered bundle (--json) reached the server"

# 8. Bad input: exit 2, nothing sent.
expect_status 2 "missing bundle" -- submit "$SCRATCH/absent.tar.zst" --to "$url"
expect_output "missing named" "absent.tar.zst: no such file"
expect_status 2 "a directory" -- submit "$tampered/$name" --to "$url"
expect_output "pack suggested" "ccl-harness pack"
expect_status 2 "https" -- submit "$bundle" --to "https://127.0.0.1:1"
expect_output "https refused" "https not supported yet"
expect_status 2 "not a URL" -- submit "$bundle" --to "127.0.0.1:8000"
expect_status 2 "no --to" -- submit "$bundle"
# Over the server's 500 MB limit (a sparse file: the size check comes before anything is read).
truncate -s 500000001 "$SCRATCH/huge.tar.zst"
expect_status 1 "over 500 MB" -- submit "$SCRATCH/huge.tar.zst" --to "$url"
expect_output "limit named" "over the upload server's limit of 500 MB per request; nothing was sent"
rm -f "$SCRATCH/huge.tar.zst"
[ "$(requests)" = 0 ] && pass || fail "bad input reached the server"

finish
