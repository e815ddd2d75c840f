#!/usr/bin/env bash
# Fake hosts on one machine for multi-host MPI runs over a real (virtual) network.
#
#   netns_hosts.sh check                 exit 0 if hosts can be made here, else print why, exit 77
#   netns_hosts.sh up NAME N             make N hosts h0..h{N-1} (N = 1..8) on a bridge; prints
#                                        shell assignments (eval them): NETNS_NAME, NETNS_HOSTS
#                                        (h0,h1,...), NETNS_SERVER (the bridge address, for
#                                        mpiexec -localhost), NETNS_SUBNET, NETNS_LAUNCHER
#   netns_hosts.sh down NAME             remove the hosts of NAME (and kill what still runs in them)
#   netns_hosts.sh veth NAME I           the root-namespace end of host I's link (for tc, counters,
#                                        ip link set ... down)
#   netns_hosts.sh gc                    remove the hosts of every NAME whose owner process is gone
#
# A host is a network namespace "<NAME>h<I>" whose eth0 (10.213.K.(I+1)/24) is one end of a veth
# pair; the other end, "<NAME>v<I>", is enslaved to the bridge "<NAME>b" (10.213.K.254/24) in the
# root namespace, where mpiexec runs. K (1..250) is the first subnet no interface uses, chosen
# under a lock, so concurrent test jobs get disjoint subnets. NAME must be "svn<PID>" where PID is
# the process that owns the hosts (normally the test script: NAME=svn$$); `up` first removes the
# hosts of owners that no longer exist, so even a test killed with SIGKILL leaves nothing behind
# for long. Interface names stay within the 15-character limit for PIDs up to 7 digits.
#
# Processes enter a host through tests/multihost/netns_launch.sh (NETNS_LAUNCHER), the
# `-launcher-exec` of MPICH hydra's ssh launcher: it also gives each host its own UTS (hostname
# h<I>) and IPC namespace, as a separate machine has. Needs root, iproute2 (`ip netns`, veth,
# bridge) and util-linux (`unshare`, `flock`).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOCK=/run/lock/shardvit-netns.lock
PREFIX=10.213

die() { echo "netns_hosts: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

check_name() { [[ "$1" =~ ^svn[0-9]{1,7}$ ]] || die "NAME must be svn<PID> (got '$1')"; }

cmd_check() {
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
}

# hosts of NAME: the namespaces named NAME h<digits>
hosts_of() { ip netns list | awk '{print $1}' | grep -E "^$1h[0-9]+$" || true; }

cmd_down() {
    local name=$1 ns pids
    check_name "$name"
    for ns in $(hosts_of "$name"); do
        # whatever was started inside the host (proxies, ranks) goes with it
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    done
    for ns in $(hosts_of "$name"); do
        ip netns del "$ns" 2>/dev/null || true
    done
    local l
    for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${name}(b|v[0-9]+)$" || true); do
        ip link del "$l" 2>/dev/null || true
    done
}

cmd_gc() {
    local n
    for n in $( (ip netns list | awk '{print $1}'; ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//') |
        sed -nE 's/^(svn[0-9]+)(h[0-9]+|b|v[0-9]+)$/\1/p' | sort -u); do
        [ -d "/proc/${n#svn}" ] || cmd_down "$n"
    done
}

cmd_up() {
    local name=$1 n=$2 k i ns v
    check_name "$name"
    [[ "$n" =~ ^[1-8]$ ]] || die "N must be 1..8 (got '$n')"
    exec 9>"$LOCK"
    flock 9
    cmd_gc
    [ -z "$(hosts_of "$name")" ] || die "hosts of $name exist already"
    local used
    used=$(ip -o -4 addr show | awk '{print $4}' | sed -nE "s#^${PREFIX//./\\.}\.([0-9]+)\..*#\1#p" | sort -u)
    for k in $(seq 1 250); do grep -qx "$k" <<<"$used" || break; done
    grep -qx "$k" <<<"$used" && die "no free subnet in $PREFIX.0.0/16"
    local br="${name}b" server="$PREFIX.$k.254"
    # on any failure below, undo what was made
    trap 'cmd_down "$name"' ERR
    ip link add "$br" type bridge
    ip addr add "$server/24" dev "$br"
    ip link set "$br" up
    local hosts=""
    for i in $(seq 0 $((n - 1))); do
        ns="${name}h$i" v="${name}v$i"
        ip netns add "$ns"
        ip link add "$v" type veth peer name eth0 netns "$ns"
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
check) cmd_check ;;
up) [ $# = 3 ] || die "usage: up NAME N"; cmd_up "$2" "$3" ;;
down) [ $# = 2 ] || die "usage: down NAME"; cmd_down "$2" ;;
veth) [ $# = 3 ] || die "usage: veth NAME I"; check_name "$2"; echo "${2}v$3" ;;
gc) exec 9>"$LOCK"; flock 9; cmd_gc ;;
*) die "usage: netns_hosts.sh check | up NAME N | down NAME | veth NAME I | gc" ;;
esac
