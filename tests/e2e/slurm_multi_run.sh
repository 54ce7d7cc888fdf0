#!/bin/bash
# `run` across hosts on clusters/slurm-multi (issue 16 items 2 and 3): tiny-ddp 2 nodes x 2 ranks
# through the Perlmutter templates, then the faults that only happen across hosts, each ending
# with run.json in the right state, the reason naming the rank, node or port, and nothing
# half-written. Starts and stops the cluster itself; needs root and network namespaces
# (skipped, 125, without them).
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-multi/cluster.sh

require_root_netns slurm_multi_run

squatter=
cleanup() {
    [ -z "$squatter" ] || kill "$squatter" 2>/dev/null || true
    bash "$cluster" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
eval "$(bash "$cluster" env)"
state_dir=$(dirname "$SLURM_CONF")
results="$SCRATCH/results"

# The fixture card beside tiny-ddp's own train.py (launch.script is a file beside the card).
card_dir="$SCRATCH/card"
mkdir -p "$card_dir"
cp tests/fixtures/slurm-multi/tiny-ddp-2x2.yaml tests/fixtures/slurm-multi/rank_fault.py workloads/tiny-ddp/train.py "$card_dir/"
card="$card_dir/tiny-ddp-2x2.yaml"
harness() { "$CCL_HARNESS" "$@" --results "$results"; }

# no_partial RUN_DIR WHAT: run.json reads as JSON and no temporary file is left anywhere in the run.
no_partial() {
    local left
    left=$(find "$1" -name '*.tmp*' -o -name '*.partial*' -o -name '.*.tmp' | head -n 5)
    expect_eq "$2: nothing half-written" "" "$left"
    expect_json "$1/run.json" "j['state'] in ('completed', 'failed', 'cancelled')" True "$2: run.json is final"
}

# wait_for FILE TEXT SECONDS: until FILE holds TEXT.
wait_for() {
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        if grep -qF -- "$2" "$1" 2>/dev/null; then return 0; fi
        sleep 0.2
    done
    return 1
}

# wait_tasks TEXT COUNT SECONDS: until the newest run's rank logs hold TEXT on COUNT lines. A node
# killed before srun's step reached it fails the launch ("Communication connection failure")
# rather than the node, so the fault cases wait for every task to be running first. The logs are
# under rendered/ while the job runs.
wait_tasks() {
    local i run
    for ((i = 0; i < $3 * 5; i++)); do
        run=$(latest_run)
        if [ "$(cat "$run"/rendered/logs/* "$run"/logs/* 2>/dev/null | grep -cF -- "$1")" -ge "$2" ]; then return 0; fi
        sleep 0.2
    done
    return 1
}

# launch_ready: a two-node step launches again. A slurmd started anew registers before it takes
# launches: under load, a job sent at once after `start` failed on node2 with "Communication
# connection failure" (exit 233) before any fault of the test's.
launch_ready() {
    local i
    for i in 1 2 3 4 5 6; do
        if timeout 60 sbatch --wait -N2 -n2 --output=/dev/null --wrap 'srun true' >/dev/null 2>&1; then return 0; fi
        sleep 5
    done
    return 1
}

bash "$cluster" stop >/dev/null 2>&1 || true
expect_status 0 "start" -- bash "$cluster" start

# 0. A card that pins gloo to `lo` across nodes is refused before it queues, at the card's line.
geometry=(--set workload.hardware.xpu_spec.total_count=4 --set Model-executor.model_plan_parallelization.dp_replicate=4
    --set workload.hardware.xpu_spec.type=GPU --set workload.hardware.xpu_spec.model=nvidia_a100
    --set launch.account=m4999 --set workload.hardware.driver_version=cuda_12.9)
expect_status 2 "validate --strict refuses gloo on lo across nodes" -- \
    "$CCL_HARNESS" validate --strict workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-multi "${geometry[@]}"
expect_output "the card field and line" "workloads/tiny-ddp/tiny-ddp.yaml:62:27: Model-executor.communication_library.env.GLOO_SOCKET_IFNAME:"
expect_output "why" 'pins the sockets to the loopback interface "lo", but the job spans 2 nodes'
expect_status 2 "run refuses it too, submitting nothing" -- \
    harness run workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-multi "${geometry[@]}"
expect_output "run names the field" "Model-executor.communication_library.env.GLOO_SOCKET_IFNAME"
expect_eq "nothing queued" "" "$(squeue -h -o %i)"
expect_status 0 "one node keeps lo" -- "$CCL_HARNESS" validate --strict workloads/tiny-ddp/tiny-ddp.yaml --cluster slurm-multi \
    "${geometry[@]}" --set workload.hardware.xpu_spec.count_per_node=4
expect_status 2 "NCCL_SOCKET_IFNAME=lo from launch.env as well" -- "$CCL_HARNESS" validate --strict "$card" \
    --set launch.env.NCCL_SOCKET_IFNAME==lo
expect_output "at its --set" "--set launch.env.NCCL_SOCKET_IFNAME==lo: launch.env.NCCL_SOCKET_IFNAME:"
expect_status 0 "an excluded lo is fine" -- "$CCL_HARNESS" validate --strict "$card" --set launch.env.NCCL_SOCKET_IFNAME=^lo,docker

# 1. tiny-ddp 2 nodes x 2 ranks: rendezvous on node1, ranks 2-3 on node2, 4 traces by global
#    rank, the bundle verifies, metrics read 4 ranks.
expect_status 0 "tiny-ddp 2x2 across hosts" -- harness run "$card"
expect_output "completed" "COMPLETED with exit code 0:0"
expect_output "4 traces by global rank" "traces: kineto_trace_0.json, kineto_trace_1.json, kineto_trace_2.json, kineto_trace_3.json"
run=$(latest_run)
expect_json "$run/run.json" "j['state'], j['scheduler']['nodes']" "('completed', 'node[1-2]')"
expect_json "$run/provenance.json" "[(h['hostname'], h['ranks']) for h in j['hosts']]" "[('node1', [0, 1]), ('node2', [2, 3])]"
grep -q '"MASTER_ADDR": "node1"' "$run/provenance.json" && pass || fail "2x2: the ranks did not meet on node1"
bundle="${run%/}.tar.zst"
expect_status 0 "the bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
expect_output "4 traces in the bundle" "4 traces"
expect_status 0 "metrics of the bundle" -- "$CCL_HARNESS" metrics "$bundle"
expect_output "metrics read 4 ranks" "4 rank traces"
no_partial "$run" "2x2"

# 2a. The rank on node2 exits 1: the job fails, the reason names rank 3 and node2.
expect_status 1 "rank 3 fails" -- env CCL_FAULT_RANK=3 "$CCL_HARNESS" run "$card" --set launch.script=rank_fault.py --results "$results"
run=$(latest_run)
expect_json "$run/run.json" "j['state']" failed "rank 3 fails: state"
expect_json "$run/run.json" "'rank 3 on node2: Exited with exit code 1' in j['reason']" True "rank 3 fails: rank and node named"
expect_json "$run/run.json" "'RuntimeError: rank 3 failing on purpose on node2' in j['reason']" True "rank 3 fails: its own words"
expect_json "$run/run.json" "j['reason'].startswith('job ') and ' FAILED ' in j['reason']" True "rank 3 fails: the scheduler's verdict"
expect_eq "no bundle for a failed run" "" "$(ls "${run%/}.tar.zst" 2>/dev/null)"
no_partial "$run" "rank 3 fails"

# 2c. The rendezvous port taken on node1 (MASTER_PORT = 29500 + job id % 2000 in the template):
#     the run fails within seconds, the reason naming the port.
expect_status 0 "a job to learn the next id" -- sbatch --parsable -o /dev/null --wrap true
last=${OUT##*$'\n'}
nsenter --net=/run/netns/cclm-node1 /usr/bin/python3 -c '
import socket, sys, time
held = []
for job in range(int(sys.argv[1]) + 1, int(sys.argv[1]) + 6):
    s = socket.socket()
    s.bind(("10.77.0.11", 29500 + job % 2000))
    s.listen(1)
    held.append(s)
print("listening", flush=True)
time.sleep(300)
' "$last" >"$SCRATCH/squatter.out" 2>&1 &
squatter=$!
wait_for "$SCRATCH/squatter.out" listening 10 && pass || fail "the squatter did not start: $(cat "$SCRATCH/squatter.out")"
t0=$SECONDS
expect_status 1 "rendezvous port taken" -- harness run "$card"
took=$((SECONDS - t0))
kill "$squatter" 2>/dev/null || true
squatter=
run=$(latest_run)
expect_json "$run/run.json" "j['state']" failed "port taken: state"
expect_json "$run/run.json" "'rank 0 on node1: Exited with exit code 1' in j['reason']" True "port taken: rank 0 on node1"
expect_json "$run/run.json" "'Address already in use' in j['reason'] and ':' + str(29500 + int(j['job_ids'][0]) % 2000) in j['reason']" True \
    "port taken: the port named"
if [ "$took" -lt 120 ]; then pass; else fail "port taken: took $took s"; fi
no_partial "$run" "port taken"

# 2b. node2's slurmd killed mid-job: no requeue (the harness submits --no-requeue), the job
#     ends NODE_FAIL and the reason names node2.
CCL_FAULT_RANK=-1 "$CCL_HARNESS" run "$card" --set launch.script=rank_fault.py --results "$results" >"$SCRATCH/node_fail.out" 2>&1 &
runner=$!
wait_for "$SCRATCH/node_fail.out" ": RUNNING" 60 && pass || fail "node failure: the job never ran: $(cat "$SCRATCH/node_fail.out")"
wait_tasks " on node" 4 60 && pass || fail "node failure: the 4 tasks never started: $(cat "$(latest_run)"/rendered/logs/* 2>&1)"
kill -KILL "$(cat "$state_dir/run/slurmd-node2.pid")"
rc=0
wait "$runner" || rc=$?
expect_eq "node failure: run exits 1" 1 "$rc"
run=$(latest_run)
expect_json "$run/run.json" "j['state']" failed "node failure: state"
expect_json "$run/run.json" "j['reason'].split(';')[0]" "job $(run_json "$run" "r['job_ids'][0]") NODE_FAIL with exit code 0:15, reason NodeDown" \
    "node failure: the scheduler's word"
expect_json "$run/run.json" "'node node2 failed' in j['reason']" True "node failure: node2 named"
expect_json "$run/run.json" "j.get('scheduler', {}).get('restarts', 0)" 0 "node failure: not requeued"
no_partial "$run" "node failure"
expect_status 0 "start brings node2 back" -- bash "$cluster" start
launch_ready && pass || fail "node2 takes no step launch after start"

# 2e. The same failure under `run --requeue`: Slurm requeues the job when node2 goes down
#     (src/slurmctld/job_mgr.c:4309-4311, kill_running_job_by_node_name, in 22.05.8), holds it
#     cred_expire + 1 s (cluster.sh), runs it again once `start` brought node2 back, and it
#     completes: run.json counts the restart, the bundle verifies, and sacct from slurmdbd has
#     both records. The first attempt waits to be killed; the second runs train.py.
cat >"$card_dir/requeue_once.py" <<'EOF'
"""Attempt 1 of a job waits to be killed (node2 fails under it); a requeued attempt is train.py."""
import os
import sys
import time

if int(os.environ.get("SLURM_RESTART_COUNT", "0")) == 0:
    print(f"rank {os.environ.get('SLURM_PROCID')}: attempt 1, waiting", flush=True)
    time.sleep(300)
    sys.exit(1)
script = os.environ["CCL_REQUEUE_TRAIN"]
os.execv(sys.executable, [sys.executable, script] + sys.argv[1:])
EOF
t0=$SECONDS
CCL_REQUEUE_TRAIN="$card_dir/train.py" "$CCL_HARNESS" run "$card" --requeue --set launch.script=requeue_once.py --results "$results" \
    >"$SCRATCH/requeue.out" 2>&1 &
runner=$!
wait_for "$SCRATCH/requeue.out" ": RUNNING" 60 && pass || fail "requeue: the job never ran: $(cat "$SCRATCH/requeue.out")"
wait_tasks ": attempt 1, waiting" 4 60 && pass || fail "requeue: the 4 tasks never started: $(cat "$(latest_run)"/rendered/logs/* 2>&1)"
kill -KILL "$(cat "$state_dir/run/slurmd-node2.pid")"
wait_for "$SCRATCH/requeue.out" ": requeued (restart 1)" 90 && pass || fail "requeue: not requeued: $(cat "$SCRATCH/requeue.out")"
# The requeued job is held while node2 comes back: released at once, it could start before the
# new slurmd takes launches and fail on node2 with "Communication connection failure" (seen
# under load), which is the cluster's start-up and not what this case tests.
requeued=$(sed -n 's/.*job \([0-9]*\): requeued (restart 1).*/\1/p' "$SCRATCH/requeue.out" | head -1)
expect_status 0 "hold the requeued job" -- scontrol hold "$requeued"
expect_status 0 "start brings node2 back under the requeued job" -- bash "$cluster" start
launch_ready && pass || fail "requeue: node2 takes no step launch after start"
expect_status 0 "release the requeued job" -- scontrol release "$requeued"
rc=0
wait "$runner" || rc=$?
expect_eq "requeue: run exits 0" 0 "$rc"
OUT=$(cat "$SCRATCH/requeue.out")
expect_output "requeue: completed" "COMPLETED with exit code 0:0"
run=$(latest_run)
job=$(run_json "$run" "r['job_ids'][0]")
expect_output "requeue: said" "job $job: requeued (restart 1)"
expect_json "$run/run.json" "j['state'], j['scheduler']['restarts'], j['scheduler']['nodes']" "('completed', 1, 'node[1-2]')" \
    "requeue: run.json"
expect_json "$run/run.json" "[t['state'] for t in j['transitions']]" "['rendered', 'submitted', 'running', 'completed']" \
    "requeue: transitions"
expect_status 0 "requeue: the bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
expect_output "requeue: 4 traces" "4 traces"
expect_eq "requeue: sacct has the failed attempt and the completed one" "NODE_FAIL COMPLETED" \
    "$(sacct -n -X -D -j "$job" -o State -P | tr '\n' ' ' | sed 's/ $//')"
no_partial "$run" "requeue"
echo "slurm_multi_run: the requeue case took $((SECONDS - t0)) s"

# 2d. node2 drained before submission: the job waits, the harness says why, and SIGTERM (as
#     Ctrl-C) cancels it: the run is cancelled and nothing is left in the queue.
expect_status 0 "drain node2" -- scontrol update nodename=node2 state=drain reason="slurm_multi_run maintenance"
"$CCL_HARNESS" run "$card" --results "$results" >"$SCRATCH/drained.out" 2>&1 &
runner=$!
# The scheduler's first reason is ReqNodeNotAvail,_UnavailableNodes:node2 or, when its main loop
# gets there first, "Nodes_required_for_job_are_DOWN,_DRAINED..." (job_scheduler.c:1747): with
# either, the harness names node2 and the admin's reason.
wait_for "$SCRATCH/drained.out" "pending: " 30 && pass || fail "drained: no pending reason said: $(cat "$SCRATCH/drained.out")"
wait_for "$SCRATCH/drained.out" "(node2 drained: slurm_multi_run maintenance)" 10
OUT=$(cat "$SCRATCH/drained.out")
expect_output "drained: the admin's reason beside the scheduler's" "(node2 drained: slurm_multi_run maintenance)"
grep -qE "pending: (ReqNodeNotAvail,_UnavailableNodes:node2|Nodes_required_for_job_are_DOWN)" <<<"$OUT" && pass ||
    fail "drained: the scheduler's reason: $OUT"
kill -TERM "$runner"
rc=0
wait "$runner" || rc=$?
expect_eq "drained: interrupted exits 130" 130 "$rc"
run=$(latest_run)
expect_json "$run/run.json" "j['state'], j['scheduler']['pending_reason'] != ''" "('cancelled', True)" "drained: cancelled, reason kept"
expect_eq "drained: nothing left queued" "" "$(squeue -h -o %i)"
no_partial "$run" "drained"
expect_status 0 "resume node2" -- scontrol update nodename=node2 state=resume

expect_status 0 "stop" -- bash "$cluster" stop
finish
