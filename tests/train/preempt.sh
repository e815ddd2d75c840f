#!/usr/bin/env bash
# Preemption (docs/checkpoints.md "Preemption"): SIGTERM / SIGUSR1 / SIGINT delivered to mpiexec
# (which forwards them) at several points of one 2-rank run, and a signal to a single rank in the
# middle of a step: every time the run finishes the step, saves, exits 75 within a bound, leaves
# no process behind, and `--resume auto` continues it; the final parameters are bitwise those of
# an uninterrupted run and metrics.jsonl / TensorBoard show every step once. A second signal
# ends the run at once without saving. Without a checkpoint directory a signal stops the run with
# 128 + signal and a message. A signal before MPI's initialisation stops the run after its first
# step; one in the last step, after its periodic evaluation, leaves that evaluation recorded
# once after the resume. --ckpt-every-minutes saves at steps all ranks agree on.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
set -e
STEPS=160 # the runs below to the end: a reference, the chain of interruptions and the one-rank signal
RUN="$TINY --log-every 1 --comm-timeout 60"
BOUND=30 # seconds from the signal to the exit: the rest of one step + one checkpoint save

train() { # train NAME [flags...]: foreground run into $WORK/NAME, exit status in $rc
    local name=$1
    shift
    rc=0
    timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps $STEPS --out "$WORK/$name" \
        --save-params "$WORK/$name.bin" "$@" >>"$WORK/$name.log" 2>&1 || rc=$?
}

# interrupt NAME SIGNAL PATTERN [flags]: start a run, send SIGNAL to mpiexec once its log matches
# PATTERN, wait; $rc is mpiexec's status, $took the seconds from the signal to the exit.
interrupt() {
    local name=$1 sig=$2 pat=$3
    shift 3
    local log="$WORK/$name.log" before=0
    [ -f "$log" ] && before=$(wc -l <"$log")
    FAIL_LOGS=("$log")
    # mpiexec itself gets the signal (no `timeout` in between: it would not forward SIGUSR1)
    "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps $STEPS --out "$WORK/$name" \
        --save-params "$WORK/$name.bin" "$@" >>"$log" 2>&1 &
    local pid=$! t0 dog
    # watchdog: kills the run after 200 s; its own sleep goes with it (nothing may hold our stdout)
    (sleep 200 & sp=$!; trap 'kill $sp 2>/dev/null; exit 0' TERM; wait $sp; kill -9 $pid) >/dev/null 2>&1 &
    dog=$!
    for _ in $(seq 3000); do
        tail -n +"$((before + 1))" "$log" 2>/dev/null | grep -qE "$pat" && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.01
    done
    t0=$(date +%s.%N)
    kill -"$sig" $pid 2>/dev/null || fail "$name: the run ended before $pat"
    rc=0
    wait $pid || rc=$?
    took=$(echo "$(date +%s.%N) - $t0" | bc)
    kill $dog 2>/dev/null || true
    no_leftovers "$WORK/$name"
    echo "$name: SIG$sig at '$pat' -> exit $rc after ${took}s, latest $(cat "$WORK/$name/checkpoints/latest" 2>/dev/null)"
    awk -v t="$took" -v b=$BOUND 'BEGIN { exit !(t < b) }' || fail "$name: exit took ${took}s (bound ${BOUND}s)"
}

steps_once() { # metrics.jsonl of NAME logs steps 1..STEPS exactly once, in order
    "$PY" - "$WORK/$1/metrics.jsonl" $STEPS <<'PY' || fail "$1: metrics.jsonl"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if '"loss"' in l]
want = list(range(1, int(sys.argv[2]) + 1))
if steps != want:
    dup = sorted({s for s in steps if steps.count(s) > 1})
    sys.exit(f"logged steps are not 1..{want[-1]} once each: {len(steps)} records, duplicated {dup[:10]}")
PY
}

