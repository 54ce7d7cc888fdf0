#!/bin/bash
# `ccl-harness submit` against a real HTTP server standing in for the CCL-Bench upload server:
# a real tiny-ddp bundle arrives byte for byte with its card as JSON; 413 is not retried; a 500
# is retried and then succeeds; a refused connection fails after the retries; a tampered bundle
# is refused before any request, as is one over the 500 MB limit; bad input exits 2. Over https
# (certificates made here with openssl): a token sent as a bearer header and never shown; an
# untrusted, expired, self-signed or other host's certificate refused with the reason; a CONNECT
# proxy from https_proxy traversed, http_proxy used for http, a refusing proxy named; a token
# never sent in clear text through a proxy elsewhere; a URL's password never printed; an answer
# cut off after its head reported as it came.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
PY=/usr/bin/python3
server_py="$CCL_SOURCE_DIR/tests/e2e/fixtures/upload_server.py"
results="$CCL_TEST_TMP/submit-results"
rm -rf "$results"
# Retries wait 10 ms, 20 ms, 40 ms here instead of 0.5 s, 1 s, 2 s.
export CCL_HARNESS_SUBMIT_RETRY_BASE_MS=10
# The proxies of whoever runs the suite must not stand between us and 127.0.0.1.
unset https_proxy HTTPS_PROXY http_proxy HTTP_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY CCL_UPLOAD_TOKEN

server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap stop_server EXIT

start_server() { # start_server MODE [SERVER OPTIONS...]: sets $url (https with --tls-cert), $port, $log, $saved
    stop_server
    local mode=$1 dir="$SCRATCH/server-$1" scheme=http
    shift
    case " $* " in *" --tls-cert "*) scheme=https ;; esac
    rm -rf "$dir"
    mkdir -p "$dir/saved"
    log="$dir/requests.log"
    saved="$dir/saved"
    "$PY" "$server_py" --mode "$mode" --port-file "$dir/port" --log "$log" --save-dir "$saved" "$@" &
    server_pid=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.05
    done
    port=$(cat "$dir/port")
    url="$scheme://127.0.0.1:$port"
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
pack_dir "$tampered" "$name" "$tampered/$name.tar.zst"
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
expect_status 2 "ftp" -- submit "$bundle" --to "ftp://127.0.0.1:1"
expect_output "scheme named" "unsupported scheme"
expect_status 2 "not a URL" -- submit "$bundle" --to "127.0.0.1:8000"
expect_status 2 "no --to" -- submit "$bundle"
# Over the server's 500 MB limit (a sparse file: the size check comes before anything is read).
truncate -s 500000001 "$SCRATCH/huge.tar.zst"
expect_status 1 "over 500 MB" -- submit "$SCRATCH/huge.tar.zst" --to "$url"
expect_output "limit named" "over the upload server's limit of 500 MB per request; nothing was sent"
rm -f "$SCRATCH/huge.tar.zst"
# A URL's user:password@ is refused (exit 2) and the password is never printed, with or without
# --json, whatever else is wrong with the URL.
for to in "http://u:secretpw@127.0.0.1:1/x" "ftp://u:secretpw@127.0.0.1:1/x" "u:secretpw@127.0.0.1:1" \
    "http://u:secret/pw@127.0.0.1:1/x"; do
    for json in "" --json; do
        expect_status 2 "password in --to $to $json" -- submit "$bundle" --to "$to" $json
        if grep -qF -- "secret" <<<"$OUT"; then fail "the URL's password was shown: $OUT"; else pass; fi
    done
done
expect_output "userinfo hidden" '"http://***@127.0.0.1:1/x"'
[ "$(requests)" = 0 ] && pass || fail "bad input reached the server"
stop_server

