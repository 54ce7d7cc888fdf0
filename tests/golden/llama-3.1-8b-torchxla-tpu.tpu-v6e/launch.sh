#!/bin/bash
# PyTorch/XLA training (torchprime's torch_xla_models/train.py, SPMD) on a Cloud TPU
# v6e-8 slice: 1 VM(s) x 8 chips, mesh data 1 x fsdp 2 x tensor 4.
# Runs on the user's workstation, which needs gcloud (authenticated).
#   1. creates the slice as a queued resource and waits until it is ACTIVE;
#   2. copies remote.sh, env.sh and the Containerfile to every VM and runs remote.sh on all of
#      them at once (one SPMD program spread over every host of the slice);
#   3. copies each host's trace and log back into traces/ and logs/;
#   4. deletes the queued resource, also on failure or interrupt, unless CCL_KEEP_TPU=1.
# CCL_TPU_WAIT_TIMEOUT (seconds, default 3600) bounds the wait for capacity; CCL_TPU_SSH_FLAGS
# adds flags to every tpu-vm ssh/scp (e.g. --tunnel-through-iap). HF_TOKEN, when set here, is
# copied to the VMs in a file (never on a command line): the Llama tokenizers are gated.
# Functions run from traps and through in_background "$@", which shellcheck cannot follow:
# shellcheck disable=SC2317
set -euo pipefail
RUN_DIR="${CCL_RUN_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
mkdir -p "$RUN_DIR/traces" "$RUN_DIR/logs"
# env.sh is not sourced here: it is the workers' environment, shipped to them and sourced there.

PROJECT=my-gcp-project
ZONE=us-east5-b
TPU_NAME=ccl-llama-3-1-8b-torchxla-tpu
QR="$TPU_NAME-qr"
# Relative to the ssh user's home on each worker, where tpu-vm ssh and scp both start.
REMOTE_DIR="ccl-run/$TPU_NAME"
WAIT_TIMEOUT="${CCL_TPU_WAIT_TIMEOUT:-3600}"
read -r -a ssh_extra <<< "${CCL_TPU_SSH_FLAGS:-}"
where=(--project "$PROJECT" --zone "$ZONE")

log() { printf '[launch %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

command -v gcloud >/dev/null || { log "gcloud is not on PATH"; exit 2; }
# What validate --strict refuses, checked again before any money is spent.
if [ -z "$PROJECT" ]; then
    log "launch.tpu.project is not set: no Google Cloud project to create the slice in"
    exit 2
fi
image=docker.io/library/python@sha256:a116514e19457bcb7af7efe9c3dd0b9b71e85b317694e7882a1c52aa15a78134
if [ -z "$image" ]; then
    log "launch.container.image is not set: no image to run on the TPU VMs"
    exit 2
fi

# Long gcloud calls run in the background and are waited for, so that a SIGTERM or Ctrl-C is
# handled at once (bash defers traps until a foreground command ends).
child=0
in_background() {
    "$@" &
    child=$!
    local status=0
    wait "$child" || status=$?
    child=0
    return "$status"
}
pause() {
    sleep "$1" &
    child=$!
    wait "$child"
    child=0
}
on_workers() {
    gcloud compute tpus tpu-vm ssh "$TPU_NAME" "${where[@]}" --worker=all --quiet "${ssh_extra[@]}" --command "$1"
}
tpu_scp() {
    gcloud compute tpus tpu-vm scp "$@" "${where[@]}" --worker=all --quiet "${ssh_extra[@]}"
}
remote_dir_q="$(printf '%q' "$REMOTE_DIR")"

# A trap runs inside the redirections of the command it interrupts (the run's tee, which the
# same signal may have killed): cleanup writes to the launcher's own stderr, kept as fd 3.
exec 3>&2
owned=0
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    exec >&3 2>&3
    if [ "$child" != 0 ]; then
        kill "$child" 2>/dev/null || true
    fi
    if [ "$owned" = 1 ]; then
        if [ "${CCL_KEEP_TPU:-0}" = 1 ]; then
            if [ "$status" -ge 128 ]; then
                # The slice stays up, so the workload would go on running on it.
                on_workers "bash $remote_dir_q/remote.sh stop" >/dev/null 2>&1 || true
            fi
            log "CCL_KEEP_TPU=1: keeping $QR; delete it with: gcloud compute tpus queued-resources delete $QR --project $PROJECT --zone $ZONE --force"
        elif [ "$status" -ge 128 ]; then
            # Interrupted: the executor allows a few seconds before SIGKILL, so only ask for the deletion.
            log "deleting queued resource $QR (asynchronously)"
            gcloud compute tpus queued-resources delete "$QR" "${where[@]}" --force --async --quiet ||
                log "could not delete $QR: delete it by hand"
        else
            log "deleting queued resource $QR"
            gcloud compute tpus queued-resources delete "$QR" "${where[@]}" --force --quiet ||
                log "could not delete $QR: delete it by hand"
        fi
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

state() {
    gcloud compute tpus queued-resources describe "$QR" "${where[@]}" --format='value(state.state)'
}

# 1. The slice. A queued resource left by an earlier run with CCL_KEEP_TPU=1 is reused.
if current="$(state 2>/dev/null)" && [ -n "$current" ]; then
    log "queued resource $QR already exists ($current): reusing it"
    owned=1
else
    create=(
        gcloud compute tpus queued-resources create "$QR"
        --node-id "$TPU_NAME" "${where[@]}"
        --accelerator-type v6e-8
        --runtime-version v2-alpha-tpuv6e
    )

    log "creating queued resource $QR: v6e-8 in $ZONE"
    owned=1
    in_background "${create[@]}"
fi

deadline=$((SECONDS + WAIT_TIMEOUT))
delay=10
while :; do
    # An API hiccup is not a verdict: keep polling until the deadline.
    current="$(state 2>/dev/null)" || current=UNKNOWN
    case "$current" in
        ACTIVE)
            break
            ;;
        FAILED | SUSPENDING | SUSPENDED)
            log "queued resource $QR is $current"
            gcloud compute tpus queued-resources describe "$QR" "${where[@]}" >&2 || true
            exit 1
            ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
        log "queued resource $QR is not ACTIVE after ${WAIT_TIMEOUT}s (last state: ${current:-UNKNOWN})"
        exit 1
    fi
    log "queued resource $QR is ${current:-UNKNOWN}; next check in ${delay}s"
    pause "$delay"
    delay=$((delay * 2 > 120 ? 120 : delay * 2))
