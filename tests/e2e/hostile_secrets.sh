#!/bin/bash
# Issue 13, secrets and crash safety: secrets scrubbed at the point of output (the terminal, the
# logs as they are written, every record), a card's secret env never written into a file,
# nothing raw left behind by `kill -9`, ranks that die with the harness, `status` that tells a
# dead harness from a running one, refused non-finite durations, a FIFO named run.json, and
# `render --out DIR/` and concurrent renders.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
hf_token="hf_e2eHostileSecretsToken0123456789"
plain_secret="plainValue0e2e0notNamedLikeASecret42"
card_secret="cardSecret0e2e0fromLaunchEnv0987654321"

# The tiny-ddp card beside workloads that print the secrets they were given.
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml workloads/tiny-ddp/train.py "$work/"
/usr/bin/python3 - workloads/tiny-ddp/train.py "$work" <<'PY'
import sys
source = open(sys.argv[1]).read()
leak = ('print("env:", os.environ.get("HF_TOKEN"), os.environ.get("MY_PLAIN"), '
        'os.environ.get("CARD_API_TOKEN"), flush=True)\n')
assert "import time\n" in source
open(sys.argv[2] + "/leaky_train.py", "w").write(source.replace("import time\n", "import time\n" + leak, 1))
# Prints, says so, then waits to be killed.
open(sys.argv[2] + "/sleepy.py", "w").write("import os, time\n" + leak + 'print("sleeping", flush=True)\ntime.sleep(300)\n')
PY

no_value_in() { # no_value_in DIR WHAT VALUE...: no file under DIR holds any VALUE
    local dir=$1 what=$2 found
    shift 2
    local patterns=()
    for value in "$@"; do patterns+=(-e "$value"); done
    found=$(grep -rlaF "${patterns[@]}" "$dir" 2>/dev/null || true)
    [ -z "$found" ] && pass || fail "$what: a secret value is in: $found"
}
alive() { # alive PID: running, not a zombie
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || true
    [ -n "$state" ] && [ "$state" != Z ]
}

# 1. The terminal stream is scrubbed (it was only the logs, at the end)...
expect_status 0 "leaky run" -- env HF_TOKEN="$hf_token" MY_PLAIN="$plain_secret" \
    "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=leaky_train.py --results "$results" --no-pack
expect_output "rank output still streams" "[rank_0] env: [REDACTED] $plain_secret None"
if grep -qF -e "$hf_token" <<<"$OUT"; then
    fail "the terminal got a secret value: $(grep -F -e "$hf_token" <<<"$OUT" | head -3)"
else pass; fi
#    ...and --secret NAME makes a plainly named variable's value a secret.
rm -rf "$results"
expect_status 0 "leaky run with --secret" -- env HF_TOKEN="$hf_token" MY_PLAIN="$plain_secret" \
    "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=leaky_train.py --results "$results" --secret MY_PLAIN --no-pack
if grep -qF -e "$hf_token" -e "$plain_secret" <<<"$OUT"; then
    fail "the terminal got a secret value: $(grep -F -e "$hf_token" -e "$plain_secret" <<<"$OUT" | head -3)"
else pass; fi
expect_output "the terminal shows [REDACTED]" "[rank_0] env: [REDACTED] [REDACTED] None"
run=$(latest_run 2>/dev/null || echo "$SCRATCH/no-run")
[ -d "$run" ] && pass || fail "no run directory"
no_value_in "$run" "run with --secret" "$hf_token" "$plain_secret"
#    sweep hands --secret to every point's run.
expect_status 0 "sweep with --secret" -- env MY_PLAIN="$plain_secret" \
    "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" --vary launch.script=leaky_train.py \
    --results "$SCRATCH/sweep" --secret MY_PLAIN
if grep -qF -e "$plain_secret" <<<"$OUT"; then fail "sweep printed a --secret value"; else pass; fi
no_value_in "$SCRATCH/sweep" "sweep with --secret" "$plain_secret"
expect_status 2 "--secret naming an unset variable" -- env -u NO_SUCH_VAR \
    "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --secret NO_SUCH_VAR --dry-run
expect_output "says which" "--secret NO_SUCH_VAR: not set"

# 2. A secret-named launch.env entry: the job gets it, no file of the run directory or the bundle
#    holds it (env.sh, plan.json, card.yaml, provenance), and reproducing the bundle asks for it.
cat >"$work/with-secret.yaml" <<EOF
$(cat "$work/tiny-ddp.yaml")
  env:
    CARD_API_TOKEN: $card_secret