# 9. https. A private CA signs the server's certificate (localhost and 127.0.0.1), another host's,
#    and one already expired; a self-signed one stands outside any trust store.
tls="$SCRATCH/tls"
rm -rf "$tls"
mkdir -p "$tls"
make_cert() { # make_cert NAME SUBJECT_ALT_NAMES DAYS [self]
    openssl req -newkey rsa:2048 -nodes -keyout "$tls/$1.key" -out "$tls/$1.csr" -subj "/CN=$1" 2>/dev/null
    printf 'subjectAltName=%s\n' "$2" >"$tls/$1.ext"
    if [ "${4:-}" = self ]; then
        openssl x509 -req -in "$tls/$1.csr" -signkey "$tls/$1.key" -out "$tls/$1.pem" -days "$3" -extfile "$tls/$1.ext" 2>/dev/null
    else
        openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
            -out "$tls/$1.pem" -days "$3" -extfile "$tls/$1.ext" 2>/dev/null
    fi
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 2 -subj "/CN=ccl-harness test CA" 2>/dev/null
make_cert good "DNS:localhost,IP:127.0.0.1" 2
make_cert other "DNS:other.example" 2
make_cert expired "DNS:localhost,IP:127.0.0.1" 0 # valid until the second it was made
make_cert self "DNS:localhost,IP:127.0.0.1" 2 self
[ -s "$tls/good.pem" ] && [ -s "$tls/self.pem" ] && pass || fail "openssl made no certificates"
token="tok-e2e-$RANDOM-secret"
no_token() { # no_token WHAT: the token is nowhere in $OUT
    if grep -qF -- "$token" <<<"$OUT"; then fail "$1: the token was shown: $OUT"; else pass; fi
}

# 9a. Trusted through --ca-file, the token from CCL_UPLOAD_TOKEN: uploaded byte for byte, the
#     server saw the bearer header, and -v and --json output never show the token.
start_server ok --tls-cert "$tls/good.pem" --tls-key "$tls/good.key" --token "$token"
CCL_UPLOAD_TOKEN=$token expect_status 0 "https upload" -- "$CCL_HARNESS" -v submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "https uploaded" "upload id: up-0001"
no_token "-v output"
if cmp -s "$bundle" "$saved/$name.tar.zst"; then pass; else fail "https: the server did not receive identical bytes"; fi
grep -q " auth$" "$log" && pass || fail "the server saw no bearer token: $(cat "$log")"
expect_status 0 "https --token --json" -- submit "$bundle" --to "https://localhost:$port" --ca-file "$tls/ca.pem" --token "$token" --json
no_token "--json output"
expect_json <(printf '%s' "$OUT") 'j["uploaded"] and j["url"].startswith("https://localhost:")' True "https --json"

# 9b. A wrong token: the server's 401 echoes it, the client shows the answer without it.
expect_status 1 "wrong token" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem" --token "$token-wrong"
expect_output "401 shown" "HTTP 401"
expect_output "token blanked" "[redacted]"
if grep -qF -- "$token-wrong" <<<"$OUT"; then fail "the wrong token was shown: $OUT"; else pass; fi

# 9b'. The retry rules hold over TLS too: 413 not retried, a hang-up after the body not retried,
#      a 503 with Retry-After retried.
start_server 413 --tls-cert "$tls/good.pem" --tls-key "$tls/good.key"
expect_status 1 "413 over https" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "413 over https explained" "the server refuses requests over its limit"
[ "$(requests)" = 1 ] && pass || fail "413 over https: $(requests) requests"
start_server close --tls-cert "$tls/good.pem" --tls-key "$tls/good.key"
expect_status 1 "hang-up over https" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "hang-up over https named" "closed the connection without answering after the whole bundle was sent"
start_server fail-once --tls-cert "$tls/good.pem" --tls-key "$tls/good.key"
expect_status 0 "503 then ok over https" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "retried over https" "attempt 2)"

# 9b''. A server that answers 200 without Content-Length and ends the connection without TLS
#       close_notify (so the end cannot be told from a cut): the upload was accepted, said with a
#       warning naming what came, and not sent again; a head cut off after its status line names
#       that line and is not retried (the server may have stored the bundle).
start_server cut --tls-cert "$tls/good.pem" --tls-key "$tls/good.key"
expect_status 0 "200 then a cut over https" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "cut named" "warning: $url/api/upload: the answer \"HTTP/1.1 200 OK\" was cut off: "
expect_output "truncation explained" "without TLS close_notify, so the body may be truncated; the server accepted the upload (HTTP 200), so it was not sent again"
expect_output "id still read" "upload id: up-0001"
[ "$(requests)" = 1 ] && pass || fail "200 then a cut: $(requests) requests, wanted 1"
if cmp -s "$bundle" "$saved/$name.tar.zst"; then pass; else fail "200 then a cut: bytes differ"; fi
expect_status 0 "200 then a cut over https --json" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem" --json
expect_json <(printf '%s' "$OUT") 'j["uploaded"] and j["upload_id"] == "up-0002" and "was cut off" in j["warning"]' True "cut --json"
start_server cut-head --tls-cert "$tls/good.pem" --tls-key "$tls/good.key"
expect_status 1 "a head cut after its status line" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "status line named" "sent only \"HTTP/1.1 200 OK\" of its answer's head, then closed the connection after the whole bundle was sent; not retried"
[ "$(requests)" = 1 ] && pass || fail "a cut head was retried: $(requests) requests"
# Over plain http the connection's end is the end of such a body: no warning.
start_server cut
expect_status 0 "200 then close over http" -- submit "$bundle" --to "$url"
if grep -q "warning" <<<"$OUT"; then fail "a close-delimited http answer was called cut: $OUT"; else pass; fi
start_server ok --tls-cert "$tls/good.pem" --tls-key "$tls/good.key" --token "$token"

# 9c. Without --ca-file the private CA is unknown: refused, the reason named, nothing retried.
expect_status 1 "unknown CA" -- submit "$bundle" --to "$url" --token "$token" --json
expect_output "unknown issuer named" "the server's certificate was refused: unable to get local issuer certificate"
expect_output "--ca-file suggested" "--ca-file FILE"
no_token "certificate error"
requests_before=$(requests)
expect_status 1 "unknown CA, not retried" -- submit "$bundle" --to "$url"
[ "$(requests)" = "$requests_before" ] && pass || fail "a refused certificate still reached the upload handler"
if grep -q "attempt 1 failed" <<<"$OUT"; then fail "a refused certificate was retried: $OUT"; else pass; fi

# 9d. Another host's certificate, an expired one, a self-signed one: each refused, saying why.
start_server ok --tls-cert "$tls/other.pem" --tls-key "$tls/other.key"
expect_status 1 "other host (name)" -- submit "$bundle" --to "https://localhost:$port" --ca-file "$tls/ca.pem"
expect_output "hostname mismatch named" "hostname mismatch"
expect_status 1 "other host (address)" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "address mismatch named" "IP address mismatch"
sleep 1 # the expired certificate's last valid second is over
start_server ok --tls-cert "$tls/expired.pem" --tls-key "$tls/expired.key"
expect_status 1 "expired" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem"
expect_output "expiry named" "certificate has expired"
start_server ok --tls-cert "$tls/self.pem" --tls-key "$tls/self.key"
expect_status 1 "self-signed" -- submit "$bundle" --to "$url"
expect_output "self-signed named" "self-signed certificate"
[ "$(requests)" = 0 ] && pass || fail "a refused certificate reached the upload handler"
expect_status 2 "--ca-file not PEM" -- submit "$bundle" --to "$url" --ca-file "$tls/good.ext"
expect_output "ca file named" "cannot load CA certificates"

# 9e. Through a CONNECT proxy from https_proxy (the tunnel carries TLS end to end), http_proxy for
#     http, no_proxy honoured; a proxy refusing the tunnel is named.
proxy_pid=""
start_proxy() { # start_proxy NAME [--refuse] [--bind ADDRESS]: sets $proxy (at 127.0.0.1), $proxy_log
    local dir="$SCRATCH/proxy-$1"
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    proxy_log="$dir/requests.log"
    "$PY" "$CCL_SOURCE_DIR/tests/e2e/fixtures/connect_proxy.py" --port-file "$dir/port" --log "$proxy_log" "$@" &
    proxy_pid=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.05
    done
    proxy="http://127.0.0.1:$(cat "$dir/port")"
}
stop_proxy() {
    if [ -n "$proxy_pid" ]; then
        kill "$proxy_pid" 2>/dev/null || true
        wait "$proxy_pid" 2>/dev/null || true
        proxy_pid=""
    fi
}
trap 'stop_server; stop_proxy' EXIT
start_server ok --tls-cert "$tls/good.pem" --tls-key "$tls/good.key" --token "$token"
start_proxy tunnel
https_proxy=$proxy expect_status 0 "through the proxy" -- submit "$bundle" --to "$url" --ca-file "$tls/ca.pem" --token "$token"
expect_output "uploaded through the proxy" "upload id: up-0001"
grep -qx "CONNECT 127.0.0.1:$port HTTP/1.1" "$proxy_log" && pass || fail "no CONNECT at the proxy: $(cat "$proxy_log")"
if grep -qF -- "$token" "$proxy_log"; then fail "the proxy saw the token"; else pass; fi
HTTPS_PROXY=$proxy no_proxy=localhost,127.0.0.1 expect_status 0 "no_proxy" -- \
    submit "$bundle" --to "$url" --ca-file "$tls/ca.pem" --token "$token"
[ "$(wc -l <"$proxy_log")" = 1 ] && pass || fail "no_proxy ignored: $(cat "$proxy_log")"
stop_server
start_server ok
http_proxy=$proxy expect_status 0 "http through the proxy" -- submit "$bundle" --to "$url"
grep -qx "POST $url/api/upload HTTP/1.1" "$proxy_log" && pass || fail "no absolute-form POST at the proxy: $(cat "$proxy_log")"
if cmp -s "$bundle" "$saved/$name.tar.zst"; then pass; else fail "http through the proxy: bytes differ"; fi

# 9f. Over http a token goes through a proxy only when the proxy and the server are both this
#     machine. As curl does, http_proxy applies to a localhost target too (only no_proxy exempts
#     it), so a proxy elsewhere would read the token in clear text: refused, exit 2, before
#     anything reaches the proxy.
start_server ok --token "$token"
: >"$proxy_log"
http_proxy=$proxy expect_status 0 "token through a proxy on this machine to localhost" -- \
    submit "$bundle" --to "http://localhost:$port" --token "$token"
grep -qx "header Authorization" "$proxy_log" && pass || fail "the loopback proxy carried no token: $(cat "$proxy_log")"
grep -q " auth$" "$log" && pass || fail "the server saw no token through the loopback proxy: $(cat "$log")"
stop_proxy
# A proxy at this machine's own non-loopback address stands for one elsewhere (0.0.0.0 reaches
# this machine too, where no other address is up).
far=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -n 1 || true)
far=${far:-0.0.0.0}
start_proxy far --bind 0.0.0.0
proxy=${proxy/127.0.0.1/$far}
CCL_UPLOAD_TOKEN=$token http_proxy=$proxy expect_status 2 "token through a proxy elsewhere to localhost" -- \
    submit "$bundle" --to "http://localhost:$port"
