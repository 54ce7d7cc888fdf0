#!/bin/bash
# The multi-host test cluster (clusters/slurm-multi): nodes in their own network and UTS
# namespaces, TCP between them, accounting from slurmdbd over MariaDB that outlives a slurmctld
# restart, and a stop/start that cleans up after itself and after a crash. Needs root and
# network namespaces; skipped (125) without them.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-multi/cluster.sh

require_root_netns slurm_multi

trap 'bash "$cluster" stop >/dev/null 2>&1 || true' EXIT
eval "$(bash "$cluster" env)"
state_dir=$(dirname "$SLURM_CONF")

ours() { ip netns list | awk '$1 ~ /^cclm-node[0-9]+$/ { print $1 }'; }
# Our links: the bridge and the host ends of the node pairs.
our_links() { ip -o link show | awk -F': ' '$2 ~ /^(cclmbr0|cclm-v[0-9]+)(@|$)/ { print $2 }'; }

# timed CMD...: runs CMD, says how long it took (the README's figures come from here).
timed() {
    local t0=${EPOCHREALTIME/./} rc=0
    "$@" || rc=$?
    echo "$* took $(((${EPOCHREALTIME/./} - t0) / 1000)) ms (exit $rc)" >>"$SCRATCH/timings.txt"
    return "$rc"
}

# sacct_rows JOB: JobID|State|ExitCode|Elapsed|MaxRSS|NodeList, once slurmdbd has the job's end
# (slurmctld sends it asynchronously, so poll up to 20 s).
sacct_rows() {
    local i rows
    for ((i = 0; i < 100; i++)); do
        rows=$(sacct -n -j "$1" --format=JobID,State,ExitCode,Elapsed,MaxRSS,NodeList -P 2>/dev/null || true)
        if grep -q "^$1|COMPLETED|" <<<"$rows" && grep -q "^$1\.0|COMPLETED|" <<<"$rows"; then
            printf '%s\n' "$rows"
            return 0
        fi
        sleep 0.2
    done
    printf '%s\n' "$rows"
    return 1
}

# 1. Start from whatever an earlier run left: stop first, then a timed start.
bash "$cluster" stop >/dev/null 2>&1 || true
expect_status 0 "start" -- timed bash "$cluster" start
expect_status 0 "status when up" -- bash "$cluster" status
expect_output "two nodes idle" "node2 regular* idle"
expect_status 0 "start again is a no-op" -- bash "$cluster" start
expect_output "start again" "already up"
expect_eq "namespaces" "cclm-node1 cclm-node2" "$(ours | sort | tr '\n' ' ' | sed 's/ $//')"

# 2. One task per node: each sees its own hostname, and node1 resolves to node1's address.
expect_status 0 "srun -N2 -n2 hostname" -- srun -N2 -n2 -t 1 hostname
expect_eq "two distinct hostnames" "node1 node2" "$(sort -u <<<"$OUT" | tr '\n' ' ' | sed 's/ $//')"
expect_status 0 "names inside a job" -- srun -N2 -n2 -t 1 bash -c \
    'echo "$(hostname) $(getent hosts node1 | cut -d" " -f1) $(ip -4 -o addr show eth0 | awk "{print \$4}") $(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"'
expect_output "node1 resolves inside a job" "node1 10.77.0.11 10.77.0.11/24 node1"
expect_output "node2 has its own address" "node2 10.77.0.11 10.77.0.12/24 node1"

# 3. A 2-node batch job: the rank on node2 connects over TCP to a listener on node1's address,
#    found as the Perlmutter template finds its rendezvous host (the job's first node).
cat >"$SCRATCH/tcp.sbatch" <<'EOF'
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=1 -t 2
set -euo pipefail
mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
export MASTER_ADDR=${hosts[0]} MASTER_PORT=$((29500 + SLURM_JOB_ID % 2000))
srun /usr/bin/python3 -c '
import os, socket, time
rank, host = int(os.environ["SLURM_PROCID"]), socket.gethostname()
addr, port = socket.gethostbyname(os.environ["MASTER_ADDR"]), int(os.environ["MASTER_PORT"])
# Memory touched for long enough that jobacct_gather samples it (MaxRSS).
ballast = bytearray(64 << 20)
ballast[::4096] = b"x" * len(ballast[::4096])
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    s.settimeout(30)
    c, peer = s.accept()
    msg = c.recv(100).decode()
    c.sendall(host.encode())
    print(f"rank0 {host} heard [{msg}] from {peer[0]}", flush=True)
else:
    for _ in range(300):
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            time.sleep(0.1)
    c.sendall(host.encode())
    print(f"rank1 {host} heard [{c.recv(100).decode()}] from {addr}", flush=True)