done
log "queued resource $QR is ACTIVE"

# 2. The workload. sshd on fresh VMs can take a minute after ACTIVE: retry the first contact.
# Root-owned files from an earlier run's container need sudo to go.
prepare="sudo rm -rf $remote_dir_q && mkdir -p $remote_dir_q"
for attempt in 1 2 3 4 5 6; do
    if in_background on_workers "$prepare"; then
        break
    fi
    if [ "$attempt" = 6 ]; then
        log "cannot reach the workers of $TPU_NAME over ssh"
        exit 1
    fi
    log "workers not reachable yet (attempt $attempt); retrying in 30s"
    pause 30
done
files=("$RUN_DIR/remote.sh" "$RUN_DIR/env.sh" "$RUN_DIR/ccl_preflight.py")
if [ -f "$RUN_DIR/Containerfile" ]; then
    files+=("$RUN_DIR/Containerfile")
fi
in_background tpu_scp "${files[@]}" "$TPU_NAME:$REMOTE_DIR/"
if [ -n "${HF_TOKEN:-}" ]; then
    # A file readable by its owner only (mktemp), which remote.sh deletes as soon as it has read it.
    token_file="$(mktemp)"
    printf '%s' "$HF_TOKEN" > "$token_file"
    if ! in_background tpu_scp "$token_file" "$TPU_NAME:$REMOTE_DIR/hf_token"; then
        rm -f "$token_file"
        log "could not copy HF_TOKEN to the workers"
        exit 1
    fi
    rm -f "$token_file"
fi

log "running on 1 worker(s); their output goes to logs/workers.log"
status=0
in_background on_workers "bash $remote_dir_q/remote.sh" > >(tee -a "$RUN_DIR/logs/workers.log") 2>&1 || status=$?

# 3. Traces and logs, also after a failure: a partial trace still says where it stopped.
# Every host names its files after itself, so the workers' copies do not collide.
in_background tpu_scp --recurse "$TPU_NAME:$REMOTE_DIR/traces" "$RUN_DIR/" || log "could not copy the traces back"
in_background tpu_scp --recurse "$TPU_NAME:$REMOTE_DIR/logs" "$RUN_DIR/" || log "could not copy the worker logs back"
if [ "$status" != 0 ]; then
    log "the workload failed on at least one worker (exit $status): see logs/"
fi
# 4. cleanup (the EXIT trap) deletes the slice.
exit "$status"
