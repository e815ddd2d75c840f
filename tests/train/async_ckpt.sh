#!/usr/bin/env bash
# Asynchronous checkpoints (--async-ckpt; docs/checkpoints.md): the shards written by the
# background thread are byte for byte those of a synchronous save of the same step, index.json
# too; training goes on bitwise unchanged; a resume from them is bitwise; a crash in the middle
# of a background save leaves the previous checkpoint as `latest`; a preemption while a save is in
# flight publishes it and saves the stop step.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
set -e
RUN="$TINY --log-every 1 --comm-timeout 60 --steps 12 --keep 0"
train() { # train NAME [flags...]; exit status in $rc
    local name=$1
    shift
    rc=0
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --out "$WORK/$name" --save-params "$WORK/$name.bin" "$@" \
        >>"$WORK/$name.log" 2>&1 || rc=$?
    FAIL_LOGS=("$WORK/$name.log")
}
train sync --ckpt-every 2
test $rc = 0 || fail "synchronous run: exit $rc"
train async --ckpt-every 2 --async-ckpt
test $rc = 0 || fail "asynchronous run: exit $rc"
cmp "$WORK/sync.bin" "$WORK/async.bin" || fail "--async-ckpt changed the training"
n=0
for d in "$WORK"/sync/checkpoints/step_*; do
    b=$(basename "$d")
    for f in "$d"/*; do
        cmp "$f" "$WORK/async/checkpoints/$b/$(basename "$f")" || fail "$b/$(basename "$f") differs between sync and async saves"
    done
    n=$((n + 1))
done
test $n = 6 || fail "$n checkpoints"
grep -q "training blocked" "$WORK/async.log" || fail "no blocked-time report"
echo "async: $n checkpoints byte-identical to synchronous saves, parameters bitwise"
# resume from a background-written checkpoint
train res --resume "$WORK/async/checkpoints/step_00000006"
test $rc = 0 || fail "resume from an async checkpoint: exit $rc"
cmp "$WORK/res.bin" "$WORK/sync.bin" || fail "resume from an async checkpoint is not bitwise"
# killed while publishing step 6 (its shards written by the thread): step 4 stays latest
SHARDVIT_TEST_CRASH_AT=before_index@6 train crash --ckpt-every 2 --async-ckpt
test $rc -ne 0 || fail "the crash hook did not stop the run"
test "$(cat "$WORK/crash/checkpoints/latest")" = step_00000004 || fail "latest after a crash during an async save"
train crash --ckpt-every 2 --async-ckpt --resume auto
cmp "$WORK/crash.bin" "$WORK/sync.bin" || fail "resume after the crash is not bitwise"
# a signal during step 8 while step 6's save may still be in flight: 6 is published, 7 saved
SHARDVIT_TEST_SIGNAL_AT=7:1 train pre --ckpt-every 3 --async-ckpt
test $rc = 75 || fail "preempted async run: exit $rc"
test "$(cat "$WORK/pre/checkpoints/latest")" = step_00000008 || fail "latest after the stop: $(cat "$WORK/pre/checkpoints/latest")"
test -f "$WORK/pre/checkpoints/step_00000006/index.json" || fail "the save in flight (step 6) was not published"
train pre --ckpt-every 3 --async-ckpt --resume auto
cmp "$WORK/pre.bin" "$WORK/sync.bin" || fail "resume after the preempted async run is not bitwise"
no_leftovers "$WORK"
echo "async_ckpt: all passed"
