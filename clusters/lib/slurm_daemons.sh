#!/usr/bin/env bash
# What the test clusters' scripts (slurm-local/cluster.sh, slurm-multi/cluster.sh) share: pid
# files checked against the process they name, munge's key and state, the fake GPU devices, and
# starting a daemon detached from the caller. Sourced, not run; the caller sets MUNGE_DIR,
# MUNGE_KEY, MUNGE_SOCKET, STATE_DIR, DEV_DIR and REALMEM_OVERRIDE, and defines die().
# shellcheck shell=bash

# True while pid $1 exists and is not a zombie (PID 1 of a container may not reap).
pid_alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat:0:1} != Z ]]
}

# pid of a running daemon named $1 whose pid file is $2, or nothing (exit 1). The name check
# makes a stale pid file whose pid was reused (after a crash or reboot) read as "not running".
daemon_pid() {
    local name=$1 file=$2 pid comm
    [[ -r $file ]] || return 1
    pid=$(tr -dc '0-9' <"$file" 2>/dev/null || true)
    [[ -n $pid ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
    [[ $comm == "$name" ]] || return 1
    pid_alive "$pid" || return 1
    printf '%s\n' "$pid"
}

munge_works() {
    munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1
}

make_devices() {
    local i dev
    mkdir -p "$DEV_DIR"
    for i in 0 1 2 3; do
        dev=$DEV_DIR/nvidia$i
        if [[ ! -c $dev ]]; then
            rm -f "$dev"
            mknod -m 0666 "$dev" c 195 "$i"
        fi
    done
}

prepare_munge() {
    id munge >/dev/null 2>&1 || die "no munge user (is the munge package installed?)"
    mkdir -p "$MUNGE_DIR"
    chown munge:munge "$MUNGE_DIR"
    chmod 0755 "$MUNGE_DIR"
    # munged's default socket directory; not used by these clusters, but munge tools expect it.
    mkdir -p /run/munge
    chown munge:munge /run/munge
    chmod 0755 /run/munge
    if [[ ! -s $MUNGE_KEY ]]; then
        rm -f "$MUNGE_KEY"
        if ! mungekey --create --keyfile="$MUNGE_KEY" 2>/dev/null; then
            dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
        fi
    fi
    chown munge:munge "$MUNGE_KEY"
    chmod 0400 "$MUNGE_KEY"
    runuser -u munge -- test -r "$MUNGE_KEY" ||
        die "user munge cannot reach $MUNGE_KEY (is a parent of $STATE_DIR closed to other users?)"
}

# Run "$@" with only stdin/stdout/stderr open, so that daemons do not keep the caller's pipes
# (e.g. `out=$(cluster.sh start)` or a test runner's fds) open forever. Mode -w waits for "$@"
# (daemons that fork), -f does not (daemons that stay in the foreground).
run_detached() {
    local mode=$1
    shift
    (
        local fd path
        for path in /proc/"$BASHPID"/fd/*; do
            fd=${path##*/}
            if ((fd > 2)) && [[ -e $path ]]; then
                exec {fd}>&-
            fi
        done
        exec setsid "$mode" "$@"
    )
}

# The memory a node declares: REALMEM_OVERRIDE (MB) when set, else the machine's.
real_memory_mb() {
    if [[ -n ${REALMEM_OVERRIDE:-} ]]; then
        printf '%s\n' "$REALMEM_OVERRIDE"
    else
        awk '/^MemTotal:/ { printf "%d\n", $2 / 1024 }' /proc/meminfo
    fi
}
