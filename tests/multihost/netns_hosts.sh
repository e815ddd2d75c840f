#!/usr/bin/env bash
# Fake hosts on one machine for multi-host MPI runs over a real (virtual) network.
#
#   netns_hosts.sh check [--delay-link] exit 0 if hosts (with --delay-link: hosts on delay links)
#                                        can be made here, else print why, exit 77
#   netns_hosts.sh up NAME N [--delay-ms D] [--rate-mbit R] [--queue-mb Q]
#                                        make N hosts h0..h{N-1} (N = 1..8) on a bridge; prints
#                                        shell assignments (eval them): NETNS_NAME, NETNS_HOSTS
#                                        (h0,h1,...), NETNS_SERVER (the bridge address, for
#                                        mpiexec -localhost), NETNS_SUBNET, NETNS_LAUNCHER
#   netns_hosts.sh down NAME             remove the hosts of NAME (and kill what still runs in them)
#   netns_hosts.sh veth NAME I           the root-namespace end of host I's link (for tc, counters,
#                                        ip link set ... down)
#   netns_hosts.sh gc                    remove the hosts of every NAME whose owner process is gone
#
# A host is a network namespace "<NAME>h<I>" whose eth0 (10.213.K.(I+1)/24) is one end of its
# link; the other end, "<NAME>v<I>", is enslaved to the bridge "<NAME>b" (10.213.K.254/24) in the
# root namespace, where mpiexec runs. K (1..250) is the first subnet no interface uses, chosen
# under a lock, so concurrent test jobs get disjoint subnets. NAME must be "svn<PID>" where PID is
# the process that owns the hosts (normally the test script: NAME=svn$$); `up` first removes the
# hosts of owners that no longer exist, so even a test killed with SIGKILL leaves nothing behind
# for long. Interface names stay within the 15-character limit for PIDs up to 7 digits.
#
# The link is a veth pair by default. With any of --delay-ms D (D may be 0 or fractional),
# --rate-mbit R, --queue-mb Q it is a delay link instead: two TAP devices, eth0 and <NAME>v<I>,
# joined by the forwarder tests/multihost/delaylink.c (the program is $DELAYLINK; CMake builds it
# as tests/multihost/delaylink), which holds every frame the host sends for D ms and sends at
# most R Mbit/s from a queue of Q MiB (default 16), as `tc qdisc add dev eth0 root netem delay D`
# (plus a rate) would on the host: between two hosts a frame is delayed D one way, a round trip
# 2D. Frames to the host pass at once. One forwarder runs per host (pid file and log under
# /run/shardvit-netns); it exits by itself when the owner PID is gone, its TAPs vanish with it,
# and `down` stops it first. `veth NAME I` names the TAP <NAME>v<I> then.
#
# Processes enter a host through tests/multihost/netns_launch.sh (NETNS_LAUNCHER), the
# `-launcher-exec` of MPICH hydra's ssh launcher: it also gives each host its own UTS (hostname
# h<I>) and IPC namespace, as a separate machine has. Needs root, iproute2 (`ip netns`, veth,
# bridge) and util-linux (`unshare`, `flock`); delay links also /dev/net/tun.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOCK=/run/lock/shardvit-netns.lock
RUNDIR=/run/shardvit-netns # delay-link forwarders: <NAME>h<I>.pid, <NAME>h<I>.log
PREFIX=10.213

