#!/usr/bin/env bash
# A --resume whose checkpoint holds another model or was trained with another update rule or
# input normalisation is
# refused before the run directory is touched (docs/training.md "Resuming"), through real 2-rank
# runs on real files:
#  1. a run stopped by a preemption signal (its checkpoint saved), then resumed with --heads 4,
#     --dim 128, --layer-scale 1e-5, --global-pool avg (exit 1), --opt sgd and another
#     normalisation, --mean 0.3 --std 0.2 (exit 2), over the run's own config.toml: each refused naming the difference, and the run directory byte for
#     byte as it was (config.toml, the lock marker .shardvit-run, metrics.jsonl, classes.txt, the
#     TensorBoard event files and their number, the checkpoints);
#  2. the documented restart, `train --config OUT/config.toml --resume auto`, then resumes that
#     checkpoint and trains the remaining steps;
#  3. the same refusals into a new --out (and --ckpt-dir) create no directory, nor does one found
#     only after the lock (a checkpoint past --steps: the lock's marker and directories go again).
#  4. a run directory moved elsewhere: `--config NEW/config.toml --resume auto` is refused naming the
#     recorded --out (it started from scratch at the old place), with --out NEW it resumes there.
# HOSTILE_KEEP_GOING=1 runs every check (to show that each fails on a build without the fix).
SHARDVIT=$1
source "$(dirname "$0")/cli_lib.sh"
R=$W/r
events() { find "$R" -maxdepth 1 -name 'events.out.tfevents.*' | wc -l; }

echo "== 1. a preempted run, resumed with another model or update rule"
rc=0
SHARDVIT_TEST_SIGNAL_AT=3:0 t2 --steps 8 --out "$R" >"$W/base.log" 2>&1 || rc=$?
FAIL_LOGS=("$W/base.log")
[ $rc -eq 75 ] || { fail "the preempted run: exit $rc, expected 75"; exit 1; }
latest=$(cat "$R/checkpoints/latest") || { fail "the preempted run saved no checkpoint"; exit 1; }
test "$(events)" = 1 || fail "the preempted run left $(events) event files, expected 1"
test -f "$R/.shardvit-run" || fail "no lock marker in the run directory"
cp "$R/config.toml" "$W/config.before"
before=$(tree_sum "$R")

refusal() { # NAME RC PATTERN FLAGS...: refused with exit RC and PATTERN; R exactly as it was
    local name=$1 want=$2 pat=$3 rc=0 failed=${NFAIL:-0}
    shift 3
    timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train --config "$R/config.toml" --resume auto "$@" >"$W/$name.log" 2>&1 ||
        rc=$?
    FAIL_LOGS=("$W/$name.log")
    [ $rc -eq "$want" ] || fail "$name: exit status $rc, expected $want"
    grep -Eq -- "$pat" "$W/$name.log" || fail "$name: no message matching '$pat'"
    grep -q "info step \|info training " "$W/$name.log" && fail "$name: refused only after training started"
    cmp -s "$W/config.before" "$R/config.toml" ||
        fail "$name: config.toml rewritten ($(diff "$W/config.before" "$R/config.toml" | grep '^>' | head -3))"
    test "$(events)" = 1 || fail "$name: $(events) event files, expected 1 (a refused resume opened the logs)"
    test "$before" = "$(tree_sum "$R")" ||
        fail "$name: the run directory changed (.shardvit-run, metrics.jsonl, classes.txt, checkpoints)"
    [ "${NFAIL:-0}" = "$failed" ] && echo "ok $name: exit $rc, $(grep -Em1 -- "$pat" "$W/$name.log" | cut -c1-200)"
}
refusal heads 1 "the checkpoint's model has heads 2 but this run has --heads 4" --heads 4
refusal dim 1 "tensor [^ ]+ has shape \([^)]*32[^)]*\) in the checkpoint but \([^)]*128[^)]*\) in this model" --dim 128
refusal layer_scale 1 "the checkpoint's model has LayerScale off, .* but this run has on, " --layer-scale 1e-5
refusal global_pool 1 "global pool token, .* but this run has [^,]*, avg, " --global-pool avg
refusal opt 2 "the checkpoint was trained with --opt adamw but this run asks for --opt sgd" --opt sgd
refusal norm 2 "records the training normalisation .*, this run resolved .*: pass --mean" --mean 0.3 --std 0.2

