#!/usr/bin/env bash
# --resume never damages another run and never continues on other terms unannounced
# (docs/training.md "Resuming"), through real 2-rank runs on real files:
#  1. --out (or its checkpoint root) holding another run's results, resumed from a checkpoint
#     elsewhere: refused, that run byte-identical (metrics.jsonl, checkpoints, latest); the same
#     checkpoint into a new --out resumes;
#  2. --resume auto finding no checkpoint (--ckpt-dir forgotten, or its checkpoints gone) over a
#     run's records: refused naming the recorded --ckpt-dir; metrics.jsonl, config.toml, eval.json
#     unchanged;
#  3. data whose class names differ from the checkpoint's label names: refused naming the class
#     index and both names, classes.txt and config.toml unchanged; the same data resumes;
#  4. a checkpoint past the run's --steps: refused, nothing changed; exactly at --steps: no step
#     is trained, exit 0;
#  5. another global batch size, --mixup, --smoothing, --drop-path, --model-ema-decay: warned;
#  6. a data position inside the global batch (steps would span the epochs' ends): warned.
# HOSTILE_KEEP_GOING=1 runs every check (to show that each fails on a build without the fixes).
SHARDVIT=$1
source "$(dirname "$0")/cli_lib.sh"
# the files of run directory $1 that a refused command must leave as they were (not the lock)
files() {
    local d=$1
    shift
    tree_sum "$d/metrics.jsonl" "$d/config.toml" "$d/classes.txt" "$d/checkpoints" "$@"
}
mustrun() { # NAME CMD...: a set-up run that must exit 0, else the test cannot go on
    local name=$1 rc=0
    shift
    "$@" >"$W/$name.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: set-up run $name: exit $rc"; tail -20 "$W/$name.log"; exit 1; }
}

echo "== 1. another run's results are not the place to resume a foreign checkpoint"
mustrun b t2 --steps 8 --ckpt-every 2 --out "$W/b"
mustrun a t2 --steps 4 --ckpt-every 2 --out "$W/a"
before=$(files "$W/b")
expect_fail foreign_root "checkpoint .*a/checkpoints/step_00000004 is not in this run's checkpoint root .*b/checkpoints, which holds another run's checkpoints" \
    t2 --steps 6 --out "$W/b" --resume "$W/a" --keep 1
test "$before" = "$(files "$W/b")" || fail "the other run changed (metrics.jsonl / checkpoints / latest)"
expect_fail foreign_out "--out .*/b holds another run's results \(metrics.jsonl records up to step 8, checkpoints/" \
    t2 --steps 6 --out "$W/b" --ckpt-dir "$W/bck" --resume "$W/a/checkpoints/step_00000002"
test "$before" = "$(files "$W/b")" || fail "the other run changed (--ckpt-dir elsewhere)"
expect_ok fork t2 --steps 6 --out "$W/fork" --resume "$W/a"
grep -q "resumed from $W/a/checkpoints/step_00000004" "$W/fork.log" || fail "a checkpoint into a new --out did not resume"

echo "== 2. --resume auto without a checkpoint over a run's records"
mustrun c t2 --steps 4 --out "$W/c" --ckpt-dir "$W/cck" --val-data synthetic
before=$(files "$W/c" "$W/c/eval.json")
expect_fail forgot_ckpt_dir "no checkpoint in $W/c/checkpoints, but --out $W/c belongs to a run whose config.toml records --ckpt-dir $W/cck .*metrics.jsonl records up to step 4, eval.json" \
    t2 --steps 2 --out "$W/c" --resume auto
test "$before" = "$(files "$W/c" "$W/c/eval.json")" || fail "metrics.jsonl / config.toml / eval.json changed"
rm -r "$W/cck"
expect_fail ckpts_gone "no checkpoint in $W/cck, but --out $W/c holds a finished run's records \(metrics.jsonl records up to step 4, eval.json\)" \
    t2 --steps 2 --out "$W/c" --ckpt-dir "$W/cck" --resume auto