tb_once() { # TensorBoard's own reader sees every step of train/loss once
    [ -n "${SHARDVIT_TEST_PYTHON:-}" ] || { echo "SKIP (not a pass): no SHARDVIT_TEST_PYTHON for TensorBoard's reader"; return 0; }
    "$SHARDVIT_TEST_PYTHON" - "$WORK/$1" $STEPS <<'PY' || fail "$1: TensorBoard view"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
steps = [e.step for e in acc.Scalars("train/loss")]
want = list(range(1, int(sys.argv[2]) + 1))
if steps != want:
    sys.exit(f"TensorBoard shows {len(steps)} train/loss points, not steps 1..{want[-1]} once each")
print(f"TensorBoard: train/loss at steps 1..{want[-1]}, once each")
PY
}

# the reference: uninterrupted
train ref
FAIL_LOGS=("$WORK/ref.log")
test $rc = 0 || fail "reference run: exit $rc"

# one run interrupted three times through mpiexec: before its first step, and twice mid-run
interrupt chain TERM "info training vit-28"
# the ranks exit 75; MPICH's mpiexec (hydra 4.0), itself signalled, reports 75 or 0 (a race in
# hydra), so mpiexec's status is checked against {75, 0} and the ranks' decision in the log
test $rc = 75 -o $rc = 0 || fail "SIGTERM at the start: exit $rc, expected 75"
s1=$(saved_at "$WORK/chain.log" "$WORK/chain" SIGTERM) || fail "chain: $s1"
test "$s1" -lt 40 || fail "SIGTERM at the start: stopped only after step $s1"
interrupt chain USR1 "info step 40/" --resume auto
test $rc = 75 -o $rc = 0 || fail "SIGUSR1: exit $rc, expected 75"
s2=$(saved_at "$WORK/chain.log" "$WORK/chain" SIGUSR1) || fail "chain: $s2"
test "$s2" -ge 40 -a "$s2" -lt $STEPS || fail "SIGUSR1 at step 40: stopped after step $s2"
interrupt chain INT "info step 100/" --resume auto
test $rc = 75 -o $rc = 0 || fail "SIGINT: exit $rc"
s3=$(saved_at "$WORK/chain.log" "$WORK/chain" SIGINT) || fail "chain: $s3"
test "$s3" -ge 100 -a "$s3" -lt $STEPS || fail "SIGINT at step 100: stopped after step $s3"
echo "chain: stopped after steps $s1, $s2, $s3"
train chain --resume auto
test $rc = 0 || fail "final resume: exit $rc"
cmp "$WORK/chain.bin" "$WORK/ref.bin" || fail "parameters after 3 interruptions differ from the uninterrupted run"
steps_once chain
tb_once chain
echo "chain: 3 interruptions through mpiexec, parameters bitwise equal to the uninterrupted run"

# a signal to one rank (rank 1) in the middle of step 8, as a user's kill or a node agent's
FAIL_LOGS=("$WORK/one.log")
SHARDVIT_TEST_SIGNAL_AT=7:1:15 train one
test $rc = 75 || fail "signal to rank 1: exit $rc"
test "$(cat "$WORK/one/checkpoints/latest")" = step_00000008 || fail "signal to rank 1 in step 8: latest is $(cat "$WORK/one/checkpoints/latest")"
grep -q "r0\] WARN SIGTERM received by another rank: stopping after step 8" "$WORK/one.log" || fail "rank 0 did not learn of rank 1's signal"
no_leftovers "$WORK/one"
train one --resume auto
cmp "$WORK/one.bin" "$WORK/ref.bin" || fail "signal to one rank: resumed parameters differ"
steps_once one
echo "one rank signalled: stopped after step 8 on both ranks, resumed bitwise"

# the same signal delivered twice at once (as a terminal's Ctrl-C or `kill -- -PGID` does: to
# mpiexec, which forwards it, and to every rank directly): one preemption, stopped and saved
FAIL_LOGS=("$WORK/dup.log")
# (a model whose step is long enough that the copy mpiexec forwards still finds the run in the step
# or its save: the repeat is ignored there, SV_PREEMPT_REPEAT_S)
"$MPIEXEC" -n 2 "$SHARDVIT" train --model vit-28 --batch-size 64 --synth-samples 2000 --workers 1 --steps 400 \
    --log-every 1 --out "$WORK/dup" >"$WORK/dup.log" 2>&1 &
