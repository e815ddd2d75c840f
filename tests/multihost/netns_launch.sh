#!/usr/bin/env bash
# "ssh" into a fake host of netns_hosts.sh: the -launcher-exec for MPICH hydra's ssh launcher,
#
#   NETNS_NAME=svn123 mpiexec -launcher ssh -launcher-exec tests/multihost/netns_launch.sh \
#       -localhost $NETNS_SERVER -hosts h0,h1 -ppn 2 -n 4 prog
#
# Hydra calls it the way it calls ssh: `netns_launch.sh [ssh options] HOST COMMAND...` (for ssh it
# adds -x; HYDRA_LAUNCHER_EXTRA_ARGS may add more), with COMMAND quoted for a remote shell. As
# ssh does, this runs COMMAND with `sh -c` in a clean login environment (hydra itself forwards
# mpiexec's environment to the ranks), here inside host HOST: network namespace
# "${NETNS_NAME}HOST" plus a UTS namespace whose hostname is HOST and an IPC namespace of its own.
# The IPC namespace matters: UCX (MPICH's ch4:ucx netmod) decides that two processes can use
# shared memory when they see the same kernel boot id and IPC namespace; the network namespace
# alone would let ranks on different fake hosts bypass the network.
set -euo pipefail
while [ $# -gt 0 ] && [[ "$1" == -* ]]; do
    case "$1" in
    -[1246AaCfGgKkMNnqsTtVXxYy]) shift ;;          # ssh flags without an argument
    -*) shift 2 ;;                                  # ssh options with an argument (-p 22, -o X)
    esac
done
[ $# -ge 2 ] || { echo "netns_launch: usage: netns_launch.sh [ssh options] HOST COMMAND..." >&2; exit 255; }
host=${1#*@}
shift
[ -n "${NETNS_NAME:-}" ] || { echo "netns_launch: NETNS_NAME is not set" >&2; exit 255; }
[[ "$host" =~ ^h[0-9]+$ ]] || { echo "netns_launch: unknown host '$host' (hosts are h0, h1, ...)" >&2; exit 255; }
ns="${NETNS_NAME}${host}"
ip netns list | awk '{print $1}' | grep -qx "$ns" || { echo "netns_launch: no host '$host' ($ns)" >&2; exit 255; }
exec ip netns exec "$ns" unshare --uts --ipc \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
    /bin/sh -c 'hostname "$0" && exec /bin/sh -c "exec $1"' "$host" "$*"
