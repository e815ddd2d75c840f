#!/usr/bin/env bash
# The end of a training run, through real 2-rank runs and real signals (docs/training.md "Run
# end"):
#  1. a rank-0-only write that fails at the end (eval.json replaced by a FIFO during the run) ends
#     every rank at once with rank 0's message: rank 1 is not left waiting in the --save-params
#     gather until the communication timeout, and no process is left behind;
#  2. SIGTERM arriving after the run's `done:` line (rank 0 closing its logs, tearing down,
#     finalizing MPI), again and again for 0.4 s, finds a finished run: exit 0 with its outputs in
#     place, instead of a death by signal 15, and no hang.
# HOSTILE_KEEP_GOING=1 runs every check (to show that each fails on a build without the fixes).
SHARDVIT=$1
source "$(dirname "$0")/cli_lib.sh"

echo "== 1. eval.json turned into a FIFO during the run"
FAIL_LOGS=("$W/fifo.log")
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 1500 --log-every 100 --comm-timeout 20 --out "$W/r1" \
    --val-data synthetic --save-params "$W/r1.bin" >"$W/fifo.log" 2>&1 &
job=$!
for _ in $(seq 3000); do grep -q "info step 100/" "$W/fifo.log" && break; sleep 0.01; done
if ! mkfifo "$W/r1/eval.json"; then # the run ended before the FIFO was there: nothing was shown
    wait $job
    fail "the run ended before eval.json could be replaced (mkfifo failed)"
else
    t0=$(date +%s.%N)
    rc=0
    wait $job || rc=$?
    took=$(echo "$(date +%s.%N) - $t0" | bc | awk '{ printf "%.1f", $1 }')
    test $rc -ne 0 || fail "exit 0 with eval.json a FIFO"
    grep -q "eval output $W/r1/eval.json is a FIFO" "$W/fifo.log" || fail "no message naming the FIFO"
    grep -q "is a FIFO.*(reported by rank 0)" "$W/fifo.log" || fail "rank 1 does not report rank 0's failure"
    grep -q "did not complete within" "$W/fifo.log" && fail "a rank waited in a collective until the timeout"
    awk -v t="$took" 'BEGIN { exit !(t < 15) }' || fail "the run took ${took}s to end after its last step"
    no_leftovers "$W/r1"
    echo "rank-0 eval output failure: exit $rc, ${took}s from the FIFO to the end"
fi

echo "== 2. SIGTERM after the run's done: line"
FAIL_LOGS=("$W/term.log")
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 200 --comm-timeout 30 --out "$W/r2" --val-data synthetic \
    >"$W/term.log" 2>&1 &
job=$!
pid0=""
for _ in $(seq 3000); do
    [ -n "$pid0" ] || pid0=$(rank_pid "$W/r2" 0) || pid0=""
    [ -n "$pid0" ] && grep -q "info done:" "$W/term.log" && break
    sleep 0.005
done
sent=0
if [ -z "$pid0" ]; then
    fail "rank 0 of the run was not found"
else # from the done: line until the process has gone; repeats within a second are one event
    # for 0.4 s at most: well inside the 1 s in which a repeat counts as the same signal
    stop=$(($(date +%s%N) + 400000000))
    while [ "$(date +%s%N)" -lt $stop ] && kill -TERM "$pid0" 2>/dev/null; do
        sent=$((sent + 1))
        sleep 0.001
    done
fi
rc=0
wait $job || rc=$?
test $rc -eq 0 || fail "a finished run exited $rc on SIGTERM after its done: line ($sent signals sent)"
test -s "$W/r2/eval.json" && test -d "$W/r2/checkpoints/step_00000200" || fail "the finished run's outputs are missing"
echo "SIGTERM after done: exit $rc ($sent signals sent)"
all_passed end_of_run
