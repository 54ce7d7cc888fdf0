#!/bin/bash
# tiny-ddp: DistributedDataParallel over gloo on this machine, 2 ranks.
# The local executor starts one copy per rank with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR
# and MASTER_PORT set. Started by hand without RANK, it starts every rank itself.
set -euo pipefail
RUN_DIR="${CCL_RUN_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
# shellcheck source=/dev/null
source "$RUN_DIR/env.sh"
mkdir -p "$RUN_DIR/traces" "$RUN_DIR/logs"

if [ -z "${RANK:-}" ]; then
    export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}" MASTER_PORT="${MASTER_PORT:-29500}" WORLD_SIZE=2
    pids=()
    for ((rank = 0; rank < WORLD_SIZE; rank++)); do
        RANK=$rank LOCAL_RANK=$rank "${BASH_SOURCE[0]}" > "$RUN_DIR/logs/rank_$rank.log" 2>&1 &
        pids+=("$!")
    done
    status=0
    for pid in "${pids[@]}"; do
        wait "$pid" || status=$?
    done
    exit "$status"
fi

args=(
    --steps 12
    --wait 1
    --warmup 2
    --active 5
    --batch-size 8
    --seq-len 32
    --trace-dir "$RUN_DIR/traces"

)
container=()
python=/usr/bin/python3

# The probe records versions and environment for the provenance record (never failing the
# run), then becomes the workload.
exec "${container[@]}" "$python" "$RUN_DIR/ccl_probe.py" "$RUN_DIR" -- "$python" "$RUN_DIR/train.py" "${args[@]}"