die() { echo "netns_hosts: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

check_name() { [[ "$1" =~ ^svn[0-9]{1,7}$ ]] || die "NAME must be svn<PID> (got '$1')"; }

cmd_check() {
    [ -z "$1" ] || [ "$1" = --delay-link ] || die "usage: check [--delay-link]"
    [ "$(id -u)" = 0 ] || skip "multi-host tests need root (network namespaces)"
    for t in ip unshare flock; do command -v "$t" >/dev/null || skip "'$t' not found"; done
    local probe="svnprobe$$"
    ip netns add "$probe" 2>/dev/null || skip "'ip netns add' fails here (no network namespaces)"
    local ok=1
    ip link add "${probe}a" type veth peer name "${probe}b" 2>/dev/null || ok=0
    ip link del "${probe}a" 2>/dev/null || true
    ip netns del "$probe"
    [ $ok = 1 ] || skip "cannot create veth pairs here"
    ip link add "${probe}r" type bridge 2>/dev/null || skip "cannot create a bridge here"
    ip link del "${probe}r"
    unshare --uts --ipc true 2>/dev/null || skip "'unshare --uts --ipc' fails here"
    [ "$1" != --delay-link ] || check_delay_link
}

need_delaylink() {
    [ -x "${DELAYLINK:-}" ] || die "delay links need DELAYLINK, the path of the delaylink program (got '${DELAYLINK:-}')"
}

# a delay link can be made: a forwarder starts and its host end can move into a namespace
check_delay_link() {
    need_delaylink
    [ -c /dev/net/tun ] || skip "no /dev/net/tun here (TAP devices, for delay links)"
    local probe="svnp$$" pid
    mkdir -p "$RUNDIR"
    "$DELAYLINK" --a "${probe}a" --b "${probe}b" --owner $$ --pidfile "$RUNDIR/$probe.pid" >/dev/null 2>&1 ||
        skip "cannot create TAP devices with IFF_VNET_HDR and offloads here (delaylink fails)"
    pid=$(cat "$RUNDIR/$probe.pid")
    rm -f "$RUNDIR/$probe.pid"
    local ok=1
    ip netns add "$probe" 2>/dev/null || ok=0
    [ $ok = 0 ] || ip link set "${probe}a" netns "$probe" 2>/dev/null || ok=0
    kill "$pid"
    ip netns del "$probe" 2>/dev/null || true
    [ $ok = 1 ] || skip "cannot move a TAP device into a network namespace here"
}

# hosts of NAME: the namespaces named NAME h<digits>
hosts_of() { ip netns list | awk '{print $1}' | grep -E "^$1h[0-9]+$" || true; }

# is PID the delay-link forwarder of host NS?
is_forwarder() { [ -n "$1" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- "--pidfile $RUNDIR/$2.pid"; }

# stop the delay-link forwarders of NAME (SIGTERM, SIGKILL after 2 s) and remove their files; the
# log of one that had stopped for another reason than its owner's exit goes to stderr
stop_links() {
    local name=$1 f ns pid
    for f in "$RUNDIR/$name"h*.pid; do
        [ -e "$f" ] || continue
        ns=$(basename "$f" .pid)
        pid=$(cat "$f" 2>/dev/null || true)
        if is_forwarder "$pid" "$ns"; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 20); do is_forwarder "$pid" "$ns" || break; sleep 0.1; done
            ! is_forwarder "$pid" "$ns" || kill -9 "$pid" 2>/dev/null || true
        elif ! grep -q "stopped (owner process gone)" "$RUNDIR/$ns.log" 2>/dev/null; then
            echo "netns_hosts: the delay link of $ns had stopped before 'down':" >&2
            cat "$RUNDIR/$ns.log" >&2 2>/dev/null || true
        fi
        rm -f "$f" "$RUNDIR/$ns.log"
    done
}

cmd_down() {
    local name=$1 ns pids
    check_name "$name"
    stop_links "$name"
    for ns in $(hosts_of "$name"); do
        # whatever was started inside the host (proxies, ranks) goes with it
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    done
    for ns in $(hosts_of "$name"); do
        ip netns del "$ns" 2>/dev/null || true
    done
    local l
    for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${name}(b|[vt][0-9]+)$" || true); do
        ip link del "$l" 2>/dev/null || true
    done
}

# has process PID exited (gone, or a zombie not yet reaped)?
exited() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}

cmd_gc() {
    local n
    for n in $( (ip netns list | awk '{print $1}'; ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//'
        ls "$RUNDIR" 2>/dev/null | sed -n 's/\.pid$//p') |
        sed -nE 's/^(svn[0-9]+)(h[0-9]+|b|[vt][0-9]+)$/\1/p' | sort -u); do
        ! exited "${n#svn}" || cmd_down "$n"
    done
}

