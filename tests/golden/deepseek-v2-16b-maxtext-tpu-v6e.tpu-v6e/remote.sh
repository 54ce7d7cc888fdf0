#!/bin/bash
# MaxText on one VM of the TPU slice. launch.sh copies this directory (remote.sh, env.sh,
# Containerfile) to every worker and starts `bash remote.sh` on all of them at once: the same
# image, environment and command everywhere; JAX finds the other workers through the TPU metadata.
#   bash remote.sh         build the image from the Containerfile, then run `remote.sh train` in it
#   bash remote.sh train   the training itself (inside the container, or on the VM without one)
#   bash remote.sh stop    stop a run that launch.sh was interrupted out of
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
host="$(hostname)"
container="$(basename "$here")"

# The same environment in every process that touches the TPU, on every worker.
setup_env() {
    # shellcheck source=/dev/null
    source "$here/env.sh"
    # libtpu reads its flags once per process; workers that disagree compile different programs
    # and hang in their first collective, so all take the card's value, never a local one.
    export LIBTPU_INIT_ARGS='--xla_tpu_scoped_vmem_limit_kib=81920 --xla_tpu_enable_async_collective_fusion=true --xla_tpu_enable_async_collective_fusion_fuse_all_gather=true --xla_tpu_enable_async_collective_fusion_multiple_steps=true --xla_tpu_overlap_compute_collective_tc=true --xla_enable_async_all_gather=true'
}

# One trace per host in traces/, named after the host as the CCL-Bench tools expect:
# <host>.xplane.pb, plus its Chrome-trace export <host>.trace.json.gz where the image can convert.
collect_traces() {
    local found=()
    mapfile -t found < <(find "$here/output" -type f \( -name '*.xplane.pb' -o -name '*.trace.json.gz' \) 2>/dev/null)
    if [ "${#found[@]}" = 0 ]; then
        echo "$host: no TPU trace under $here/output" >&2
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

train() {
    setup_env
    # Every key below is one of MaxText/configs/base.yml's: pyconfig refuses any other
    # (docs/contracts/maxtext-tpu-recipes-v0.1.4.yaml). The values are the plan's (explain shows why).
    local args=(
        run_name=ccl-deepseek-v2-16b-maxtext-tpu-v6e
        model_name=deepseek2-16b
        dtype=bfloat16
        weight_dtype=float32
        per_device_batch_size=1
        max_target_length=1024
        steps=13
        ici_data_parallelism=1
        ici_fsdp_parallelism=1
        ici_tensor_parallelism=2
        ici_expert_parallelism=4
        ici_pipeline_parallelism=1
        ici_context_parallelism=1
        dataset_type=synthetic
        enable_checkpointing=false
        base_output_directory="$here/output"
    )
    # Every host traces its own chips (MaxText keeps host 0's trace only, unless told otherwise).
    args+=(
        profiler=xplane
        skip_first_n_steps_for_profiler=5
        profiler_steps=5
        upload_all_profiler_results=true
    )
    # launch.args last: MaxText keeps the last value of a repeated key, so the card has the final say.
    args+=(
        model_name=deepseek2-16b
    )

    cd "${MAXTEXT_REPO_ROOT:-/deps}"
    # MaxText moved its package under src/ in later releases.
    local config=MaxText/configs/base.yml
    if [ -f src/MaxText/configs/base.yml ]; then
        config=src/MaxText/configs/base.yml
    fi
    # Preflight, in seconds: every key=value above must be a key of the image's base.yml, which
    # MaxText's pyconfig refuses otherwise, after the slice has been paid for and JAX started.
    python3 "$here/ccl_preflight.py" --framework maxtext --dist MaxText --dist maxtext --config-keys "$config" \
        -- "${args[@]}" || return 3
    echo "$host: python3 -m MaxText.train $config ${args[*]}"
    local status=0
    PYTHONPATH="src:${PYTHONPATH:-}" python3 -m MaxText.train "$config" "${args[@]}" || status=$?
    collect_traces
    return "$status"
}

case "${1:-}" in
    train)
        train
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

mkdir -p "$here/logs" "$here/traces" "$here/output"
exec > >(tee -a "$here/logs/$host.log") 2>&1
setup_env
# Compare these lines across the workers' logs: they must all agree.
echo "$host: LIBTPU_INIT_ARGS sha256 $(printf '%s' "$LIBTPU_INIT_ARGS" | sha256sum | cut -d' ' -f1)"
docker=(docker)
if ! docker info >/dev/null 2>&1; then
    docker=(sudo docker)
fi
image=docker.io/library/python@sha256:a116514e19457bcb7af7efe9c3dd0b9b71e85b317694e7882a1c52aa15a78134
if [ -f "$here/Containerfile" ]; then
    # The rendered Containerfile is what runs: built here, on each worker, from the pinned base.
    # MaxText's setup installs the newest jax[tpu] unless JAX_VERSION (card env) names one.
    image="ccl-maxtext:$(basename "$here")"
    mkdir -p "$here/build"
    "${docker[@]}" build --tag "$image" --build-arg "JAX_VERSION=${JAX_VERSION:-NONE}" \
        --file "$here/Containerfile" "$here/build"
fi
"${docker[@]}" rm -f "$container" >/dev/null 2>&1 || true
# The run directory is mounted at the same path, so `remote.sh train` finds env.sh and writes
# output/ and traces/ where launch.sh collects them.
"${docker[@]}" run --rm --name "$container" --privileged --net=host --shm-size=16g \
    --volume "$here:$here" --entrypoint bash "$image" "$here/remote.sh" train