pid=$!
for _ in $(seq 3000); do grep -q "info step 3/" "$WORK/dup.log" && break; sleep 0.01; done
r0=$(rank_pid "$WORK/dup" 0) || fail "rank 0 of the run not found"
r1=$(rank_pid "$WORK/dup" 1) || fail "rank 1 of the run not found"
kill -TERM "$pid" "$r0" "$r1"
rc=0; wait $pid || rc=$?
test $rc = 75 -o $rc = 0 || fail "a doubly delivered SIGTERM: exit $rc, expected 75"
grep -q "stopped by SIGTERM after step [0-9]* with its checkpoint saved" "$WORK/dup.log" ||
    fail "a doubly delivered SIGTERM: no checkpoint saved"
test -e "$WORK/dup/checkpoints/latest" || fail "a doubly delivered SIGTERM: no checkpoints/latest"
echo "a signal delivered twice at once: one preemption, checkpoint saved"

# a second signal (later than SV_PREEMPT_REPEAT_S): the default action at once, nothing saved. Rank 1 raises the first
# SIGTERM itself as it starts step 3 (0-based 2) and then stays in that step 30 s more (the hook's stall), so the
# second, sent 3 s after the "step 2" line, lands mid-step however loaded the machine is; finishing the step and
# saving would take the whole stall.
FAIL_LOGS=("$WORK/twice.log")
SHARDVIT_TEST_SIGNAL_AT=2:1:15:30 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 50 --out "$WORK/twice" \
    >"$WORK/twice.log" 2>&1 &
pid=$!
for _ in $(seq 6000); do grep -q "info step 2/" "$WORK/twice.log" && break; sleep 0.05; done # 5 min: slow under ASan
grep -q "info step 2/" "$WORK/twice.log" || fail "two signals: step 2 did not finish within 5 minutes"
r1=$(rank_pid "$WORK/twice" 1) || fail "rank 1 of the run not found"
sleep 3
t0=$(date +%s.%N)
kill -TERM "$r1"
rc=0; wait $pid || rc=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
no_leftovers "$WORK/twice"
echo "twice: exit $rc ${took}s after the second signal (the first one's step stalls 30 s)"
test $rc -ne 0 -a $rc -ne 75 || fail "two signals: exit $rc, expected death by the signal"
test ! -e "$WORK/twice/checkpoints/latest" || fail "two signals: a checkpoint was still saved"
grep -q "info step 3/" "$WORK/twice.log" && fail "two signals: step 3 finished"
awk -v t="$took" 'BEGIN { exit !(t < 15) }' || fail "two signals: exit took ${took}s, not at once"

# a signal during start-up, before MPI's initialisation (test hook SHARDVIT_TEST_SIGNAL_STARTUP:
# every rank signals itself, as mpiexec forwarding an early SIGTERM / time-limit SIGUSR1 would):
# held until the handlers exist, then the run stops after its first step with a checkpoint (it
# killed the ranks, and MPICH's own SIGUSR1 handler swallowed SIGUSR1)
# (kill: the whole process, which OpenBLAS's threads, made before main, share; and right after
# MPI's initialisation, which installs MPICH's own SIGUSR1 handler: @mpi; OpenBLAS with its default
# thread count, so that its threads exist before main whatever the suite's environment sets)
for hook in USR1 TERM USR1@mpi TERM@mpi; do
    sig=${hook%@*} name=early${hook/@/_}
    FAIL_LOGS=("$WORK/$name.log")
    rc=0
    env -u OPENBLAS_NUM_THREADS SHARDVIT_TEST_SIGNAL_STARTUP=$hook timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 20 \
        --out "$WORK/$name" >"$WORK/$name.log" 2>&1 || rc=$?
    test $rc = 75 || fail "SIG$hook at start-up: exit $rc, expected 75"
    grep -q "stopped by SIG$sig after step 1 with its checkpoint saved" "$WORK/$name.log" ||
        fail "SIG$hook at start-up: the run did not stop after step 1"
    test "$(cat "$WORK/$name/checkpoints/latest")" = step_00000001 || fail "SIG$hook at start-up: latest"
    no_leftovers "$WORK/$name"
