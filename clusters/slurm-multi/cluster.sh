#!/usr/bin/env bash
# slurm-multi: a multi-host Slurm 22.05 test cluster on one machine, with real accounting.
# slurmctld, slurmdbd, MariaDB and munged run in the root namespaces; each node (2 by default,
# CCL_SLURM_MULTI_NODES=2..4) is a slurmd in its own network namespace (veth into the bridge
# cclmbr0, address 10.77.0.1N), its own UTS namespace (hostname nodeN) and its own mount
# namespace with node-local /tmp, /var/tmp and /dev/shm (everything else, the state directory
# included, is shared, as Lustre is), shaped like a Perlmutter GPU node (128 CPUs,
# Feature=gpu,a100,hbm80g, 4 GPUs on fake device files).
#
#   cluster.sh start    start everything; wait until every node is idle (idempotent)
#   cluster.sh stop     cancel jobs, stop the daemons (waits for them), delete namespaces, links
#                       and the nodes' local storage
#   cluster.sh status   daemons, namespaces and sinfo; exit 0 when up, 3 when down
#   cluster.sh env      print `export SLURM_CONF=...`; use as: eval "$(cluster.sh env)"
#
# All state lives under ${CCL_SLURM_MULTI_DIR:-/tmp/ccl-harness-slurm-multi}. Must run as root.
# It can run beside clusters/slurm-local: its own ports, munge socket and state directory.
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REALMEM_OVERRIDE=${CCL_SLURM_MULTI_REALMEM:-}
# shellcheck source=clusters/lib/slurm_daemons.sh
source "$SCRIPT_DIR/../lib/slurm_daemons.sh"

STATE_DIR=${CCL_SLURM_MULTI_DIR:-/tmp/ccl-harness-slurm-multi}
NODES=${CCL_SLURM_MULTI_NODES:-2}
CTLD_PORT=${CCL_SLURM_MULTI_CTLD_PORT:-6827}
SLURMD_PORT=${CCL_SLURM_MULTI_SLURMD_PORT:-6828}
DBD_PORT=${CCL_SLURM_MULTI_DBD_PORT:-6829}
START_TIMEOUT=${CCL_SLURM_MULTI_START_TIMEOUT:-90}
STOP_TIMEOUT=${CCL_SLURM_MULTI_STOP_TIMEOUT:-30}
CLUSTER=ccl-slurm-multi
CTLD_NAME=cclm-ctl

# Network: one bridge in the root namespace holding the controller's address; node N is
# 10.77.0.1N in namespace cclm-nodeN, its end of the pair is eth0 there and cclm-vN here.
BRIDGE=cclmbr0
SUBNET_PREFIX=10.77.0
CTLD_ADDR=$SUBNET_PREFIX.1
NS_PREFIX=cclm-node
VETH_PREFIX=cclm-v

CONF=$STATE_DIR/slurm.conf
GRES_CONF=$STATE_DIR/gres.conf
DBD_CONF=$STATE_DIR/slurmdbd.conf
HOSTS=$STATE_DIR/hosts
DEV_DIR=$STATE_DIR/dev
LOG_DIR=$STATE_DIR/log
RUN_DIR=$STATE_DIR/run
CTLD_STATE=$STATE_DIR/spool/slurmctld
CTLD_PID=$RUN_DIR/slurmctld.pid
CTLD_LOG=$LOG_DIR/slurmctld.log
DBD_PID=$RUN_DIR/slurmdbd.pid
DBD_LOG=$LOG_DIR/slurmdbd.log
MUNGE_DIR=$STATE_DIR/munge
MUNGE_KEY=$MUNGE_DIR/munge.key
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
MUNGE_PID=$MUNGE_DIR/munged.pid
MUNGE_LOG=$MUNGE_DIR/munged.log
MUNGE_SEED=$MUNGE_DIR/munged.seed
MUNGE_OUT=$LOG_DIR/munged.out
DB_DATA=$STATE_DIR/mysql
DB_RUN=$STATE_DIR/mysql-run
DB_SOCKET=$DB_RUN/mysqld.sock
DB_PID=$DB_RUN/mariadbd.pid
DB_LOG=$LOG_DIR/mariadbd.log
DB_PASS_FILE=$STATE_DIR/slurmdbd.pass
DB_NAME=slurm_acct_db
DB_USER=slurm
# Node-local storage: node N's /tmp and /var/tmp are $NODES_DIR/nodeN/{tmp,var-tmp}, bind-mounted
# in its mount namespace (its /dev/shm is a tmpfs of its own, gone with the namespace).
NODES_DIR=$STATE_DIR/nodes

