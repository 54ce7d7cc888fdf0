#!/bin/bash
# Node-local and shared storage on the multi-host test cluster (clusters/slurm-multi; issue 26
# item 2). Each node has its own /tmp, /var/tmp and /dev/shm, as a Perlmutter compute node has,
# while the run directory (here under the build tree, as $SCRATCH is on Lustre) is shared:
#   1. a path made in /tmp by a step on node1 is absent on node2 and on the machine itself; the
#      shared directory is seen by both; the cluster's state directory stays reachable inside.
#   2. the Megatron reference card, scaled to 2 nodes x 4 ranks, through its Perlmutter job
#      script with the podman-hpc double on PATH (images built on this machine's node-local
#      storage, migrated to a shared squash directory): it completes with the template that
#      makes $HF_HOME on every node, and fails with the double's missing-volume message with
#      the template from before that line (and, where only the batch host makes it, on node2
#      alone).
# The profile is clusters/slurm-multi.yaml plus what the run needs of Perlmutter's
# (clusters/perlmutter.yaml): podman-hpc among the runtimes and hf_home: /tmp/hf_home.
# Starts and stops the cluster itself; needs root and network namespaces (skipped, 125, without).
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-multi/cluster.sh

require_root_netns node_local

t_start=$SECONDS
# This machine's node-local image storage for the double (the login node's /tmp); inside a
# node the same path is under that node's own /tmp.
host_tmp=/tmp/ccl-node-local-$$
cleanup() {
    bash "$cluster" stop >/dev/null 2>&1 || true
    rm -rf "$host_tmp"
}
trap cleanup EXIT
eval "$(bash "$cluster" env)"
state_dir=$(dirname "$SLURM_CONF")

bash "$cluster" stop >/dev/null 2>&1 || true
expect_status 0 "start" -- bash "$cluster" start

# 1. Node-local /tmp, shared run directory.
shared="$SCRATCH/shared"
mkdir -p "$shared"
mark=/tmp/ccl-node-local-mark-$$
expect_status 0 "a step on node1 writes /tmp and the shared directory" -- srun -N1 -w node1 -t 1 bash -c \
    "mkdir '$mark' && hostname >'$mark/who' && hostname >'$shared/from-node1' && echo shm >/dev/shm/ccl-mark-$$ && echo vt >/var/tmp/ccl-mark-$$"
expect_status 0 "node2 sees the shared file" -- srun -N1 -w node2 -t 1 cat "$shared/from-node1"
expect_eq "written on node1, read on node2" "node1" "$OUT"
expect_status 0 "node2 lacks node1's /tmp path" -- srun -N1 -w node2 -t 1 bash -c \
    "for p in '$mark' /dev/shm/ccl-mark-$$ /var/tmp/ccl-mark-$$; do if [ -e \"\$p\" ]; then echo \"\$(hostname) has \$p\"; else echo \"\$(hostname) lacks \$p\"; fi; done"