# link NAME I: host I's link, eth0 in namespace <NAME>h<I> and <NAME>v<I> in the root namespace
# (a veth pair, or with LINK_ARGS the TAPs of a delay-link forwarder)
make_link() {
    local name=$1 i=$2 ns="${1}h$2" v="${1}v$2"
    if [ ${#LINK_ARGS[@]} = 0 ]; then
        ip link add "$v" type veth peer name eth0 netns "$ns"
        return
    fi
    mkdir -p "$RUNDIR"
    "$DELAYLINK" --a "${name}t$i" --b "$v" "${LINK_ARGS[@]}" --owner "${name#svn}" \
        --pidfile "$RUNDIR/$ns.pid" --log "$RUNDIR/$ns.log"
    ip link set "${name}t$i" netns "$ns" name eth0
}

cmd_up() {
    local name=$1 n=$2 k i ns v
    shift 2
    check_name "$name"
    [[ "$n" =~ ^[1-8]$ ]] || die "N must be 1..8 (got '$n')"
    LINK_ARGS=()
    while [ $# -gt 0 ]; do
        [ $# -ge 2 ] || die "$1 needs a value"
        case "$1" in
        --delay-ms) LINK_ARGS+=(--ab-delay-ms "$2") ;;
        --rate-mbit) LINK_ARGS+=(--ab-rate-mbit "$2") ;;
        --queue-mb) LINK_ARGS+=(--queue-mb "$2") ;;
        *) die "unknown option '$1' (up NAME N [--delay-ms D] [--rate-mbit R] [--queue-mb Q])" ;;
        esac
        shift 2
    done
    [ ${#LINK_ARGS[@]} = 0 ] || need_delaylink
    exec 9>"$LOCK"
    flock 9
    cmd_gc
    [ -z "$(hosts_of "$name")" ] || die "hosts of $name exist already"
    local used
    used=$(ip -o -4 addr show | awk '{print $4}' | sed -nE "s#^${PREFIX//./\\.}\.([0-9]+)\..*#\1#p" | sort -u)
    for k in $(seq 1 250); do grep -qx "$k" <<<"$used" || break; done
    grep -qx "$k" <<<"$used" && die "no free subnet in $PREFIX.0.0/16"
    local br="${name}b" server="$PREFIX.$k.254"
    # on any failure below (also inside make_link: errtrace), undo what was made
    set -E
    trap 'cmd_down "$name"' ERR
    ip link add "$br" type bridge
    ip addr add "$server/24" dev "$br"
    ip link set "$br" up
    local hosts=""
    for i in $(seq 0 $((n - 1))); do
        ns="${name}h$i" v="${name}v$i"
        ip netns add "$ns"
        make_link "$name" "$i"
        ip link set "$v" master "$br"
        ip link set "$v" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$PREFIX.$k.$((i + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" route add default via "$server"
        hosts="${hosts:+$hosts,}h$i"
    done
    trap - ERR
    flock -u 9
    echo "NETNS_NAME=$name"
    echo "NETNS_HOSTS=$hosts"
    echo "NETNS_SERVER=$server"
    echo "NETNS_SUBNET=$PREFIX.$k.0/24"
    echo "NETNS_LAUNCHER=$HERE/netns_launch.sh"
}

case "${1:-}" in
check) [ $# -le 2 ] || die "usage: check [--delay-link]"; cmd_check "${2:-}" ;;
up) [ $# -ge 3 ] || die "usage: up NAME N [--delay-ms D] [--rate-mbit R] [--queue-mb Q]"; shift; cmd_up "$@" ;;
down) [ $# = 2 ] || die "usage: down NAME"; cmd_down "$2" ;;
veth) [ $# = 3 ] || die "usage: veth NAME I"; check_name "$2"; echo "${2}v$3" ;;
gc) exec 9>"$LOCK"; flock 9; cmd_gc ;;
*) die "usage: netns_hosts.sh check [--delay-link] | up NAME N [LINK OPTIONS] | down NAME | veth NAME I | gc" ;;
esac