done
echo "a signal before / right after MPI's initialisation: kept, the run stopped after step 1 and saved"
# a start-up signal the run's set does not hold gets the disposition it had before: SIGUSR2 ends the process
rc=0
env -u OPENBLAS_NUM_THREADS SHARDVIT_TEST_SIGNAL_STARTUP=USR2 timeout 60 "$SHARDVIT" train $RUN --steps 3 --preempt-signal TERM \
    --out "$WORK/hup" >"$WORK/hup.log" 2>&1 || rc=$?
test $rc = 140 || { cat "$WORK/hup.log"; fail "SIGUSR2 at start-up outside --preempt-signal TERM: exit $rc, expected 140"; }
echo "a start-up signal outside the --preempt-signal set: its default action once the handlers are in (SIGUSR2: 140)"
# SIGUSR1 outside the set (--preempt-signal TERM, or none), during the run and at start-up: MPICH's
# own SIGUSR1 handler takes it, as without the start-up handler (which that handler calls: it
# stopped the run, exit 75), and the run ends normally
for ps in TERM none; do
    for how in at startup; do
        rc=0
        if [ $how = at ]; then
            SHARDVIT_TEST_SIGNAL_AT=3:1:10 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 8 \
                --preempt-signal $ps --out "$WORK/u1$ps$how" >"$WORK/u1$ps$how.log" 2>&1 || rc=$?
        else
            SHARDVIT_TEST_SIGNAL_STARTUP=USR1 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 8 \
                --preempt-signal $ps --out "$WORK/u1$ps$how" >"$WORK/u1$ps$how.log" 2>&1 || rc=$?
        fi
        FAIL_LOGS=("$WORK/u1$ps$how.log")
        test $rc = 0 || fail "SIGUSR1 ($how) with --preempt-signal $ps: exit $rc, expected 0 (not in the set)"
        test "$(cat "$WORK/u1$ps$how/checkpoints/latest")" = step_00000008 || fail "SIGUSR1 ($how), --preempt-signal $ps: latest"
    done
done
echo "SIGUSR1 outside --preempt-signal (TERM, none), in a step and at start-up: the run ends normally"
# the same without mpiexec (an MPI singleton), where MPICH's own SIGUSR1 handler waited for ever on a
# process manager that does not exist: the run ends normally too (at start-up: before MPI's
# initialisation and right after it, when that handler is in)
for ps in TERM none; do
    for how in at USR1 USR1@mpi; do
        name=u1single$ps${how/@/_}
        rc=0
        if [ $how = at ]; then
            SHARDVIT_TEST_SIGNAL_AT=3:0:10 timeout -k 5 60 "$SHARDVIT" train $RUN --steps 8 \
                --preempt-signal $ps --out "$WORK/$name" >"$WORK/$name.log" 2>&1 || rc=$?
        else
            SHARDVIT_TEST_SIGNAL_STARTUP=$how timeout -k 5 60 "$SHARDVIT" train $RUN --steps 8 \
                --preempt-signal $ps --out "$WORK/$name" >"$WORK/$name.log" 2>&1 || rc=$?
        fi
        FAIL_LOGS=("$WORK/$name.log")
        test $rc = 0 || fail "singleton, SIGUSR1 ($how) with --preempt-signal $ps: exit $rc, expected 0 (not in the set; 124 / 137: it hung)"
        test "$(cat "$WORK/$name/checkpoints/latest")" = step_00000008 || fail "singleton, SIGUSR1 ($how), --preempt-signal $ps: latest"
    done
done
# a PMI_SIZE left in the environment does not make a launcher (MPICH looks at PMI_FD / PMI_PORT)
rc=0
PMI_SIZE=1 SHARDVIT_TEST_SIGNAL_STARTUP=USR1@mpi timeout -k 5 60 "$SHARDVIT" train $RUN --steps 8 \
    --preempt-signal TERM --out "$WORK/u1single_pmisize" >"$WORK/u1single_pmisize.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/u1single_pmisize.log")
test $rc = 0 || fail "singleton with PMI_SIZE=1, SIGUSR1 right after MPI_Init: exit $rc, expected 0 (124 / 137: it hung)"
echo "the same in an MPI singleton (no mpiexec): the run ends normally, no wait on a process manager"