expect_eq "node2's /tmp, /dev/shm and /var/tmp are its own" "node2 lacks $mark
node2 lacks /dev/shm/ccl-mark-$$
node2 lacks /var/tmp/ccl-mark-$$" "$OUT"
expect_status 0 "node1 keeps it for its next step" -- srun -N1 -w node1 -t 1 cat "$mark/who"
expect_eq "node1's /tmp outlives the step" "node1" "$OUT"
[ ! -e "$mark" ] && pass || fail "the machine's own /tmp has $mark"
[ "$(cat "$state_dir/nodes/node1/tmp/${mark#/tmp/}/who" 2>/dev/null)" = node1 ] && pass ||
    fail "node1's /tmp is not $state_dir/nodes/node1/tmp: $(ls -la "$state_dir/nodes/node1/tmp" 2>&1)"
[ ! -e "$state_dir/nodes/node2/tmp/${mark#/tmp/}" ] && pass || fail "node2's directory has node1's file"
# A batch job: the script runs on node1; what it makes in /tmp its one-task-per-node step finds
# on node1 only. The state directory (under /tmp by default) is reachable on every node.
cat >"$SCRATCH/local.sbatch" <<EOF
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=1 -t 1
set -euo pipefail
mkdir -p /tmp/batch-$$
srun bash -c 'echo "\$(hostname) \$( [ -d /tmp/batch-$$ ] && echo has || echo lacks) \$( [ -S "$state_dir/munge/munge.socket.2" ] && echo state || echo no-state)"'
EOF
expect_status 0 "the batch job" -- sbatch --wait -o "$SCRATCH/local.out" "$SCRATCH/local.sbatch"
OUT=$(sort "$SCRATCH/local.out")
expect_eq "the batch host's /tmp is node1's alone; the state directory is everywhere" "node1 has state
node2 lacks state" "$OUT"

# 2. The Megatron card through podman-hpc on 2 nodes.
results="$SCRATCH/results"
profile="$SCRATCH/perlmutter-on-slurm-multi.yaml"
/usr/bin/python3 - clusters/slurm-multi.yaml "$profile" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
text = text.replace("name: slurm-multi\n", "name: perlmutter-on-slurm-multi\n", 1)
text, n = re.subn(r"container:\n  runtimes: \[[^\]]*\]\n", "container:\n  runtimes: [podman-hpc, none]\n", text)
assert n == 1, "clusters/slurm-multi.yaml: no container runtimes line"
text += "hf_home: /tmp/hf_home\n"
open(sys.argv[2], "w").write(text)
EOF
repo="$SCRATCH/Megatron-LM"
megatron_double_repo "$repo"

# podman-hpc: the double first on PATH; its images are built in node-local storage (under /tmp,
# node-local inside each node) and migrated to a squash directory on the shared file system.
export PATH="$CCL_SOURCE_DIR/tests/doubles/podman-hpc:$PATH"
export PYTHONPATH="$CCL_SOURCE_DIR/tests/doubles/debian-torchrun"
unset CCL_PODMAN_HPC_STATE
export PODMANHPC_GRAPH_ROOT="$host_tmp/storage" SQUASH_DIR="$SCRATCH/squash"
card=workloads/deepseek-v3-16b-megatron-perlmutter/deepseek-v3-16b-megatron-perlmutter.yaml
# 16 GPUs on 4 nodes scaled to 8 on 2: tp 2, dp 4, ep 4 (expert tensor parallel = tp, so
# etp·ep·pp = 8 = the world).
scaled=(
    --set "launch.source.repo=$repo"
    --set launch.container.runtime=podman-hpc
    --set launch.account=m4999
    --set workload.hardware.xpu_spec.total_count=8
    --set Model-executor.model_plan_parallelization.tp=2
    --set Model-executor.model_plan_parallelization.dp_replicate=4
    --set Model-executor.model_plan_parallelization.ep=4
)
run_card() { # run_card [ARGS...]
    "$CCL_HARNESS" run "$card" --cluster "$profile" "${scaled[@]}" --results "$results" --git-cache "$SCRATCH/git" "$@"
}

expect_status 0 "the Megatron card on 2 nodes under podman-hpc" -- run_card
run=$(latest_run)
expect_json "$run/run.json" "j['state'], j['scheduler']['nodes']" "('completed', 'node[1-2]')" "the fixed template completes on both nodes"
[ "$(ls "$run/traces" | grep -c '^kineto_trace_[0-7].json$')" -eq 8 ] && pass || fail "8 traces: $(ls "$run/traces")"
grep -q 'srun --ntasks-per-node=1 mkdir -p "$HF_HOME"' "$run/rendered/launch.sbatch" && pass || fail "the rendered script does not make HF_HOME on every node"
[ -d "$state_dir/nodes/node1/tmp/hf_home" ] && [ -d "$state_dir/nodes/node2/tmp/hf_home" ] && pass ||
    fail "HF_HOME was not made in each node's own /tmp: $(ls "$state_dir"/nodes/node*/tmp 2>&1)"
expect_json "$SQUASH_DIR/squash.json" "len(j)" 1 "one image migrated to the shared squash directory"
[ ! -e "$state_dir/nodes/node1/tmp/${host_tmp#/tmp/}/storage/local.json" ] && pass ||
    fail "node1 built the image again although it was migrated"
# Containers are node-local too (podman's --root is the node's graph root): each node's
# `podman-hpc ps` lists its own, none of the other's.
/usr/bin/python3 - "$run/container/ran-node1.json" "$run/container/ran-node2.json" <<'EOF' && pass || fail "each node did not list only its own containers"
import json, sys
one, two = ({c["Id"] for c in json.load(open(p))} for p in sys.argv[1:])
assert one and two and not one & two, (one, two)
EOF
expect_status 0 "the bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"

# The template from before the fix, from a copy of the data directories (--home).
old_home="$SCRATCH/old-home"
mkdir -p "$old_home"
cp -r templates clusters containers workloads "$old_home/"
template=templates/megatron-lm/perlmutter/launch.sbatch.mustache
sed -i '/mkdir -p "\$HF_HOME"/d' "$old_home/$template"
grep -q 'mkdir -p "\$HF_HOME"' "$old_home/$template" && fail "the old template still makes HF_HOME" || pass
# Each node's /tmp keeps what the run above made in it, as a real node's does until it is
# cleaned; remove it on both, as a fresh allocation would find them.
clear_hf_home() {
    expect_status 0 "$1: /tmp/hf_home removed on both nodes" -- srun -N2 --ntasks-per-node=1 -t 1 rm -rf /tmp/hf_home
    [ ! -e "$state_dir/nodes/node1/tmp/hf_home" ] && [ ! -e "$state_dir/nodes/node2/tmp/hf_home" ] && pass ||
        fail "$1: /tmp/hf_home is still on a node"
}
# refused_on WHAT NODE: the run from $old_home fails, the double refusing the missing mount on NODE.
refused_on() {
    local what=$1 node=$2 run
    clear_hf_home "$what"
    expect_status 1 "$what fails on slurm-multi" -- run_card --home "$old_home"
    run=$(latest_run)
    expect_json "$run/run.json" "j['state']" "failed" "$what: the run fails"
    grep -rqF "Error: run: --volume /tmp/hf_home:/tmp/hf_home: no such file or directory on $node" "$run/logs" && pass ||
        fail "$what: no missing-volume refusal on $node: $(tail -n 5 "$run"/logs/* 2>&1)"
}
# The first container to start is refused, on node1 (the preflight step, or the training step).
refused_on "the old template" node1

# The shape a shared /tmp hides: HF_HOME made by the batch script alone, on the batch host
# (node1). node1's container starts; node2's is refused.
# (The export is the templates' shared hf_cache partial.)
partial=templates/common/hf_cache.mustache
sed -i 's|^export HF_HOME=\(.*\)$|&\nmkdir -p "$HF_HOME"|' "$old_home/$partial"
grep -qx 'mkdir -p "\$HF_HOME"' "$old_home/$partial" && pass || fail "the batch-host-only variant was not made"
refused_on "HF_HOME made on the batch host only" node2
run=$(latest_run)
grep -rqF "no such file or directory on node1" "$run/logs" && fail "batch host only: node1 was refused: $(tail -n 5 "$run"/logs/* 2>&1)" || pass

expect_status 0 "stop" -- bash "$cluster" stop
[ ! -e "$state_dir/nodes" ] && pass || fail "stop left $state_dir/nodes"
echo "node_local: took $((SECONDS - t_start)) s" >&2
finish
