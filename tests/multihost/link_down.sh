#!/usr/bin/env bash
# A host's link goes down mid-step (`ip link set <host 1's veth> down` while 2 hosts x 2 ranks
# train, full_shard over all 4). Asserted:
#   - mpiexec exits non-zero within --comm-timeout (5 s) + 10 s of the cut;
#   - on host 0 (still reachable) a rank reports the collective that did not complete: kind,
#     "seq N", the communicator and its ranks, the timeout, and the ring-log dump with the
#     pending entry marked "FAILED: timeout" (docs/comm.md);
#   - on host 1, cut off from mpiexec, its ranks time out as well, report the same kind of
#     message, and exit with status 1 within --comm-timeout + 10 s of the cut. Their stderr cannot
#     cross the dead link, so each rank's stderr and exit status are written to files (as on a
#     cluster's shared filesystem) by a small sh wrapper around shardvit;
#   - no rank process is left on either host afterwards.
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    for f in "$WORK/out" "$WORK"/rank*.err; do
        [ -f "$f" ] && { echo "---- $f (last 15 lines) ----"; tail -15 "$f" | cut -c1-300; }
    done
    exit 1
}
TO=5
BOUND=$((TO + 10))
now_ms() { echo $(($(date +%s%N) / 1000000)); }
run="$WORK/run"
# shellcheck disable=SC2206 # $TINY: a flag list, split on purpose
ARGS=(train $TINY --steps 1000000 --comm-timeout $TO --out "$run")
# host 0's ranks 0, 1 report through mpiexec; host 1's ranks 2, 3 (hydra's MPMD form, -ppn 2)
# write stderr into rank<R>.err and, once shardvit has exited, its status into rank<R>.rc
# (written aside and renamed: the proxy may kill the wrapper mid-write, which must leave no
# empty status file behind but no file at all, the "killed by the proxy" case below); the wrapper
# gets the directory in its environment (not pasted into its source: any path works)
"$HMPIEXEC" -n 2 "$SHARDVIT" "${ARGS[@]}" : \
    -n 2 env RANK_DIR="$WORK" sh -c 'r=$PMI_RANK; "$0" "$@" 2>"$RANK_DIR/rank$r.err"; echo $? >"$RANK_DIR/rank$r.rc.part" && mv "$RANK_DIR/rank$r.rc.part" "$RANK_DIR/rank$r.rc"' \
    "$SHARDVIT" "${ARGS[@]}" >"$WORK/out" 2>&1 &
mpid=$!
for _ in $(seq 600); do
    [ -f "$run/metrics.jsonl" ] && [ "$(wc -l <"$run/metrics.jsonl")" -ge 5 ] && break
    kill -0 $mpid 2>/dev/null || fail "training ended before the fault"
    sleep 0.1
done
[ "$(wc -l <"$run/metrics.jsonl" 2>/dev/null || echo 0)" -ge 5 ] || fail "training never got going"
[ -n "$(host_procs 1 "shardvit train")" ] || fail "no shardvit rank runs on host 1"
veth=$(bash "$MH/netns_hosts.sh" veth "$NETNS_NAME" 1)
t0=$(now_ms)
ip link set "$veth" down
echo "host 1's link ($veth) down after $(wc -l <"$run/metrics.jsonl") logged steps"
while kill -0 $mpid 2>/dev/null; do
    [ $(($(now_ms) - t0)) -le $((BOUND * 1000)) ] || fail "mpiexec still running $BOUND s after the cut"
    sleep 0.1
done
rc=0
wait $mpid || rc=$?
el_mpiexec=$(($(now_ms) - t0))
[ $rc -ne 0 ] || fail "mpiexec exited 0 although host 1 was cut off"
while [ -n "$(host_procs 1 "shardvit train")$(host_procs 0 "shardvit train")" ]; do
    [ $(($(now_ms) - t0)) -le $((BOUND * 1000)) ] || fail "ranks still running $BOUND s after the cut"
    sleep 0.1
done
el_ranks=$(($(now_ms) - t0))
echo "mpiexec exited $rc after $el_mpiexec ms; no rank left on either host after $el_ranks ms (bound $BOUND s)"
left=$(host_procs 1)
[ -z "$left" ] || echo "still on host 1 (removed with the host): $(ps -o comm= -p "$(echo $left | tr ' ' ,)" | tr '\n' ' ')"
# host 0's report, through mpiexec
msg="(all_gather|reduce_scatter|all_reduce|broadcast|barrier) seq [0-9]+ \(count [0-9]+ x [a-z0-9]+.*\) on comm '[^']+' \(mpi, [0-9] ranks: world ranks [0-9,]+; this is rank [0-9]\) did not complete within $TO s"
grep -Eq "$msg" "$WORK/out" || fail "host 0: no message naming the collective that timed out"
grep -Eq "seq [0-9]+ (all_gather|reduce_scatter|all_reduce).* PENDING FAILED: timeout" "$WORK/out" ||
    fail "host 0: no ring-log dump with the failed entry"
echo "host 0 reported: $(grep -Eom1 "$msg" "$WORK/out")"
# host 1's ranks 2 and 3: each reports the collective; the first to leave MPI_Abort (which waits
# for a kill order that cannot arrive) exits 1 on its own; hydra's proxy on host 1 then kills
# what is left of its ranks (SIGKILL to their process groups, wrappers included), so the other
# rank may leave no status file.
exited=0
for r in 2 3; do
    grep -Eq "$msg" "$WORK/rank$r.err" || fail "rank $r (host 1): no message naming the collective"
    grep -Eq "PENDING FAILED: timeout" "$WORK/rank$r.err" || fail "rank $r (host 1): no ring-log dump"
    how="killed by host 1's proxy after the other rank's exit"
    if [ -f "$WORK/rank$r.rc" ]; then
        [ "$(cat "$WORK/rank$r.rc")" = 1 ] || fail "rank $r (host 1) exited $(cat "$WORK/rank$r.rc"), expected 1"
        exited=$((exited + 1)) how="exited 1"
    fi
    echo "rank $r (host 1) $how; reported: $(grep -Eom1 "$msg" "$WORK/rank$r.err" | cut -c1-60)..."
done
[ $exited -ge 1 ] || fail "no rank on host 1 left MPI_Abort with exit status 1"
echo "link_down: all passed"
