#!/usr/bin/env bash
# Four fake hosts x 1 rank (network namespaces on a bridge, netns_hosts.sh), so every collective of
# every rank crosses that rank's own link:
#   - MPI sees four nodes (MPI_Comm_split_type(SHARED): 1 rank per node);
#   - full_shard over the 4 hosts and hybrid_shard with shard groups of 2 hosts (replicas across
#     the pairs) equal world 1 within the tolerances of tests/fsdp/equivalence.sh, with the
#     schedule's collective counts per communicator;
#   - each host's veth carries at least what its rank's share of the collectives must move
#     (full_shard, fp32, P parameters, per step: the forward and backward all-gathers bring 3/4 of
#     every unit in and send 3/4 out, >= 2 x 2 x 3P bytes; the reduce-scatter as much again once);
#     hybrid_shard moves less over each link than full_shard does.
SHARDVIT=$1
MH_HOSTS=4
PPN=1
source "$(dirname "$0")/lib.sh"
S=6 # steps
D=3 # blocks (units 1..3) + root unit
fail() { echo "FAIL: $*"; exit 1; }
bytes_all() { local i s=""; for i in 0 1 2 3; do s="$s $(host_bytes $i)"; done; echo "$s"; }

run ref 1 --steps $S
read -r -a b0 <<<"$(bytes_all)"
hrun fs 4 --steps $S
read -r -a b1 <<<"$(bytes_all)"
hrun hy 4 --steps $S --strategy hybrid_shard --shard-group 2
read -r -a b2 <<<"$(bytes_all)"

for r in fs hy; do
    logline "$r" "ranks: world 4, 1 on this node \(MPI_COMM_TYPE_SHARED\)" >/dev/null
done
echo "ok locality: each of the 4 ranks is alone on its node"
compare fs ref --loss-rtol 1e-5 --param-atol 5e-5
compare hy ref --loss-rtol 1e-5 --param-atol 5e-5
line=$(logline fs "collectives:")
grep -q -- "shard all_gather $((S * (2 + 2 * D))) reduce_scatter $((S * (D + 1))) " <<<"$line" || fail "fs counts: $line"
line=$(logline hy "collectives:")
grep -q -- "shard all_gather $((S * (2 + 2 * D))) reduce_scatter $((S * (D + 1))) all_reduce 0; replica all_reduce $((S * (D + 1))) " \
    <<<"$line" || fail "hy counts: $line"
echo "ok collective counts per communicator"

P=$(logline fs "training vit-28 \([0-9]+ params\)" | sed -E 's/.*\(([0-9]+) params\).*/\1/')
min=$((S * 18 * P))
for i in 0 1 2 3; do
    fsb=$((b1[i] - b0[i])) hyb=$((b2[i] - b1[i]))
    echo "host $i link: full_shard $fsb bytes (>= $min), hybrid_shard $hyb bytes"
    [ "$fsb" -ge "$min" ] || fail "host $i moved $fsb bytes under full_shard: not every collective crossed its link"
    [ "$hyb" -lt "$fsb" ] || fail "host $i: hybrid_shard ($hyb bytes) should cross the link less than full_shard ($fsb)"
done
echo "multihost four hosts: all passed"
