#!/usr/bin/env bash
# Two fake hosts (network namespaces on a bridge, netns_hosts.sh) x 2 ranks, launched by one
# `mpiexec -launcher ssh -launcher-exec netns_launch.sh -hosts h0,h1 -ppn 2`:
#   - MPI sees two nodes: MPI_Comm_split_type(SHARED) gives 2 ranks per node, not 4;
#   - the ranks talk over TCP between the hosts: the bytes on host 0's veth are at least what the
#     schedule must move between the hosts (shared memory between the namespaces would leave
#     only hydra's few KB of control traffic there);
#   - full_shard over all 4 ranks and hybrid_shard with the shard group = one host (replicas
#     across the hosts) equal world 1 within the tolerances of tests/fsdp/equivalence.sh;
#   - the collective counts per communicator are the schedule's (tests/fsdp/schedule.sh), and
#     hybrid_shard moves less over the link than full_shard (only the gradient all-reduce
#     crosses it);
#   - hybrid's --trace shows the inter-host all-reduce of every unit in every step.
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
S=10 # steps
D=3  # blocks (units 1..3) + root unit
fail() { echo "FAIL: $*"; exit 1; }
expect() { # name pattern
    local line
    line=$(logline "$1" "collectives:")
    grep -q -- "$2" <<<"$line" || fail "$1: expected '$2' in: $line"
    echo "ok $1: $2"
}

run ref 1 --steps $S
b0=$(host_bytes 0)
hrun fs 4 --steps $S
b1=$(host_bytes 0)
hrun hy 4 --steps $S --strategy hybrid_shard --shard-group 2 --trace "$WORK/hy.json"
b2=$(host_bytes 0)

for r in fs hy; do
    logline "$r" "ranks: world 4, 2 on this node \(MPI_COMM_TYPE_SHARED\)" >/dev/null
done
echo "ok locality: MPI_COMM_TYPE_SHARED puts 2 of the 4 ranks on rank 0's node"

compare fs ref --loss-rtol 1e-5 --param-atol 5e-5
compare hy ref --loss-rtol 1e-5 --param-atol 5e-5

expect fs "shard all_gather $((S * (2 + 2 * D))) reduce_scatter $((S * (D + 1))) "
expect hy "shard all_gather $((S * (2 + 2 * D))) reduce_scatter $((S * (D + 1))) all_reduce 0; replica all_reduce $((S * (D + 1))) "

# Bytes over host 0's link (received + sent; fp32, P parameters). full_shard: per step host 0
# receives host 1's half of every unit twice (forward and backward all-gathers) and host 1's
# partial sums of its own half (reduce-scatter), and sends as much: >= 2 x 1.5 x 4P bytes.
# hybrid: each of host 0's 2 ranks all-reduces its 1/2 shard with its replica on host 1: >= 2 x
# 2 x 4P/2 bytes per step.
P=$(logline fs "training vit-28 \([0-9]+ params\)" | sed -E 's/.*\(([0-9]+) params\).*/\1/')
fsb=$((b1 - b0)) hyb=$((b2 - b1))
fs_min=$((S * 12 * P)) hy_min=$((S * 8 * P))
echo "host 0 link: full_shard $fsb bytes (>= $fs_min), hybrid_shard $hyb bytes (>= $hy_min), $P params, $S steps"
[ "$fsb" -ge "$fs_min" ] || fail "full_shard moved $fsb bytes over the link: not over TCP between the hosts"
[ "$hyb" -ge "$hy_min" ] || fail "hybrid_shard moved $hyb bytes over the link: not over TCP between the hosts"
[ "$hyb" -lt "$fsb" ] || fail "hybrid_shard ($hyb bytes) should cross the link less than full_shard ($fsb)"
echo "ok TCP between the hosts; hybrid_shard crosses the link with $((100 * hyb / fsb))% of full_shard's bytes"

"$PY" "$HERE/check_trace.py" --all-reduce $S "$WORK/hy.json" 4 $D >"$WORK/trace.out" ||
    { cat "$WORK/trace.out"; fail "trace check"; }
tail -1 "$WORK/trace.out"
echo "multihost equivalence: all passed"