EOF
rm -rf "$results"
expect_status 0 "run with a secret in launch.env" -- env -u HF_TOKEN -u CARD_API_TOKEN \
    "$CCL_HARNESS" run "$work/with-secret.yaml" --set launch.script=leaky_train.py --results "$results"
expect_output "the job received it (scrubbed as it printed)" "[rank_0] env: None None [REDACTED]"
run=$(latest_run 2>/dev/null || echo "$SCRATCH/no-run")
[ -d "$run" ] && pass || fail "no run directory"
no_value_in "$run" "run directory of a launch.env secret" "$card_secret"
bundle="${run%/}.tar.zst"
mkdir -p "$SCRATCH/unpacked"
tar --zstd -xf "$bundle" -C "$SCRATCH/unpacked" && pass || fail "no bundle at $bundle"
no_value_in "$SCRATCH/unpacked" "bundle of a launch.env secret" "$card_secret"
grep -qF 'CARD_API_TOKEN="${CARD_API_TOKEN?' "$run/rendered/env.sh" && pass || fail "env.sh does not name the secret: $(cat "$run/rendered/env.sh")"
expect_status 2 "reproduce without the secret exported" -- env -u CARD_API_TOKEN \
    "$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/reproduced"
expect_output "says what to export" "export CARD_API_TOKEN="
expect_status 0 "reproduce with the secret exported" -- env CARD_API_TOKEN="$card_secret" \
    "$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/reproduced"
expect_output "the reproduction's job received it" "env: None None [REDACTED]"
no_value_in "$SCRATCH/reproduced" "reproduction" "$card_secret"

# 2b. Through Slurm (doubles of sbatch, scontrol and sacct, which record what they were handed):
#    sbatch's environment carries the secret to the job, the run directory does not, and run.json
#    records the job as detached (it outlives the harness by design).
fake="$SCRATCH/fake-slurm"
mkdir -p "$fake/bin"
printf '#!/bin/bash\nprintf "%%s" "${CARD_API_TOKEN-unset}" >"%s/sbatch-saw"\necho 4242\n' "$fake" >"$fake/bin/sbatch"
printf '#!/bin/bash\necho "JobId=4242 JobState=COMPLETED Reason=None RunTime=00:00:01 NodeList=n1 ExitCode=0:0 Restarts=0"\n' \
    >"$fake/bin/scontrol"
printf '#!/bin/bash\necho "4242|COMPLETED"\n' >"$fake/bin/sacct"
chmod +x "$fake/bin/"*
expect_status 1 "a launch.env secret through sbatch (no traces: failed)" -- env -u CARD_API_TOKEN PATH="$fake/bin:$PATH" \
    "$CCL_HARNESS" run "$work/with-secret.yaml" --cluster slurm-local --set launch.script=leaky_train.py --results "$SCRATCH/slurm"