echo "== 2. the documented restart continues the run"
failed=${NFAIL:-0}
expect_ok restart timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train --config "$R/config.toml" --resume auto
grep -q "resumed from $R/checkpoints/$latest" "$W/restart.log" || fail "the restart did not resume $latest"
grep -q "info step 8/8 " "$W/restart.log" || fail "the restart did not train to step 8"
grep -q '^{"step":8,' "$R/metrics.jsonl" || fail "metrics.jsonl has no record of step 8"
test "$(cat "$R/checkpoints/latest")" = step_00000008 || fail "the restart saved no checkpoint at step 8"
[ "${NFAIL:-0}" = "$failed" ] && echo "ok restart: resumed from $latest, trained to step 8"

echo "== 3. into a new --out (and --ckpt-dir): nothing created"
expect_fail new_out "tensor [^ ]+ has shape \([^)]*32[^)]*\) in the checkpoint but \([^)]*128[^)]*\) in this model" \
    t2 --steps 8 --out "$W/new" --resume "$R/checkpoints/$latest" --dim 128
test -e "$W/new" && fail "a refused resume into a new --out left $(ls -A "$W/new" | tr '\n' ' ')"
expect_fail new_out_ckpt "trained with --opt adamw but this run asks for --opt sgd" \
    t2 --steps 8 --out "$W/new2" --ckpt-dir "$W/new2ck" --resume "$R/checkpoints/$latest" --opt sgd
test -e "$W/new2" -o -e "$W/new2ck" && fail "a refused resume into a new --out / --ckpt-dir created a directory"
expect_fail new_ckpt_dir "the checkpoint's model has heads 2 but this run has --heads 4" \
    t2 --steps 8 --ckpt-dir "$W/new3ck" --resume "$R/checkpoints/$latest" --heads 4
test -e "$W/new3ck" && fail "a refused resume into a new --ckpt-dir created it"
# refused only once the data is open (after the lock was taken): a checkpoint past this run's
# --steps, resumed into a new --out two levels deep: the lock's marker and both directories go
expect_fail new_out_past "past the 2 steps of this run" \
    t2 --steps 2 --out "$W/new4/deep" --resume "$R/checkpoints/step_00000008"
test -e "$W/new4" && fail "a resume refused after the lock left $(find "$W/new4" | tr '\n' ' ')"
# ... with --ckpt-dir inside --out, and beside it in a parent both made: nothing left either
expect_fail new_out_past_in "past the 2 steps of this run" \
    t2 --steps 2 --out "$W/new5/run" --ckpt-dir "$W/new5/run/ck" --resume "$R/checkpoints/step_00000008"
test -e "$W/new5" && fail "a resume refused after the lock (--ckpt-dir inside --out) left $(find "$W/new5" | tr '\n' ' ')"
expect_fail new_out_past_beside "past the 2 steps of this run" \
    t2 --steps 2 --out "$W/new6/a" --ckpt-dir "$W/new6/b" --resume "$R/checkpoints/step_00000008"
test -e "$W/new6" && fail "a resume refused after the lock (--ckpt-dir beside --out) left $(find "$W/new6" | tr '\n' ' ')"
echo "== 4. a moved run directory: its config.toml records the old --out"
mv "$R" "$W/moved"
expect_fail moved "--config $W/moved/config.toml is the configuration of the run directory $W/moved, but it records --out $R" \
    timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train --config "$W/moved/config.toml" --resume auto
test -e "$R" && fail "moved: the refused run re-created the old run directory $R (a fresh start there)"
expect_ok moved_out timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train --config "$W/moved/config.toml" --resume auto \
    --out "$W/moved"
grep -q "resumed from $W/moved/checkpoints/step_00000008" "$W/moved_out.log" ||
    fail "moved_out: --out at the new place did not resume its checkpoint"
all_passed resume_model