expect_output "the proxy hop named" "refusing to send the upload token in clear text over http:// through the proxy $far:"
expect_output "no_proxy suggested" "no_proxy=localhost"
no_token "proxy refusal"
[ ! -s "$proxy_log" ] && pass || fail "the request reached the proxy elsewhere: $(cat "$proxy_log")"
: >"$proxy_log"
CCL_UPLOAD_TOKEN=$token http_proxy=$proxy no_proxy=localhost expect_status 0 "no_proxy keeps the token off the proxy" -- \
    submit "$bundle" --to "http://localhost:$port"
[ ! -s "$proxy_log" ] && pass || fail "no_proxy ignored: $(cat "$proxy_log")"
stop_proxy
start_proxy refusing --refuse
https_proxy=$proxy expect_status 1 "proxy refuses" -- submit "$bundle" --to "https://127.0.0.1:$port" --ca-file "$tls/ca.pem"
expect_output "refusal named" "refused to open a tunnel to 127.0.0.1:$port: HTTP 403"
https_proxy="http://user:pw-secret@127.0.0.1:1" expect_status 2 "proxy credentials" -- submit "$bundle" --to "https://127.0.0.1:$port"
if grep -qF "pw-secret" <<<"$OUT"; then fail "the proxy password was shown: $OUT"; else pass; fi
stop_proxy
stop_server

finish
