#!/usr/bin/env bash
# A NaN in one rank's input batch (test hook SHARDVIT_TEST_POISON_BATCH=STEP:RANK, which puts a
# NaN into the first pixel of that rank's batch at 0-based step STEP, as a corrupt decoder
# output would).
# Asserted:
#   1. 2 ranks, 4 steps, constant LR, rank 1 poisoned at the last step: every rank skips that
#      step (the global gradient norm is non-finite), the skip is counted ("skipped steps 1",
#      metrics.jsonl skipped_steps 1), and the final parameters are bit-identical to a clean
#      3-step run (a skipped step leaves master weights and optimizer state untouched);
#      metrics.jsonl stays strict JSON: the skipped step's loss and grad_norm are null;
#   2. the same poison at step 1 with --max-skipped-steps 0: mpiexec exits non-zero within the
#      time bound, the message names the limit, and no process is left behind;
#   3. a poisoned step that a periodic checkpoint falls on (--ckpt-every 2 --keep 3, step 4): that
#      save is held (its weights are those of step 3) and made after the next applied step (step
#      5); with --keep 0 (nothing rotates) it is saved as usual; a
#      run whose last step is skipped still makes its final save, but --keep 1 removes nothing
#      for it (step 4 stays beside step 6);
#   4. a real divergence (SGD at --lr 10, no clipping) with the default flags: once more than 10
#      steps in a row are skipped (--max-consecutive-skips 10) every rank stops with exit 1 and a
#      message naming the steps and the last applied one; the periodic saves of the skipped
#      steps were held, so --keep 2 kept the checkpoints from before the divergence and `latest`
#      names one of them (before the limit existed this run skipped every step to the end,
#      exited 0, and --keep rotated every good checkpoint away).
# (tests/fsdp/schedule.sh covers the same through an injected gradient NaN; this one enters
# through the data path.)
# Usage: nan_batch.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
CONST="--lr 1e-3 --min-lr 1e-3 --warmup 0 --log-every 1 --comm-timeout 30"
train() { # NAME STEPS [flags]: train into $WORK/NAME
    local name=$1 steps=$2
    shift 2
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY $CONST --steps "$steps" --out "$WORK/$name" \
        --save-params "$WORK/$name.bin" "$@" >"$WORK/$name.log" 2>&1
}
FAIL_LOGS=("$WORK/clean.log" "$WORK/poison.log" "$WORK/abort.log")
train clean 3 || fail "clean run failed"
SHARDVIT_TEST_POISON_BATCH=3:1 train poison 4 || fail "poisoned run failed"
# the poisoned batch is step index 3 (the hook counts from 0): the 4th step, "step 4" as the log
# lines and metrics.jsonl number it
grep -q "step 4: non-finite gradient norm; step skipped" "$WORK/poison.log" || fail "no skip message for step 4"
grep -q "skipped steps 1" "$WORK/poison.log" || fail "skip not counted in the summary"
[ "$(metric_values "$WORK/poison/metrics.jsonl" skipped_steps | tail -n1)" = 1 ] || fail "metrics.jsonl skipped_steps != 1"
cmp -s "$WORK/clean.bin" "$WORK/poison.bin" || fail "parameters changed by a skipped step"
# metrics.jsonl stays strict JSON (no NaN/Infinity tokens) with the skipped step's loss as null
"$PY" -c '
import json, sys
def bad(c): raise ValueError("non-JSON constant " + c)
recs = [json.loads(l, parse_constant=bad) for l in open(sys.argv[1])]
assert recs[-1]["loss"] is None and recs[-1]["grad_norm"] is None, recs[-1]
' "$WORK/poison/metrics.jsonl" || fail "metrics.jsonl is not strict JSON"
echo "ok: poisoned batch on rank 1 skipped on every rank, counted, parameters untouched"
# the log window holding the skipped step averages the finite losses only (before: the window mean
# was NaN, loss_avg null): steps 2-4 logged at step 4, step 4 poisoned -> the mean of steps 2 and 3,
# the same losses as the clean run's
SHARDVIT_TEST_POISON_BATCH=3:1 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --lr 1e-3 --min-lr 1e-3 \
    --warmup 0 --log-every 4 --comm-timeout 30 --steps 4 --out "$WORK/window" >"$WORK/window.log" 2>&1 ||
    { FAIL_LOGS=("$WORK/window.log"); fail "poisoned run with --log-every 4 failed"; }
grep -q "step 4/4 .*(mean of 2, 1 non-finite left out: [0-9.]*)" "$WORK/window.log" ||
    { FAIL_LOGS=("$WORK/window.log"); fail "the log line does not average the finite losses of its window"; }
"$PY" -c '
import json, sys
clean = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
last = [r for r in map(json.loads, open(sys.argv[2])) if r.get("step") == 4][-1]
want = (clean[2] + clean[3]) / 2
assert last["loss_avg_steps"] == 2 and abs(last["loss_avg"] - want) <= 1e-6 * abs(want), (last, want)
' "$WORK/clean/metrics.jsonl" "$WORK/window/metrics.jsonl" || fail "loss_avg of the window with a skipped step"
echo "ok: the window mean leaves the skipped step's non-finite loss out"