# no checkpoint directory: stops after the step, nothing saved, 128 + 15
FAIL_LOGS=("$WORK/nodir.log")
rc=0
SHARDVIT_TEST_SIGNAL_AT=3:0 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 20 >"$WORK/nodir.log" 2>&1 || rc=$?
test $rc = 143 || fail "signal without a checkpoint directory: exit $rc, expected 143"
grep -q "stopped by SIGTERM after step 4; nothing saved" "$WORK/nodir.log" || fail "no 'nothing saved' message"

# --ckpt-every-minutes: time-based saves land on steps both ranks agree on (a disagreement would
# leave one rank in the save's collectives until --comm-timeout)
FAIL_LOGS=("$WORK/minutes.log")
STEPS=60 train minutes --ckpt-every-minutes 0.0003 --keep 0 --comm-timeout 20
test $rc = 0 || fail "--ckpt-every-minutes: exit $rc"
n=$(ls -d "$WORK/minutes/checkpoints"/step_* | wc -l)
test "$n" -ge 3 || fail "--ckpt-every-minutes 0.0003 over 60 steps saved $n checkpoints"
for d in "$WORK/minutes/checkpoints"/step_*; do test -f "$d/index.json" || fail "incomplete $d"; done
echo "--ckpt-every-minutes: $n complete checkpoints"

# a crash (SIGKILL while saving step 6, newest complete checkpoint step 3) after logging steps
# 4..6: the resumed run's metrics.jsonl and TensorBoard view hold each step once
FAIL_LOGS=("$WORK/crash.log")
STEPS=9
SHARDVIT_TEST_CRASH_AT=before_index@6 train crash --ckpt-every 3
test $rc -ne 0 || fail "the crash hook did not stop the run"
grep -q '"step":6,' "$WORK/crash/metrics.jsonl" || fail "the crashed run had not logged step 6"
train crash --resume auto
test $rc = 0 || fail "resume after the crash: exit $rc"
grep -q "metrics.jsonl cut back to step 3" "$WORK/crash.log" || fail "no cut-back message"
steps_once crash
tb_once crash

# stopped right after the last step's periodic evaluation (--eval-every 10, 20 steps, the signal in
# step 20): the resume has no step left and evaluates again for eval.json, but metrics.jsonl and
# TensorBoard hold the evaluations of steps 10 and 20 once each, as the uninterrupted run's
# (the step-20 evaluation was recorded twice)
STEPS=20
EV="--val-data synthetic --eval-every 10"
train evref $EV
FAIL_LOGS=("$WORK/evref.log")
test $rc = 0 || fail "evaluation reference: exit $rc"
SHARDVIT_TEST_SIGNAL_AT=19:1 train evlast $EV
FAIL_LOGS=("$WORK/evlast.log")
test $rc = 75 || fail "signal in the last step: exit $rc, expected 75"
train evlast $EV --resume auto
test $rc = 0 || fail "resume with no step left: exit $rc"
test -s "$WORK/evlast/eval.json" || fail "resume with no step left: no eval.json"
grep -q "eval at step 20: .*recorded before the resume, not again" "$WORK/evlast.log" || fail "no 'not again' line"
"$PY" - "$WORK/evref/metrics.jsonl" "$WORK/evlast/metrics.jsonl" <<'PY' || fail "evaluation records after the resume"
import json, sys
ev = lambda p: [(r["step"], r["eval_top1"]) for r in map(json.loads, open(p)) if "eval_top1" in r]
ref, got = ev(sys.argv[1]), ev(sys.argv[2])
assert [s for s, _ in ref] == [10, 20] and got == ref, (ref, got)
print("metrics.jsonl: evaluations at", [s for s, _ in got], "once each, as uninterrupted")
PY
if [ -n "${SHARDVIT_TEST_PYTHON:-}" ]; then
    "$SHARDVIT_TEST_PYTHON" - "$WORK/evlast" <<'PY' || fail "evlast: TensorBoard view"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
steps = [e.step for e in acc.Scalars("eval/top1")]
assert steps == [10, 20], steps
print("TensorBoard: eval/top1 at steps", steps)
PY
else
    echo "SKIP (not a pass): no SHARDVIT_TEST_PYTHON for TensorBoard's reader"
fi
echo "stopped after the last step's evaluation: resumed, evaluations recorded once"
echo "preempt: all passed"
