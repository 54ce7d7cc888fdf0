#!/bin/bash
# torchprime's PyTorch/XLA trainer on one VM of the TPU slice. launch.sh copies this directory
# (remote.sh, env.sh, Containerfile) to every worker and starts `bash remote.sh` on all of them at
# once: the same image, environment and command everywhere; PJRT finds the other workers through
# the TPU metadata and torch_xla runs one SPMD program over the slice.
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
    export LIBTPU_INIT_ARGS=''
    # torch_xla picks its PJRT plugin from PJRT_DEVICE; the card's env may already say so.
    export PJRT_DEVICE="${PJRT_DEVICE:-TPU}"
    # The tokenizer (and dataset) cache: one per VM, kept between runs on it.
    export HF_HOME=/tmp/hf_home
}

# One trace per host in traces/, named after the host as the CCL-Bench tools expect:
# <host>.xplane.pb, plus its Chrome-trace export <host>.trace.json.gz where the image can convert.
collect_traces() {
    local found=()
    mapfile -t found < <(find "$here/profile" -type f \( -name '*.xplane.pb' -o -name '*.trace.json.gz' \) 2>/dev/null)
    if [ "${#found[@]}" = 0 ]; then
        echo "$host: no TPU trace under $here/profile" >&2
        return 0
    fi
    cp "${found[@]}" "$here/traces/"
    python3 - "$here/traces" <<'PY' || echo "$host: no Chrome-trace export; the .xplane.pb traces are kept" >&2
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
PY
}

train() {
    setup_env
    if [ -f "$here/hf_token" ]; then
        HF_TOKEN="$(cat "$here/hf_token")"
        export HF_TOKEN
        rm -f "$here/hf_token"
    fi
    # Hydra overrides of torchprime's configs/default.yaml: a key the composed config lacks is
    # refused (docs/contracts/torchxla-ea8f14b64a1f14bcb5b6603dd3d41911d414c5f7.yaml). The values
    # are the plan's (explain shows why). The dataset is default.yaml's own (wikitext).
    local args=(
        model=llama-3.1-8b
        model/sharding=llama-fsdp-tp
        dataset.block_size=512
        task.global_batch_size=4
        task.max_steps=20
        ici_mesh.data=1
        ici_mesh.fsdp=2
        ici_mesh.tensor=4
        ici_mesh.expert=1
        ici_mesh.context=1
        torch_dtype=bfloat16
        run_name=ccl-llama-3-1-8b-torchxla-tpu
        output_dir="$here/output"
    )
    # Every host starts and stops its own trace (base_trainer.py:300-311) into profile_dir.
    args+=(
        profile_dir="$here/profile"
        profile_start_step=3
        profile_end_step=13
    )

    # launch.args last: Hydra applies overrides in order, so the card has the final say.
    args+=(

    )

    cd "${TORCHPRIME_REPO_ROOT:-/deps}"
    local config=torchprime/torch_xla_models/configs/default.yaml
    # Preflight, in seconds: every plain key=value above must be a key of the image's default.yaml,
    # before torch_xla starts and the tokenizer downloads; Hydra itself checks the dotted ones.
    python3 "$here/ccl_preflight.py" --framework torchxla --dist torchprime --dist torch_xla --config-keys "$config" \
        -- "${args[@]}" || return 3
    echo "$host: python3 torchprime/torch_xla_models/train.py ${args[*]}"
    local status=0
    python3 torchprime/torch_xla_models/train.py "${args[@]}" || status=$?
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

mkdir -p "$here/logs" "$here/traces" "$here/output" "$here/profile"
exec > >(tee -a "$here/logs/$host.log") 2>&1
setup_env
mkdir -p "$HF_HOME"
# Compare these lines across the workers' logs: they must all agree.
echo "$host: LIBTPU_INIT_ARGS sha256 $(printf '%s' "$LIBTPU_INIT_ARGS" | sha256sum | cut -d' ' -f1)"
docker=(docker)
if ! docker info >/dev/null 2>&1; then
    docker=(sudo docker)
fi
image=docker.io/library/python@sha256:a116514e19457bcb7af7efe9c3dd0b9b71e85b317694e7882a1c52aa15a78134
if [ -f "$here/Containerfile" ]; then
    # The rendered Containerfile is what runs: built here, on each worker, from the pinned base,
    # with the torch_xla release the card's env names (TORCH_XLA_VERSION, default 2.8.0).
    image="ccl-torchxla:$(basename "$here")"
    mkdir -p "$here/build"
    "${docker[@]}" build --tag "$image" --build-arg "TORCH_XLA_VERSION=${TORCH_XLA_VERSION:-2.8.0}" \
        --file "$here/Containerfile" "$here/build"
fi
"${docker[@]}" rm -f "$container" >/dev/null 2>&1 || true
# The run directory is mounted at the same path, so `remote.sh train` finds env.sh and writes
# output/, profile/ and traces/ where launch.sh collects them.
"${docker[@]}" run --rm --name "$container" --privileged --net=host --shm-size=16g \
    --volume "$here:$here" --volume "$HF_HOME:$HF_HOME" --entrypoint bash "$image" "$here/remote.sh" train