t0=$(date +%s)
SHARDVIT_TEST_POISON_BATCH=1:0 train abort 6 --max-skipped-steps 0
rc=$?
el=$(($(date +%s) - t0))
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "expected a clean non-zero exit, got $rc"
[ $el -le 60 ] || fail "abort took $el s"
grep -q "steps skipped for non-finite gradients (limit --max-skipped-steps 0)" "$WORK/abort.log" || fail "no abort message"
no_leftovers "$WORK/abort"
echo "ok: --max-skipped-steps 0 aborted (exit $rc, ${el} s), nothing left running"

FAIL_LOGS=("$WORK/held.log" "$WORK/diverge.log")
SHARDVIT_TEST_POISON_BATCH=3:1 train held 6 --ckpt-every 2 --keep 3 || fail "run with a held save failed"
grep -q "step 4: periodic checkpoint held" "$WORK/held.log" || fail "no held-save message at step 4"
[ "$(ls "$WORK/held/checkpoints" | grep '^step_' | tr '\n' ' ')" = "step_00000002 step_00000005 step_00000006 " ] ||
    fail "checkpoints after a held save: $(ls "$WORK/held/checkpoints" | tr '\n' ' ')"
echo "ok: the periodic save of a skipped step was held and made after the next applied step"
# with --keep 0 (all kept) nothing rotates, so nothing is held: step 4 is saved as it is
FAIL_LOGS=("$WORK/kept.log")
SHARDVIT_TEST_POISON_BATCH=3:1 train kept 6 --ckpt-every 2 || fail "run with --keep 0 and a skipped step failed"
if grep -q "periodic checkpoint held" "$WORK/kept.log"; then fail "a save was held with --keep 0"; fi
[ "$(ls "$WORK/kept/checkpoints" | grep '^step_' | tr '\n' ' ')" = "step_00000002 step_00000004 step_00000006 " ] ||
    fail "checkpoints with --keep 0: $(ls "$WORK/kept/checkpoints" | tr '\n' ' ')"
# the last step skipped: the final save still happens, but --keep 1 rotates nothing away for it
FAIL_LOGS=("$WORK/final.log")
SHARDVIT_TEST_POISON_BATCH=5:0 train final 6 --ckpt-every 2 --keep 1 || fail "run ending in a skipped step failed"
grep -q "step 6: periodic checkpoint held" "$WORK/final.log" || fail "no held-save message at step 6"
grep -q "saved while steps are being skipped for non-finite gradients: --keep 1 removes no earlier" \
    "$WORK/final.log" || fail "no message about the final save keeping the earlier checkpoint"
[ "$(ls "$WORK/final/checkpoints" | grep '^step_' | tr '\n' ' ')" = "step_00000004 step_00000006 " ] ||
    fail "checkpoints after a final save during skipped steps: $(ls "$WORK/final/checkpoints" | tr '\n' ' ')"
echo "ok: the final save of a run ending in a skipped step removed no earlier checkpoint"

DIVERGE="--model vit-28 --dim 32 --depth 2 --heads 2 --batch-size 16 --synth-samples 256 --workers 1 --log-every 1"
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $DIVERGE --steps 40 --lr 10 --warmup 0 --clip 0 --opt sgd \
    --comm-timeout 30 --out "$WORK/diverge" --ckpt-every 2 --keep 2 >"$WORK/diverge.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a diverged run: expected a clean non-zero exit, got $rc"
msg=$(grep -m1 -o "training diverged: steps [0-9]*-[0-9]* were all skipped .*" "$WORK/diverge.log") ||
    fail "no divergence message"
first=$(echo "$msg" | sed 's/.*steps \([0-9]*\)-.*/\1/') last=$(echo "$msg" | sed 's/.*steps [0-9]*-\([0-9]*\) .*/\1/')
[ $((last - first)) -eq 10 ] || fail "stopped after $((last - first + 1)) skipped steps, not 11: $msg"
echo "$msg" | grep -q "(limit --max-consecutive-skips 10); the weights have not changed since step $((first - 1))" ||
    fail "message: $msg"
latest=$(cat "$WORK/diverge/checkpoints/latest")
for d in "$WORK"/diverge/checkpoints/step_*; do
    n=$((10#${d##*step_}))
    [ "$n" -lt "$first" ] || fail "checkpoint $d saved at or after the first skipped step $first"
done
[ "$(ls -d "$WORK"/diverge/checkpoints/step_* | wc -l)" -eq 2 ] || fail "--keep 2 kept: $(ls "$WORK/diverge/checkpoints")"
n=$((10#${latest#step_}))
[ "$n" -lt "$first" ] || fail "latest is $latest"
no_leftovers "$WORK/diverge"
echo "ok: a diverged run stopped after 11 skipped steps in a row (exit $rc), $latest kept from before them"
echo PASS