export SLURM_CONF=$CONF
# MariaDB Connector/C falls back to $MYSQL_UNIX_PORT when the caller passes no socket, and
# Slurm's accounting_storage/mysql passes none (mysql_real_connect(..., port, NULL, 0) in
# src/plugins/accounting_storage/mysql/mysql_common.c): this is how slurmdbd finds our socket.
export MYSQL_UNIX_PORT=$DB_SOCKET

log() { printf 'slurm-multi: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

usage() {
    cat >&2 <<EOF
usage: $(basename "$0") start|stop|status|env
  state directory: $STATE_DIR (set CCL_SLURM_MULTI_DIR to change)
  nodes: $NODES (set CCL_SLURM_MULTI_NODES, 2..4)
EOF
}

need_root() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (namespaces, daemons as root/munge/mysql)"
}

check_nodes() {
    [[ $NODES =~ ^[2-4]$ ]] || die "CCL_SLURM_MULTI_NODES must be 2, 3 or 4 (got '$NODES')"
}

node_names() {
    local i
    for ((i = 1; i <= NODES; i++)); do printf 'node%d\n' "$i"; done
}

# Install the packages on a fresh Debian 12 machine; services are not started by apt.
ensure_packages() {
    local missing=0 cmd
    for cmd in slurmctld slurmd slurmdbd sinfo sacct sacctmgr munged mungekey runuser mknod \
        mariadbd mariadb-install-db mariadb ip unshare nsenter; do
        command -v "$cmd" >/dev/null 2>&1 || missing=1
    done
    ((missing)) || return 0
    log "installing slurmctld slurmd slurmdbd slurm-client munge mariadb-server iproute2"
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        made_policy=1
    fi
    local rc=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                slurmctld slurmd slurmdbd slurm-client munge mariadb-server iproute2 util-linux
    } || rc=$?
    ((made_policy)) && rm -f "$policy"
    ((rc == 0)) || die "apt-get install failed (rc=$rc)"
}



munged_pid() { daemon_pid munged "$MUNGE_PID"; }
mariadbd_pid() { daemon_pid mariadbd "$DB_PID"; }
slurmdbd_pid() { daemon_pid slurmdbd "$DBD_PID"; }
slurmctld_pid() { daemon_pid slurmctld "$CTLD_PID"; }
# SlurmdPidFile=.../slurmd-%n.pid: slurmd expands %n to its -N name (slurm.conf(5)).
slurmd_pid() { daemon_pid slurmd "$RUN_DIR/slurmd-$1.pid"; }

all_up() {
    munged_pid >/dev/null && mariadbd_pid >/dev/null && slurmdbd_pid >/dev/null &&
        slurmctld_pid >/dev/null || return 1
    local node
    for node in $(node_names); do
        slurmd_pid "$node" >/dev/null || return 1
    done
}

# Write $1 from stdin only when the content changes (keeps mtimes stable across starts).
write_if_changed() {
    local dest=$1 mode=${2:-0644} tmp
    tmp=$(mktemp "$dest.XXXXXX")
    cat >"$tmp"
    if [[ -f $dest ]] && cmp -s "$tmp" "$dest"; then
        rm -f "$tmp"
        chmod "$mode" "$dest"
    else
        chmod "$mode" "$tmp"
        mv -f "$tmp" "$dest"
    fi
}


db_password() {
    if [[ ! -s $DB_PASS_FILE ]]; then
        (umask 077 && tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32 >"$DB_PASS_FILE")
    fi
    chmod 0600 "$DB_PASS_FILE"
    cat "$DB_PASS_FILE"
}