[ "$(cat "$fake/sbatch-saw" 2>/dev/null)" = "$card_secret" ] && pass || fail "sbatch's environment lacks the secret: $(cat "$fake/sbatch-saw" 2>/dev/null)"
run=$(ls -d "$SCRATCH/slurm"/*/ 2>/dev/null | head -n 1 || true)
[ -n "$run" ] && [ "$(run_json "$run" 'r.get("detached_job")' 2>/dev/null)" = 4242 ] && pass || fail "run.json does not record the detached job"
no_value_in "${run:-$SCRATCH/no-run}" "slurm run directory of a launch.env secret" "$card_secret"

#    A TPU VM gets its environment from env.sh, copied out of the run directory: a secret cannot
#    reach it without being written there, so validate --strict (and run) refuse it.
expect_status 2 "validate --strict: a launch.env secret for TPU VMs" -- "$CCL_HARNESS" validate --strict \
    workloads/qwen3-4b-vllm-tpu-v6e/qwen3-4b-vllm-tpu-v6e.yaml --set launch.env.HF_TOKEN=hf_e2eTpuTokenValue0123
expect_output "says why" "cannot reach the TPU VMs"

# 3 and 4. kill -9 of the harness mid-run: no raw environment or unscrubbed log is left, the
#    ranks die with it, and status says "harness died", never "running".
rm -rf "$results"
env HF_TOKEN="$hf_token" "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=sleepy.py \
    --results "$results" >"$SCRATCH/killed.out" 2>&1 &
harness_pid=$!
for _ in $(seq 1 120); do
    grep -qs sleeping "$results"/*/logs/rank_1.log && grep -qs sleeping "$results"/*/logs/rank_0.log && break
    sleep 0.5
done
run=$(latest_run 2>/dev/null || echo "$SCRATCH/no-run")
grep -qs sleeping "$run/logs/rank_0.log" && pass || fail "the ranks never started: $(cat "$SCRATCH/killed.out")"
pids=$(run_json "$run" '" ".join(str(p) for p in r["scheduler"]["pids"])' || true)
kill -9 "$harness_pid"
wait "$harness_pid" 2>/dev/null || true
sleep 1
left=""
for pid in $pids; do
    if alive "$pid"; then left="$left $pid"; kill -9 "$pid" 2>/dev/null || true; fi
done
[ -z "$left" ] && pass || fail "ranks outlived the harness killed with SIGKILL:$left"
no_value_in "$run" "run directory after kill -9 (logs, probe reports)" "$hf_token"
ls "$run"/rendered/probe/*.json >/dev/null 2>&1 && pass || fail "no probe report to check"
grep -qs '"HF_TOKEN"' "$run"/rendered/probe/*.json && pass || fail "the probe does not name the secret variable"
[ "$(run_json "$run" 'r["harness"]["pid"]' 2>/dev/null)" = "$harness_pid" ] && pass || fail "run.json does not record the harness pid"
expect_status 0 "status after kill -9" -- "$CCL_HARNESS" status "$results"
expect_output "shows harness died" "harness died"
if grep -qE '^tiny-ddp[^ ]* +running ' <<<"$OUT"; then fail "status still says running: $OUT"; else pass; fi
expect_status 0 "status --json after kill -9" -- "$CCL_HARNESS" status "$results" --json
expect_output "json state" '"state": "harness died"'

# 5. Durations: nan, inf, negative and absurd values are refused before anything runs.
for grace in nan inf -1 1e12; do
    expect_status 2 "--grace $grace" -- "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --grace "$grace" --dry-run
    expect_output "--grace $grace says why" "expected a number of seconds"
done
expect_status 2 "a time limit past any counter" -- "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --dry-run \
    --set launch.time_limit=99999999999999999999
expect_output "time limit says why" "time limit"

# 6. A FIFO named run.json is a damaged run, reported, never a hang.
mkdir -p "$SCRATCH/fifo/broken-run"
mkfifo "$SCRATCH/fifo/broken-run/run.json"
expect_status 0 "status with a FIFO run.json" -- timeout 20 "$CCL_HARNESS" status "$SCRATCH/fifo"
expect_output "reported" "not a regular file"

# 7. render --out DIR/ (trailing slash), again over itself, and four renders into one --out at once.
expect_status 0 "render --out DIR/" -- "$CCL_HARNESS" render "$work/tiny-ddp.yaml" --out "$SCRATCH/out/"
expect_status 0 "render --out DIR/ again" -- "$CCL_HARNESS" render "$work/tiny-ddp.yaml" --out "$SCRATCH/out/"
[ -f "$SCRATCH/out/plan.json" ] && pass || fail "no render in $SCRATCH/out"
pids=()
for i in 1 2 3 4; do
    "$CCL_HARNESS" render "$work/tiny-ddp.yaml" --out "$SCRATCH/shared" >"$SCRATCH/render-$i.out" 2>&1 &
    pids+=("$!")
done
for i in 0 1 2 3; do
    if wait "${pids[$i]}"; then pass; else fail "concurrent render $((i + 1)) failed: $(cat "$SCRATCH/render-$((i + 1)).out")"; fi
done
[ -f "$SCRATCH/shared/plan.json" ] && [ -f "$SCRATCH/shared/env.sh" ] && pass || fail "the shared --out holds no whole render"
leftovers=$(find "$SCRATCH" -maxdepth 1 -name '.*render-*' | head -3)
[ -z "$leftovers" ] && pass || fail "staging directories left: $leftovers"


# 8. Issue 31 D2/D3: a secret's value outside a secret-named variable. In launch.args it would be
#    written into launch.sh: refused at the card's line, naming the variable, nothing rendered.
#    In another card field it is [REDACTED] in card.yaml and plan.json, the card keeping its shape.
args_card="$SCRATCH/args-card"
mkdir -p "$args_card"
cp "$work/tiny-ddp.yaml" "$work/train.py" "$args_card/"
expect_status 2 "a secret value in launch.args" -- env HF_TOKEN="$hf_token" "$CCL_HARNESS" render "$args_card/tiny-ddp.yaml" \
    --set "launch.args=[--note, $hf_token]" --out "$SCRATCH/args-render"
expect_output "names the field and the variable" "launch.args[1]: holds the value of HF_TOKEN, a secret"
[ ! -e "$SCRATCH/args-render" ] && pass || fail "a refused render left $SCRATCH/args-render"
expect_status 2 "the card's own secret in launch.args, nothing exported" -- env -u HF_TOKEN "$CCL_HARNESS" run "$args_card/tiny-ddp.yaml" \
    --set "launch.env.CARD_API_TOKEN=$card_secret" --set "launch.args=[--token=$card_secret]" --dry-run --results "$SCRATCH/args-results"
expect_output "named after the card's variable" "launch.args[0]: holds the value of CARD_API_TOKEN, a secret"
[ ! -e "$SCRATCH/args-results" ] && pass || fail "a refused run wrote $SCRATCH/args-results"
expect_status 0 "a secret-named variable holding a path the render shares" -- env SSH_AUTH_SOCK=/bin/bash "$CCL_HARNESS" render \
    "$args_card/tiny-ddp.yaml" --out "$SCRATCH/path-render"
grep -qF "/bin/bash" "$SCRATCH/path-render/launch.sh" && pass || fail "the render holds no /bin/bash to share"
expect_status 2 "a session secret's value in a template's text" -- env SOME_AUTH_WORD=kineto_trace_ "$CCL_HARNESS" render \
    "$args_card/tiny-ddp.yaml" --out "$SCRATCH/word-render"
expect_output "says what to do" "unset SOME_AUTH_WORD if it holds no secret"
expect_status 0 "a secret value in the description" -- env HF_TOKEN="$hf_token" "$CCL_HARNESS" render "$args_card/tiny-ddp.yaml" \
    --set "description=token $hf_token here" --out "$SCRATCH/desc-render"
no_value_in "$SCRATCH/desc-render" "render with a secret in the description" "$hf_token"
expect_eq "the description redacted, still a string" "token [REDACTED] here" \
    "$(/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["description"])' "$SCRATCH/desc-render/card.yaml")"

# 9. ingest keeps what a run keeps: the card's launch.env secret [REDACTED] by name, and the
#    values of the card's and this environment's secrets out of --scripts and --logs.
job="$SCRATCH/ingest-job"
mkdir -p "$job/traces" "$job/scripts" "$job/logs"
cp tests/fixtures/real_traces/hta_sampled_nccl2/rank0_trace.json.gz "$job/traces/kineto_trace_0.json.gz"
cp tests/fixtures/real_traces/hta_sampled_nccl2/rank1_trace.json.gz "$job/traces/kineto_trace_1.json.gz"
/usr/bin/python3 - "$work/tiny-ddp.yaml" "$job/card.yaml" "$card_secret" <<'PY'
import sys
text = open(sys.argv[1]).read()
assert "\nlaunch:\n" in text
open(sys.argv[2], "w").write(text.replace("\nlaunch:\n", f"\nlaunch:\n  env:\n    CARD_API_TOKEN: {sys.argv[3]}\n", 1))
PY
printf 'export HF_TOKEN=%s\ntorchrun train.py --key %s\n' "$hf_token" "$card_secret" >"$job/scripts/run.sh"
printf 'rank 0: token %s\nrank 0: card %s\n' "$hf_token" "$card_secret" >"$job/logs/job.log"
expect_status 0 "ingest with secrets in the card, the scripts and the logs" -- env HF_TOKEN="$hf_token" \
    "$CCL_HARNESS" ingest "$job/card.yaml" "$job/traces" --scripts "$job/scripts" --logs "$job/logs" --results "$SCRATCH/ingested"
expect_output "says what it replaced" "occurrence(s) of secret values in the --scripts and --logs files replaced by [REDACTED]"
no_value_in "$SCRATCH/ingested" "the ingested run directory and bundle" "$hf_token" "$card_secret"
bundle=$(ls "$SCRATCH"/ingested/*.tar.zst)
unpacked="$SCRATCH/ingested-unpacked"
mkdir -p "$unpacked"
tar --zstd -xf "$bundle" -C "$unpacked"
no_value_in "$unpacked" "the ingested bundle's files" "$hf_token" "$card_secret"
grep -rqF "CARD_API_TOKEN: \"[REDACTED]\"" "$unpacked" && pass || fail "the bundle's card keeps the variable's name, value [REDACTED]"
expect_status 0 "the ingested bundle verifies" -- "$CCL_HARNESS" verify "$bundle"

finish