test "$before" = "$(files "$W/c" "$W/c/eval.json")" || fail "the run directory changed (checkpoints gone)"

# a run stopped before its first checkpoint (step records, no eval.json, its own root) restarts
# from scratch in place, as a requeued job must
mustrun z t2 --steps 4 --out "$W/z"
rm -r "$W/z/checkpoints"
expect_ok restart_in_place t2 --steps 4 --out "$W/z" --resume auto
grep -q "no checkpoint in $W/z/checkpoints; starting from scratch" "$W/restart_in_place.log" ||
    fail "a run without checkpoints did not restart in place"

echo "== 3. other class names than the checkpoint's"
"$SHARDVIT" prep synthetic --out "$W/prep" --classes 3 --per-class 4 --test-per-class 1 --width 28 --height 28 \
    >"$W/prep.log" 2>&1 || { FAIL_LOGS=("$W/prep.log"); fail "prep"; exit 1; }
cp -r "$W/prep/train" "$W/dsA"
cp -r "$W/prep/train" "$W/dsB"
mv "$W/dsB/class_001" "$W/dsB/class_009" # the same images; sorted, class 1 is now class_002
mustrun d t2 --steps 2 --ckpt-every 2 --out "$W/d" --data "$W/dsA"
before=$(files "$W/d")
expect_fail relabel "class 1 of the data is \"class_002\" but the model's class 1 is \"class_001\" \(label names from .*d/checkpoints/step_00000002/index.json\).*relabel" \
    t2 --steps 4 --out "$W/d" --resume auto --data "$W/dsB"
test "$before" = "$(files "$W/d")" || fail "classes.txt / config.toml / metrics.jsonl changed"
expect_ok same_classes t2 --steps 4 --out "$W/d" --resume auto --data "$W/dsA"

echo "== 4. a checkpoint past the run's steps"
before=$(files "$W/a")
expect_fail past_total "checkpoint .*a/checkpoints/step_00000004 is at step 4, past the 2 steps of this run" \
    t2 --steps 2 --out "$W/a" --resume auto --val-data synthetic
test "$before" = "$(files "$W/a")" || fail "the run changed (config.toml steps, metrics.jsonl)"
expect_ok at_total t2 --steps 4 --out "$W/a" --resume auto --val-data synthetic
grep -q "checkpoint is at step 4, this run's last: no step is left to train" "$W/at_total.log" ||
    fail "a resume at the last step does not say that no step is left"
grep -q "info step " "$W/at_total.log" && fail "a resume at the last step trained"

echo "== 5. changed recipe values are warned about"
mustrun e t2 --steps 4 --ckpt-every 4 --out "$W/e" --mixup 0.8 --smoothing 0.2 --drop-path 0.1 --model-ema \
    --model-ema-decay 0.99
expect_ok recipe t2 --steps 6 --out "$W/e" --resume auto --batch-size 16 --model-ema --model-ema-decay 0.9
for pat in "global batch size changed from 8 \(checkpoint\) to 16" "--mixup changed from 0.8 .*to 0;" \
    "--smoothing changed from 0.2 .*to 0.1;" "--drop-path changed from 0.1 .*to 0;" \
    "weight EMA changed \(checkpoint: --model-ema-decay 0.99"; do
    grep -qE -- "WARN resume: .*$pat" "$W/recipe.log" || fail "no warning matching '$pat'"
done

echo "== 6. a data position inside the global batch (the batch changed mid-epoch): warned"
mustrun p t2 --steps 3 --ckpt-every 3 --out "$W/p"
mustrun p2 t2 --steps 4 --ckpt-every 4 --out "$W/p" --resume auto --batch-size 16
expect_ok inside t2 --steps 5 --out "$W/p" --resume auto --batch-size 16
grep -qE "WARN resume: the checkpoint's data position, sample 40 of epoch 0, is not at a whole global batch of 16" \
    "$W/inside.log" || fail "no warning for a data position inside the global batch"
all_passed resume_guard
