#!/usr/bin/env bash
# Dead or hung rank: 3 ranks of comm_loop run collectives with a 3 s comm timeout, then rank 1
# is hit by a signal. Asserted, precisely:
#   1. mpiexec exits with a non-zero status within BOUND = 3 s timeout + 20 s slack of the signal;
#   2. afterwards none of the 3 rank processes, the hydra proxy or mpiexec is alive;
#   3. the output says why:
#      mode "kill" (SIGKILL, a dead rank): either a survivor's message naming the collective
#        ("all_reduce seq N ... on comm 'world'" or the same for all_gather, from an sv_comm
#        timeout or communication error) or hydra's own report of the dead rank ("BAD
#        TERMINATION" / "KILLED BY SIGNAL" / "EXIT STRING: Killed"). MPICH 4.0's hydra normally
#        kills the whole job within ~0.1 s of a rank's death - even with -disable-auto-cleanup
#        (its proxy fails on the dead rank's PMI socket) - so which of the two appears depends
#        on timing;
#      mode "stop" (SIGSTOP, a hung rank: alive, never arriving): hydra sees nothing, so the
#        survivors' sv_comm timeout must fire; their message naming the collective is required,
#        and their MPI_Abort must take down the whole job, the stopped rank included.
# Usage: kill_rank.sh MPIEXEC COMM_LOOP [kill|stop]
set -u
MPIEXEC=$1
PROG=$2
MODE=${3:-kill}
TIMEOUT_S=3
BOUND=$((TIMEOUT_S + 20))

tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*"
    echo "---- job output ----"
    cat "$tmp/out" 2>/dev/null
    # never leave anything behind, even on failure
    for p in $all_pids; do kill -9 "$p" 2>/dev/null; done
    exit 1
}
all_pids=""

case "$MODE" in
kill) SIG=KILL ;;
stop) SIG=STOP ;;
*) echo "unknown mode $MODE"; exit 2 ;;
esac
"$MPIEXEC" -n 3 "$PROG" "$tmp" "$TIMEOUT_S" >"$tmp/out" 2>&1 &
mpid=$!
all_pids="$mpid"

# wait (up to 30 s) for all ranks to start and collectives to flow
for _ in $(seq 300); do
    [ -f "$tmp/running" ] && [ -f "$tmp/rank0.pid" ] && [ -f "$tmp/rank1.pid" ] &&
        [ -f "$tmp/rank2.pid" ] && break
    kill -0 "$mpid" 2>/dev/null || fail "job ended before the kill"
    sleep 0.1
done
[ -f "$tmp/running" ] || fail "collectives never started"
rank_pids="$(cat "$tmp"/rank*.pid | tr '\n' ' ')"
proxy_pids="$(ps -o pid= --ppid "$mpid" | tr '\n' ' ')"
all_pids="$mpid $rank_pids $proxy_pids"
victim=$(cat "$tmp/rank1.pid")

t0=$(date +%s%N)
kill -"$SIG" "$victim"
while kill -0 "$mpid" 2>/dev/null; do
    el_ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$el_ms" -gt $((BOUND * 1000)) ]; then
        fail "mpiexec still running ${BOUND} s after SIG$SIG of rank 1"
    fi
    sleep 0.1
done
wait "$mpid"
rc=$?
el_ms=$((($(date +%s%N) - t0) / 1000000))
echo "mpiexec exited with status $rc ${el_ms} ms after SIG$SIG of rank 1"
[ "$rc" -ne 0 ] || fail "mpiexec exited 0 although rank 1 got SIG$SIG"

sleep 0.5
for p in $rank_pids $proxy_pids; do
    if kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != Z ]; then
        fail "process $p left behind"
    fi
done

ours='(all_reduce|all_gather) seq [0-9]+ .*on comm .world.'
hydra='BAD TERMINATION|KILLED BY SIGNAL|EXIT STRING: Killed'
if [ "$MODE" = stop ]; then
    grep -Eq "$ours" "$tmp/out" || fail "no survivor message naming the collective"
else
    grep -Eq "$ours|$hydra" "$tmp/out" || fail "neither a collective-naming message nor hydra's report"
fi
echo "---- job output (excerpt) ----"
grep -E "$ours|$hydra|ERROR" "$tmp/out" | head -20
echo "PASS"