time.sleep(3)
'
EOF
expect_status 0 "the cross-node TCP job" -- sbatch --parsable --wait -o "$SCRATCH/tcp.out" "$SCRATCH/tcp.sbatch"
job=${OUT##*$'\n'}
OUT=$(cat "$SCRATCH/tcp.out")
expect_output "node1 heard node2" "rank0 node1 heard [node2] from 10.77.0.12"
expect_output "node2 heard node1" "rank1 node2 heard [node1] from 10.77.0.11"

# 3b. torchrun's c10d rendezvous on the first node, as the Perlmutter TorchTitan template does:
#     2 nodes x 2 ranks over gloo. Debian's torchrun needs tests/doubles/debian-torchrun (it says why).
cat >"$SCRATCH/allreduce.py" <<'EOF'
import os, socket, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
# One write(2) per line: two ranks of a node share torchrun's stdout, and print() may split a
# line's text from its newline.
os.write(1, f"rank {dist.get_rank()}/{dist.get_world_size()} on {socket.gethostname()} sum {int(t.item())}\n".encode())
EOF
cat >"$SCRATCH/rdzv.sbatch" <<'EOF'
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=1 -t 3
set -euo pipefail
mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
srun torchrun --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d \
    --rdzv_endpoint="${hosts[0]}:$((29500 + SLURM_JOB_ID % 2000))" --rdzv_id="$SLURM_JOB_ID" \
    "$PWD/allreduce.py"
EOF
expect_status 0 "torchrun across the nodes" -- env PYTHONPATH="$CCL_SOURCE_DIR/tests/doubles/debian-torchrun" \
    sbatch --wait -D "$SCRATCH" -o "$SCRATCH/rdzv.out" "$SCRATCH/rdzv.sbatch"
OUT=$(grep '^rank ' "$SCRATCH/rdzv.out" | sort || true)
expect_eq "4 ranks on 2 hosts, one sum" "rank 0/4 on node1 sum 10
rank 1/4 on node1 sum 10
rank 2/4 on node2 sum 10
rank 3/4 on node2 sum 10" "$OUT"

# 4. Accounting from slurmdbd: the job, its batch step and its srun step, with real fields.
check_accounting() { # check_accounting WHEN
    local rows
    if rows=$(sacct_rows "$job"); then pass; else fail "$1: sacct never showed job $job COMPLETED: [$rows]"; fi
    OUT=$rows
    expect_output "$1: the job spans both nodes" "$job|COMPLETED|0:0|"
    expect_output "$1: the batch step on node1" "$job.batch|COMPLETED|0:0|"
    grep -q "^$job|COMPLETED|0:0|00:00:[0-9][0-9]||node\[1-2\]\$" <<<"$rows" && pass || fail "$1: job row [$rows]"
    grep -q "^$job\.batch|.*|node1\$" <<<"$rows" && pass || fail "$1: batch step row [$rows]"
    grep -Eq "^$job\.0\|COMPLETED\|0:0\|00:00:0[3-9]\|[1-9][0-9]*K\|node\[1-2\]\$" <<<"$rows" && pass ||
        fail "$1: step 0 lacks Elapsed, MaxRSS or NodeList [$rows]"
}
check_accounting "after the job"

# 5. The record lives in slurmdbd, so a slurmctld restart (TERM, then start) keeps it; so does
#    a whole stop/start (MariaDB's datadir is kept).
ctld=$(cat "$state_dir/run/slurmctld.pid")
kill -TERM "$ctld"
for ((i = 0; i < 100; i++)); do [ -d "/proc/$ctld" ] || break; sleep 0.1; done
expect_status 0 "start after slurmctld stopped" -- bash "$cluster" start
check_accounting "after a slurmctld restart"

# 6. stop leaves none of ours: namespaces, links, daemons.
expect_status 0 "stop" -- timed bash "$cluster" stop
expect_eq "no namespaces after stop" "" "$(ours)"
expect_eq "no links after stop" "" "$(our_links)"
expect_status 3 "status when down" -- bash "$cluster" status
expect_status 0 "stop again is a no-op" -- bash "$cluster" stop
expect_output "stop again" "already stopped"
expect_status 0 "start after stop" -- timed bash "$cluster" start
check_accounting "after stop and start"

# 7. A slurmd killed -9 under a running job (its slurmstepd lingers in the namespace): stop and
#    start still work and leave two working nodes.
expect_status 0 "a long job" -- sbatch --parsable -N2 -t 5 -o /dev/null --wrap 'srun sleep 300'
long=${OUT##*$'\n'}
for ((i = 0; i < 100; i++)); do
    [ "$(squeue -h -j "$long" -o %T 2>/dev/null)" = RUNNING ] && break
    sleep 0.2
done
kill -KILL "$(cat "$state_dir/run/slurmd-node2.pid")"
expect_status 0 "stop after slurmd was killed" -- timed bash "$cluster" stop
expect_eq "no namespaces after the crash's stop" "" "$(ours)"
expect_status 0 "start after that" -- timed bash "$cluster" start
expect_status 0 "both nodes work again" -- srun -N2 -n2 -t 1 hostname
expect_eq "both hostnames again" "node1 node2" "$(sort -u <<<"$OUT" | tr '\n' ' ' | sed 's/ $//')"

# 8. Everything killed -9 (a crash: stale pid files, sockets and namespaces), then start alone.
for pid_file in run/slurmd-node1.pid run/slurmd-node2.pid run/slurmctld.pid run/slurmdbd.pid mysql-run/mariadbd.pid munge/munged.pid; do
    kill -KILL "$(cat "$state_dir/$pid_file")" 2>/dev/null || true
done
sleep 0.5
expect_status 0 "start after a crash" -- timed bash "$cluster" start
expect_status 0 "nodes work after the crash" -- srun -N2 -n2 -t 1 hostname
expect_eq "hostnames after the crash" "node1 node2" "$(sort -u <<<"$OUT" | tr '\n' ' ' | sed 's/ $//')"
check_accounting "after the crash"

expect_status 0 "final stop" -- bash "$cluster" stop
expect_eq "no namespaces at the end" "" "$(ours)"
expect_eq "no links at the end" "" "$(our_links)"
sed 's/^/slurm_multi: /' "$SCRATCH/timings.txt" >&2
finish
