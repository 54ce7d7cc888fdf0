#!/bin/bash
# vLLM on the TPU VM. launch.sh copies this directory (remote.sh, env.sh, Containerfile) to the
# worker and starts `bash remote.sh` there.
#   bash remote.sh         build the image from the Containerfile, then run `remote.sh bench` in it
#   bash remote.sh bench   the benchmark itself (inside the container, or on the VM without one,
#                          where vllm-tpu must be installed)
#   bash remote.sh stop    stop a run that launch.sh was interrupted out of
# launch.source is recorded with the run (plan.json); the engine that runs is the image's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
host="$(hostname)"
container="$(basename "$here")"

# The same environment in every process that touches the TPU.
setup_env() {
    # shellcheck source=/dev/null
    source "$here/env.sh"
    # libtpu reads its flags once per process: the card's value, never a local one.
    export LIBTPU_INIT_ARGS=''
    # vLLM's TPU backends find the chips through PJRT; the card's env may already say so.
    export PJRT_DEVICE="${PJRT_DEVICE:-TPU}"
    # Model weights: one cache per VM, kept between runs on it.
    export HF_HOME=/tmp/hf_home
}

# The host's trace in traces/, named after the host as the CCL-Bench tools expect:
# <host>.xplane.pb, plus its Chrome-trace export <host>.trace.json.gz where the image can convert.
collect_traces() {
    local found=()
    mapfile -t found < <(find "$here/profile" -type f \( -name '*.xplane.pb' -o -name '*.trace.json.gz' \) 2>/dev/null)
    if [ "${#found[@]}" = 0 ]; then
        echo "$host: no TPU trace under $here/profile" >&2
        return 0
    fi
    cp "${found[@]}" "$here/traces/"
    python3 - "$here/traces" <<'EOF' || echo "$host: no Chrome-trace export; the .xplane.pb traces are kept" >&2
import glob
import gzip
import os
import sys

try:
    from xprof.convert import raw_to_tool_data
except ImportError:
    from tensorboard_plugin_profile.convert import raw_to_tool_data

for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.xplane.pb"))):
    target = path[: -len(".xplane.pb")] + ".trace.json.gz"
    if os.path.exists(target):
        continue
    data, _ = raw_to_tool_data.xspace_to_tool_data([path], "trace_viewer", {})
    if isinstance(data, str):
        data = data.encode()
    with gzip.open(target, "wb") as out:
        out.write(data)
EOF
}

bench() {
    setup_env
    if [ -f "$here/hf_token" ]; then
        HF_TOKEN="$(cat "$here/hf_token")"
        export HF_TOKEN
        rm -f "$here/hf_token"
    fi
    local args=(
        --model Qwen/Qwen3-4B
        --tensor-parallel-size 4
        --pipeline-parallel-size 1
        --data-parallel-size 1
        --input-len 1024
        --output-len 1
        --batch-size 128
        --dtype bfloat16
        --num-iters-warmup 2
    )

    # launch.args go last, so that they override the choices above.
    args+=(

    )
    # <host>.latency.json: the name CCL-Bench's mfu.py looks for (tools/mfu/mfu.py:113-125).
    local timed_args=(--num-iters 3 --output-json "$here/logs/$host.latency.json")
    local profile_args=(--profile --profiler-config.profiler torch --profiler-config.torch_profiler_dir "$here/profile")
    # Preflight, in seconds: the vLLM in the image is asked for its options (`vllm bench latency
    # --help`, and --help=all) and every one both passes use must be among them.
    python3 "$here/ccl_preflight.py" --framework vllm-tpu --dist vllm --dist vllm-tpu --module vllm \
        --help-command "vllm bench latency" -- "${args[@]}" "${timed_args[@]}" "${profile_args[@]}" || return 3
    local status=0
    # Pass 1, the trace: with --profile, bench latency warms up, profiles one batch and returns
    # before it times anything or writes --output-json (vllm/benchmarks/latency.py), so the
    # timed pass below is a run of its own. vLLM's TPU worker (tpu-inference) serves the "torch"
    # profiler with the JAX profiler, which writes an XPlane per host under the directory.
    echo "$host: vllm bench latency ${args[*]} --profile"
    vllm bench latency "${args[@]}" "${profile_args[@]}" || status=$?
    collect_traces
    if [ "$status" != 0 ]; then
        return "$status"
    fi
    # The timed pass: --num-iters batches, their latencies in logs/<host>.latency.json.
    echo "$host: vllm bench latency ${args[*]} --num-iters 3"
    vllm bench latency "${args[@]}" "${timed_args[@]}" || status=$?
    return "$status"
}

case "${1:-}" in
    bench)
        bench
        exit
        ;;
    stop)
        {
            docker rm -f "$container" || sudo docker rm -f "$container"
        } >/dev/null 2>&1 || true
        if [ -f "$here/run.pid" ]; then
            kill "$(cat "$here/run.pid")" 2>/dev/null || true
        fi
        exit 0
        ;;
esac

mkdir -p "$here/logs" "$here/traces" "$here/profile"
exec > >(tee -a "$here/logs/$host.log") 2>&1
setup_env
mkdir -p "$HF_HOME"
echo "$host: LIBTPU_INIT_ARGS sha256 $(printf '%s' "$LIBTPU_INIT_ARGS" | sha256sum | cut -d' ' -f1)"
docker=(docker)
if ! docker info >/dev/null 2>&1; then
    docker=(sudo docker)
fi
image=docker.io/vllm/vllm-tpu@sha256:d6748bc7b1b020ab6411506d4bf30f8bfabb5db2b8505328f26d1a545b479df8
if [ -f "$here/Containerfile" ]; then
    # The rendered Containerfile is what runs: built here from the pinned base.
    image="ccl-vllm:$(basename "$here")"
    mkdir -p "$here/build"
    "${docker[@]}" build --tag "$image" --file "$here/Containerfile" "$here/build"
fi
"${docker[@]}" rm -f "$container" >/dev/null 2>&1 || true
# vLLM's TPU image wants the host's network and shared memory (its installation guide). The run
# directory is mounted at the same path, so `remote.sh bench` finds env.sh and writes where
# launch.sh collects.
"${docker[@]}" run --rm --name "$container" --privileged --net=host --shm-size=150g \
    --volume /dev/shm:/dev/shm --volume "$here:$here" --volume "$HF_HOME:$HF_HOME" \
    --entrypoint bash "$image" "$here/remote.sh" bench