write_configs() {
    local mem node i nodelist
    mem=$(real_memory_mb)
    nodelist=node[1-$NODES]
    {
        cat <<EOF
# Generated by clusters/slurm-multi/cluster.sh; rewritten on every start.
ClusterName=$CLUSTER
SlurmctldHost=$CTLD_NAME($CTLD_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire is also how long a requeued job waits before it may start again: a job requeued
# after a node failure gets BeginTime = now + cred_expire + 1 (src/slurmctld/job_mgr.c:16102-16109,
# batch_requeue_fini, in 22.05.8); the default 120 s (src/common/slurm_cred.c:84, minimum 5 at
# :284-288) would make every requeue test wait two minutes. 20 s still covers a step launch on
# a loaded 2-vCPU machine.
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=20
StateSaveLocation=$CTLD_STATE
# %n is slurmd's -N name (slurm.conf(5)): every node keeps its own spool, pid file and log.
SlurmdSpoolDir=$STATE_DIR/spool/slurmd-%n
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$RUN_DIR/slurmd-%n.pid
SlurmctldLogFile=$CTLD_LOG
SlurmdLogFile=$LOG_DIR/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Real accounting, as sites run it: slurmdbd over MariaDB, per-step usage sampled from /proc.
# The host is an address, not a name: sacct inside a job runs in a node's namespace, where
# only the bridge reaches this slurmdbd.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$CTLD_ADDR
AccountingStoragePort=$DBD_PORT
# Connections to slurmdbd take their munge socket from here, not from AuthInfo (slurm.conf(5),
# AccountingStoragePass: "the pathname of the named socket used by MUNGE").
AccountingStoragePass=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
# The first sample is taken one period after a task starts and the last before it ends, so a
# step shorter than the period has no MaxRSS; test jobs last seconds (slurm.conf(5)).
JobAcctGatherFrequency=task=1
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
EnforcePartLimits=ALL
KillWait=5
InactiveLimit=0
Waittime=0
MessageTimeout=10
SlurmctldTimeout=120
# A node whose slurmd died is marked DOWN after about this long, not the default 300 s.
SlurmdTimeout=30
# Perlmutter GPU nodes: 1x64-core EPYC with SMT, 4 GPUs (fake device files), gpu/a100/hbm80g.
EOF
        for ((i = 1; i <= NODES; i++)); do
            node=node$i
            printf 'NodeName=%s NodeAddr=%s.1%d NodeHostname=%s CPUs=128 Boards=1 SocketsPerBoard=1 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=%s Feature=gpu,a100,hbm80g Gres=gpu:a100:4 State=UNKNOWN\n' \
                "$node" "$SUBNET_PREFIX" "$i" "$node" "$mem"
        done
        cat <<EOF
PartitionName=regular Nodes=$nodelist Default=YES MaxTime=2-00:00:00 DefaultTime=00:10:00 State=UP
PartitionName=debug Nodes=$nodelist Default=NO MaxTime=00:30:00 DefaultTime=00:10:00 State=UP
EOF
    } | write_if_changed "$CONF"
    write_if_changed "$GRES_CONF" <<EOF
# Generated by clusters/slurm-multi/cluster.sh. Character devices made with mknod (c 195 N);
# every node's slurmd sees the same files, as each sees its own /dev on a real machine.
NodeName=$nodelist Name=gpu Type=a100 File=$DEV_DIR/nvidia[0-3]
EOF
    # slurmdbd refuses a slurmdbd.conf readable by others, since it holds the storage password
    # (slurmdbd.conf(5): "should be protected ... owned by SlurmUser ... 600").
    write_if_changed "$DBD_CONF" 0600 <<EOF
# Generated by clusters/slurm-multi/cluster.sh; rewritten on every start.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
# slurmdbd.conf(5): the name "hostname -s" returns; slurmdbd 22.05 also takes localhost.
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DBD_PID
LogFile=$DBD_LOG
DebugLevel=info
StorageType=accounting_storage/mysql
# localhost means the Unix socket to MariaDB (\$MYSQL_UNIX_PORT, set by cluster.sh): no TCP.
StorageHost=localhost
StorageUser=$DB_USER
StoragePass=$(db_password)
StorageLoc=$DB_NAME
EOF
    chown root:root "$DBD_CONF"
    {
        printf '127.0.0.1\tlocalhost\n%s\t%s\n' "$CTLD_ADDR" "$CTLD_NAME"
        for ((i = 1; i <= 4; i++)); do
            printf '%s.1%d\tnode%d\n' "$SUBNET_PREFIX" "$i" "$i"
        done
    } | write_if_changed "$HOSTS"
}


prepare_state() {
    mkdir -p "$STATE_DIR"
    chmod 0755 "$STATE_DIR"
    mkdir -p "$LOG_DIR" "$RUN_DIR" "$CTLD_STATE"
    chmod 0755 "$LOG_DIR" "$RUN_DIR"
    chmod 0700 "$CTLD_STATE"
    local node
    for node in $(node_names); do
        mkdir -p "$STATE_DIR/spool/slurmd-$node"
        chmod 0700 "$STATE_DIR/spool/slurmd-$node"
    done
    mkdir -p "$NODES_DIR"
    chmod 0755 "$NODES_DIR"
    make_devices
    write_configs
}




start_munged() {
    munged_pid >/dev/null && return 0
    local force=()
    # A socket left by a munged that died: no munged of ours runs, so take it over.
    [[ -e $MUNGE_SOCKET ]] && force=(--force)
    run_detached -w runuser -u munge -- munged "${force[@]}" \
        --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" --pid-file="$MUNGE_PID" \
        --log-file="$MUNGE_LOG" --seed-file="$MUNGE_SEED" \
        </dev/null >>"$MUNGE_OUT" 2>&1 || die "munged failed to start; see $MUNGE_OUT and $MUNGE_LOG"
    local i
    for ((i = 0; i < 50; i++)); do
        munge_works && return 0
        sleep 0.1
    done
    die "munged does not answer on $MUNGE_SOCKET; see $MUNGE_LOG"
}

db_sql() {
    mariadb --no-defaults --socket="$DB_SOCKET" -u root --batch --skip-column-names "$@"
}

db_works() { db_sql -e 'SELECT 1' >/dev/null 2>&1; }

start_mariadb() {
    id mysql >/dev/null 2>&1 || die "no mysql user (is mariadb-server installed?)"
    mkdir -p "$DB_RUN"
    chown mysql:mysql "$DB_RUN"
    chmod 0755 "$DB_RUN"
    if ! mariadbd_pid >/dev/null; then
        if [[ ! -d $DB_DATA/mysql ]]; then
            log "initialising MariaDB in $DB_DATA"
            rm -rf "$DB_DATA"
            # root@localhost authenticates by unix_socket only (the default since 10.4,
            # mariadb-install-db(1)): no password to keep for the administrator.
            mariadb-install-db --no-defaults --datadir="$DB_DATA" --user=mysql \
                --auth-root-authentication-method=socket --skip-test-db \
                >>"$LOG_DIR/mariadb-install-db.log" 2>&1 ||
                die "mariadb-install-db failed; see $LOG_DIR/mariadb-install-db.log"
        fi
        # A socket left by a mariadbd killed -9 blocks the new one ("Can't start server:
        # Bind on unix socket: Address already in use"); no mariadbd of ours runs now.
        rm -f "$DB_SOCKET" "$DB_SOCKET.lock"
        # innodb_lock_wait_timeout=900 and a larger buffer pool: the values SchedMD's
        # accounting guide asks for (slurmdbd warns at startup otherwise).
        run_detached -f mariadbd --no-defaults --user=mysql --datadir="$DB_DATA" \
            --socket="$DB_SOCKET" --pid-file="$DB_PID" --log-error="$DB_LOG" \
            --skip-networking --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900 \
            --innodb-log-file-size=64M </dev/null >>"$DB_LOG" 2>&1
    fi
    local i
    for ((i = 0; i < 300; i++)); do
        db_works && break
        sleep 0.1
    done
    db_works || die "MariaDB does not answer on $DB_SOCKET; see $DB_LOG"
    # Idempotent; ALTER keeps the password in step with slurmdbd.conf if the file was replaced.
    local pass
    pass=$(db_password)
    db_sql <<EOF || die "cannot create $DB_NAME and its user; see $DB_LOG"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$pass';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$pass';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
EOF
}

start_slurmdbd() {
    if ! slurmdbd_pid >/dev/null; then
        # slurmdbd has no -f: it reads slurmdbd.conf beside $SLURM_CONF (get_extra_conf_path()
        # in src/common/read_config.c), which is where $DBD_CONF is.
        run_detached -w slurmdbd </dev/null >>"$DBD_LOG" 2>&1 ||
            die "slurmdbd failed to start; see $DBD_LOG"
    fi
    local deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        timeout 10 sacctmgr -n -P list cluster format=cluster >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "slurmdbd does not answer on port $DBD_PORT; see $DBD_LOG"
}

# The cluster, and the account and QOS a Perlmutter job script names (-A m4999, -q regular), so
# that those scripts run here as they do there. sacctmgr -i: no confirmation prompt.
register_accounting() {
    if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
        sacctmgr -i add cluster "$CLUSTER" >/dev/null || die "sacctmgr add cluster failed"
    fi
    local qos
    for qos in regular debug; do
        if ! sacctmgr -n -P list qos format=name | grep -qx "$qos"; then
            sacctmgr -i add qos "$qos" >/dev/null || die "sacctmgr add qos $qos failed"
        fi
    done
    if ! sacctmgr -n -P list account format=account | grep -qx m4999; then
        sacctmgr -i add account m4999 cluster="$CLUSTER" Description=ccl-harness \
            Organization=ccl-harness >/dev/null || die "sacctmgr add account failed"
    fi
    if ! sacctmgr -n -P list assoc user=root account=m4999 cluster="$CLUSTER" format=user | grep -qx root; then
        sacctmgr -i add user root account=m4999 cluster="$CLUSTER" defaultaccount=m4999 \
            qos=normal,regular,debug >/dev/null || die "sacctmgr add user failed"
    fi
}

setup_bridge() {
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link add "$BRIDGE" type bridge
    fi
    ip addr replace "$CTLD_ADDR/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
}

# Kill whatever still runs in namespace $1 once its slurmd is gone (a slurmstepd whose slurmd was
# killed -9, and its tasks): nothing is left to end them in order, so TERM, then KILL after 2 s
# (a slurmstepd outlived TERM in the tests of tests/e2e/slurm_multi.sh).
kill_netns_pids() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] || return 0
    # shellcheck disable=SC2086 # one pid per word
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 10; i++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [[ -n $pids ]] || return 0
        local alive=() pid
        for pid in $pids; do pid_alive "$pid" && alive+=("$pid"); done
        ((${#alive[@]})) || return 0
        sleep 0.2
    done
    log "killing ${pids//$'\n'/ } in $ns after 2 s"
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
}

# Remove node namespace $1 and its veth pair; deleting one end of a pair deletes both.
delete_node_net() {
    local ns=$1 n=${1#"$NS_PREFIX"}
    kill_netns_pids "$ns"
    ip link del "$VETH_PREFIX$n" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
}

# A fresh namespace for node $1 (1..4): stale ones (a crash, a slurmd killed -9) are replaced
# whole, so that no half-configured link survives.
setup_node_net() {
    local n=$1 ns=$NS_PREFIX$1 veth=$VETH_PREFIX$1
    delete_node_net "$ns"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$BRIDGE" up
    ip -n "$ns" addr add "$SUBNET_PREFIX.1$n/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
}

start_slurmctld() {
    slurmctld_pid >/dev/null && return 0
    # slurmctld must run on the host that SlurmctldHost names (slurm.conf(5)); rather than
    # naming the controller localhost, it gets a UTS namespace named cclm-ctl. The network stays
    # the root namespace's.
    run_detached -w unshare --uts -- /bin/sh -c 'hostname "$1" && shift && exec "$@"' sh \
        "$CTLD_NAME" slurmctld -f "$CONF" </dev/null >>"$CTLD_LOG" 2>&1 ||
        die "slurmctld failed to start; see $CTLD_LOG"
}

# The node-local directories of node N (1..4), made on the first start and kept until stop, as
# a node's disk keeps its /tmp across a slurmd restart. Mode 1777, as /tmp is.
prepare_node_dirs() {
    local dir=$NODES_DIR/node$1 sub
    for sub in tmp var-tmp; do
        mkdir -p "$dir/$sub"
        chmod 1777 "$dir/$sub"
    done
}

# Run in node N's fresh mount namespace by /bin/sh (args: hosts file, node name, node directory,
# the shared paths joined by ':', then the command): /etc/hosts, then the node-local /tmp and
# /var/tmp (each the node's own directory, rbind-mounted), a /dev/shm of its own, the hostname,
# exec. A shared path under /tmp or /var/tmp is bind-mounted at its own path inside the node's
# directory first, so that the rbind carries it: the state directory (by default
# /tmp/ccl-harness-slurm-multi: slurmd, its munge socket), the checkout this script is in (its
# tests keep their run directories in its build tree, and CI may clone it under /tmp), and
# CCL_SLURM_MULTI_SHARED, as Perlmutter's $SCRATCH is shared by every node.
# shellcheck disable=SC2016 # expanded by the inner sh
NODE_MOUNTS='set -e
hosts=$1 node=$2 ndir=$3 shared=$4
shift 4
mount --bind "$hosts" /etc/hosts
for pair in /tmp:tmp /var/tmp:var-tmp; do
    target=${pair%%:*} src=$ndir/${pair#*:}
    rest=$shared
    while [ -n "$rest" ]; do
        path=${rest%%:*}
        case $rest in *:*) rest=${rest#*:} ;; *) rest= ;; esac
        case $path/ in
        "$target"/*)
            rel=${path#"$target"/}
            mkdir -p "$src/$rel"
            mount --bind "$path" "$src/$rel"
            ;;
        esac
    done
    mount --rbind "$src" "$target"
done
mount -t tmpfs -o nosuid,nodev,mode=1777 "shm-$node" /dev/shm
hostname "$node"
exec "$@"'

# slurmd for node N (1..4) in its namespaces: the node's network namespace, its own UTS
# namespace (hostname nodeN) and its own mount namespace (NODE_MOUNTS above), where the hosts
# file is bind-mounted over /etc/hosts so that jobs resolve nodeN and cclm-ctl without touching
# the machine's /etc, and /tmp, /var/tmp and /dev/shm are the node's own. Jobs (slurmstepd and
# its tasks) inherit the namespace, so a job's /tmp is its node's.
# nsenter, not `ip netns exec`: the latter remounts /sys for the namespace (ip-netns(8)), which
# hides /sys/fs/cgroup, and slurmd 22.05 refuses to start without it ("Unable to initialize
# cgroup plugin"). --propagation slave: mounts made here never reach the root namespace, and
# they end with the last process of the namespace (stop kills them all), so nothing is unmounted.
start_slurmd() {
    local n=$1 node=node$1 ns=$NS_PREFIX$1 shared path
    slurmd_pid "$node" >/dev/null && return 0
    setup_node_net "$n"
    prepare_node_dirs "$n"
    shared=$(realpath -m "$STATE_DIR"):$(realpath -m "$SCRIPT_DIR/../..")
    local extra=()
    IFS=: read -r -a extra <<<"${CCL_SLURM_MULTI_SHARED:-}"
    for path in "${extra[@]}"; do
        [[ -n $path ]] && shared+=:$(realpath -m "$path")
    done
    rm -f "$RUN_DIR/slurmd-$node.pid"
    run_detached -w nsenter --net="/run/netns/$ns" -- \
        unshare --uts --mount --propagation slave -- /bin/sh -c "$NODE_MOUNTS" sh \
        "$HOSTS" "$node" "$NODES_DIR/$node" "$shared" slurmd -f "$CONF" -N "$node" \
        </dev/null >>"$LOG_DIR/slurmd-$node.log" 2>&1 ||
        die "slurmd for $node failed to start; see $LOG_DIR/slurmd-$node.log"
}

node_states() {
    sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true
}

# True once the slurmd of node $1 started at or after epoch $2 has registered (after a restart
# slurmctld reports nodes idle from saved state before their slurmd registers).
slurmd_registered() {
    local node=$1 since=$2 started
    started=$(scontrol show node "$node" -o 2>/dev/null | grep -o 'SlurmdStartTime=[^ ]*' || true)
    started=${started#SlurmdStartTime=}
    [[ -n $started && $started != None ]] || return 1
    started=$(date -d "$started" +%s 2>/dev/null) || return 1
    ((started >= since))
}

# True when every node is usable; SINCE[nodeN], when set, is when its slurmd was (re)started.
declare -A SINCE=()
nodes_ready() {
    local states node state
    states=$(node_states)
    for node in $(node_names); do
        state=$(awk -v n="$node" '$1 == n { print $2; exit }' <<<"$states")
        [[ $state =~ ^(idle|mixed|allocated|completing)$ ]] || return 1
        slurmd_registered "$node" "${SINCE[$node]:-0}" || return 1
    done
}

show_logs() {
    local f
    for f in "$MUNGE_OUT" "$MUNGE_LOG" "$DB_LOG" "$DBD_LOG" "$CTLD_LOG" "$LOG_DIR"/slurmd-node*.log; do
        [[ -f $f ]] || continue
        printf '==> %s (last 30 lines) <==\n' "$f" >&2
        tail -n 30 "$f" >&2
    done
}

cmd_start() {
    need_root
    check_nodes
    # Nodes are only read by slurmctld at startup (slurm.conf(5): adding or removing nodes needs a
    # restart of the daemons); so a running cluster keeps its size until stop.
    local running
    if slurmctld_pid >/dev/null && [[ -f $CONF ]]; then
        running=$(grep -c '^NodeName=' "$CONF" || true)
        ((running == NODES)) ||
            die "the cluster runs with $running nodes; run stop first to change CCL_SLURM_MULTI_NODES to $NODES"
    fi
    if all_up && nodes_ready; then
        log "already up (SLURM_CONF=$CONF)"
        return 0
    fi
    ensure_packages
    local t0=$SECONDS t0_us=${EPOCHREALTIME/./}
    # Namespaces of nodes beyond NODES (an earlier start with more nodes) would hold addresses
    # and processes nobody stops.
    local ns
    for ns in $(our_namespaces); do
        ((${ns#"$NS_PREFIX"} > NODES)) && delete_node_net "$ns"
    done
    prepare_state
    prepare_munge
    start_munged
    # Before slurmdbd: clients reach it at the bridge's address (AccountingStorageHost).
    setup_bridge
    start_mariadb
    start_slurmdbd
    register_accounting
    start_slurmctld
    local n
    for ((n = 1; n <= NODES; n++)); do
        slurmd_pid "node$n" >/dev/null || SINCE[node$n]=$(date +%s)
        start_slurmd "$n"
    done
    while ((SECONDS - t0 < START_TIMEOUT)); do
        if nodes_ready; then
            local ms=$(((${EPOCHREALTIME/./} - t0_us) / 1000))
            log "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: $NODES nodes idle (SLURM_CONF=$CONF)"
            return 0
        fi
        # A daemon that exited will not come back by waiting.
        if ((SECONDS - t0 > 5)) && ! all_up; then
            break
        fi
        sleep 0.5
    done
    log "error: nodes not ready after $((SECONDS - t0)) s:"$'\n'"$(node_states)"
    show_logs
    exit 1
}

# Wait for the given pids to exit; KILL what is left after STOP_TIMEOUT seconds.
wait_pids() {
    local deadline=$((SECONDS + STOP_TIMEOUT)) pid alive
    while :; do
        alive=()
        for pid in "$@"; do
            pid_alive "$pid" && alive+=("$pid")
        done
        ((${#alive[@]} == 0)) && return 0
        if ((SECONDS >= deadline)); then
            log "killing ${alive[*]} after ${STOP_TIMEOUT} s"
            kill -KILL "${alive[@]}" 2>/dev/null || true
            sleep 0.5
            return 0
        fi
        sleep 0.2
    done
}

# Cancel every job; with $1 = 1 wait (10 s at most) until none runs. A node whose slurmd is
# gone never confirms, so its steps are ended with its namespace instead of waited for.
cancel_jobs() {
    local wait=$1 jobs
    jobs=$(squeue -h -o '%i' 2>/dev/null || true)
    [[ -n $jobs ]] || return 0
    log "cancelling jobs: $(tr '\n' ' ' <<<"$jobs")"
    # shellcheck disable=SC2086 # one job id per word
    scancel $jobs 2>/dev/null || true
    ((wait)) || return 0
    local i
    for ((i = 0; i < 50; i++)); do
        [[ -z $(squeue -h -t RUNNING,COMPLETING,CONFIGURING -o '%i' 2>/dev/null || true) ]] && return 0
        sleep 0.2
    done
}

# Every node namespace of ours, whatever NODES was when it was made.
our_namespaces() {
    ip netns list 2>/dev/null | awk -v p="$NS_PREFIX" '$1 ~ "^" p "[0-9]+$" { print $1 }'
}

# TERM $2... (pids of daemon $1), wait, KILL after STOP_TIMEOUT.
stop_pids() {
    local pids=()
    local pid
    for pid in "$@"; do [[ -n $pid ]] && pids+=("$pid"); done
    ((${#pids[@]})) || return 0
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait_pids "${pids[@]}"
}

# The nodes' local storage goes with them, as a node's /tmp does when it is rebooted. Their
# mounts lived only in the node namespaces, ended with their last process; one seen here (a
# namespace entered by hand and left holding it) is detached first, so that rm never crosses it.
remove_node_dirs() {
    [[ -d $NODES_DIR ]] || return 0
    local real mnt
    real=$(realpath -m "$NODES_DIR")
    while IFS= read -r mnt; do
        umount -l "$mnt" 2>/dev/null || true
    done < <(awk -v p="$real/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
    rm -rf --one-file-system "$NODES_DIR"
}

cmd_stop() {
    need_root
    local ctld dbd db munge_p node slurmds=() pid ns
    ctld=$(slurmctld_pid || true)
    dbd=$(slurmdbd_pid || true)
    db=$(mariadbd_pid || true)
    munge_p=$(munged_pid || true)
    for node in node1 node2 node3 node4; do
        pid=$(slurmd_pid "$node" || true)
        [[ -n $pid ]] && slurmds+=("$pid")
    done
    local leftovers
    leftovers=$(our_namespaces)
    if ip link show "$BRIDGE" >/dev/null 2>&1; then leftovers+=" $BRIDGE"; fi
    if [[ -z $ctld$dbd$db$munge_p${slurmds[*]}${leftovers// /} ]]; then
        remove_node_dirs
        log "already stopped"
        return 0
    fi
    local all_slurmds=1
    ((${#slurmds[@]} < $(our_namespaces | wc -l))) && all_slurmds=0
    [[ -n $ctld && -n $munge_p ]] && cancel_jobs "$all_slurmds"
    stop_pids "${slurmds[@]}"
    # What survived its slurmd (a slurmstepd after kill -9 of slurmd), then the links.
    for ns in $(our_namespaces); do
        delete_node_net "$ns"
    done
    local veth
    for veth in $(ip -o link show 2>/dev/null | awk -F': ' -v p="$VETH_PREFIX" '$2 ~ "^" p "[0-9]+@" { sub(/@.*/, "", $2); print $2 }'); do
        ip link del "$veth" 2>/dev/null || true
    done
    # slurmctld before slurmdbd, so that it can send what it still holds for accounting.
    stop_pids "$ctld"
    stop_pids "$dbd"
    stop_pids "$db"
    stop_pids "$munge_p"
    ip link del "$BRIDGE" 2>/dev/null || true
    rm -f "$CTLD_PID" "$DBD_PID" "$RUN_DIR"/slurmd-node*.pid
    remove_node_dirs
    log "stopped"
}

cmd_status() {
    check_nodes
    local up=0 name pid node ns
    for name in munged mariadbd slurmdbd slurmctld; do
        if pid=$("${name}_pid"); then
            printf '%-14s running (pid %s)\n' "$name:" "$pid"
        else
            printf '%-14s not running\n' "$name:"
            up=3
        fi
    done
    for node in $(node_names); do
        if pid=$(slurmd_pid "$node"); then
            printf '%-14s running (pid %s, netns %s)\n' "slurmd $node:" "$pid" "$NS_PREFIX${node#node}"
        else
            printf '%-14s not running\n' "slurmd $node:"
            up=3
        fi
    done
    printf 'namespaces: %s\n' "$(our_namespaces | tr '\n' ' ')"
    printf 'SLURM_CONF=%s\n' "$CONF"
    if ((up == 0)); then
        if ! sinfo -N -o '%N %P %T %c %m %f %G' 2>&1; then
            up=3
        fi
        nodes_ready || up=3
    fi
    if ((up == 0)); then echo "status: up"; else echo "status: down"; fi
    return "$up"
}

cmd_env() {
    printf 'export SLURM_CONF=%q\n' "$CONF"
}

main() {
    case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) cmd_env ;;
    -h | --help | help) usage ;;
    *)
        usage
        exit 2
        ;;
    esac
}

main "$@"
