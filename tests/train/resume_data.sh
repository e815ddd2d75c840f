#!/usr/bin/env bash
# --resume continues on the data set the checkpoint was trained on (docs/training.md "Resuming"),
# through real 2-rank runs on real ImageFolder data: every checkpoint records its training data
# set (index.json train_data: sample count and fingerprint), and
#  1. a resume on another data set with the same class names (more samples; the same number of
#     samples with other labels) is refused with exit 2 naming both, the run directory unchanged;
#  2. --resume-data-changed turns the refusal into a warning and the run continues;
#  3. the same data set resumes without a word, and a resharded checkpoint records the same data
#     set (and is refused on the other one alike);
#  4. a checkpoint without train_data (written before it existed) resumes with a line saying the
#     data cannot be checked, unless its data position lies past the end of --data (refused;
#     with --resume-data-changed the next epoch begins);
#  5. --resume-data-changed without --resume is a usage error.
# HOSTILE_KEEP_GOING=1 runs every check (to show that each fails on a build without the fix).
SHARDVIT=$1
source "$(dirname "$0")/cli_lib.sh"
files() { tree_sum "$1/metrics.jsonl" "$1/config.toml" "$1/classes.txt" "$1/checkpoints"; }
mustrun() { # NAME CMD...: a set-up run that must exit 0, else the test cannot go on
    local name=$1 rc=0
    shift
    "$@" >"$W/$name.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: set-up run $name: exit $rc"; tail -20 "$W/$name.log"; exit 1; }
}
refused2() { # NAME PATTERN CMD...: CMD exits 2 (a start-up refusal) and prints PATTERN
    local name=$1 pat=$2 rc=0
    shift 2
    "$@" >"$W/$name.log" 2>&1 || rc=$?
    FAIL_LOGS=("$W/$name.log")
    [ $rc -eq 2 ] || { fail "$name: exit status $rc (want 2)"; return; }
    grep -Eq -- "$pat" "$W/$name.log" || { fail "$name: no message matching '$pat'"; return; }
    echo "ok $name: $(grep -Em1 -- "$pat" "$W/$name.log" | cut -c1-220)"
}
prep() { # NAME PER_CLASS SEED: 4 classes of 28x28 images in $W/NAME/train
    "$SHARDVIT" prep synthetic --out "$W/$1" --classes 4 --per-class "$2" --test-per-class 1 --width 28 \
        --height 28 --seed "$3" >"$W/prep_$1.log" 2>&1 || { FAIL_LOGS=("$W/prep_$1.log"); fail "prep $1"; exit 1; }
}
train_data() { "$PY" -c "import json,sys; t=json.load(open(sys.argv[1]))['train_data']; print(t['samples'], t['fingerprint'])" "$1/index.json"; }

prep syn 16 1  # 64 images
prep syn2 20 9 # 80 images, the same class names
# the same 64 files, one of them moved to another class: same count, other labels
cp -r "$W/syn/train" "$W/relabel"
moved=$(find "$W/relabel/class_000" -name '*.jpg' | sort | head -1)
mv "$moved" "$W/relabel/class_001/"

mustrun a t2 --steps 4 --ckpt-every 2 --out "$W/a" --data "$W/syn/train"
CK=$W/a/checkpoints
rec=$(train_data "$CK/step_00000004" 2>/dev/null) || rec="none"
case $rec in "64 "????????????????) echo "ok recorded: train_data $rec" ;; *) fail "index.json train_data: $rec" ;; esac

echo "== 1. another data set with the same class names: refused"
before=$(files "$W/a")
refused2 more_samples "--data $W/syn2/train is not the data set the checkpoint $CK/step_00000004 was trained on \(the checkpoint was trained on 64 samples, --data has 80\).*skipping or repeating.*--resume-data-changed" \
    t2 --steps 8 --out "$W/a" --resume auto --data "$W/syn2/train"
test "$before" = "$(files "$W/a")" || fail "the refused resume changed the run directory"
refused2 other_labels "not the data set .*the same number of samples \(64\), but other files or labels" \
    t2 --steps 8 --out "$W/a" --resume auto --data "$W/relabel"
test "$before" = "$(files "$W/a")" || fail "the refused resume (other labels) changed the run directory"

echo "== 2. --resume-data-changed: warned, continued"
cp -r "$W/a" "$W/b"
expect_ok changed t2 --steps 8 --out "$W/b" --resume auto --data "$W/syn2/train" --resume-data-changed
grep -Eq "WARN resume: --data $W/syn2/train is not the data set .*64 samples, --data has 80.*--resume-data-changed" \
    "$W/changed.log" || { FAIL_LOGS=("$W/changed.log"); fail "no warning for the deliberate data change"; }
grep -q "resume: step 4" "$W/changed.log" || fail "--resume-data-changed did not resume step 4"
rec=$(train_data "$W/b/checkpoints/step_00000008" 2>/dev/null) || rec="none"
case $rec in "80 "*) ;; *) fail "the continued run records train_data $rec, want the 80 samples" ;; esac

echo "== 3. the same data set resumes; a resharded checkpoint records it too"
"$SHARDVIT" reshard "$CK/step_00000004" "$W/rs/step_00000004" --world 3 >"$W/reshard.log" 2>&1 ||
    { FAIL_LOGS=("$W/reshard.log"); fail "reshard"; }
test "$(train_data "$W/rs/step_00000004" 2>/dev/null)" = "$(train_data "$CK/step_00000004" 2>/dev/null)" ||
    fail "the resharded checkpoint does not carry train_data over"
refused2 resharded_other "--data $W/syn2/train is not the data set the checkpoint $W/rs/step_00000004 was trained on" \
    t2 --steps 8 --out "$W/fork" --resume "$W/rs/step_00000004" --data "$W/syn2/train"
expect_ok same t2 --steps 8 --out "$W/a" --resume auto --data "$W/syn/train"
grep -q "resume: step 4" "$W/same.log" || fail "the same data did not resume"
grep -q "not the data set\|cannot be checked" "$W/same.log" && fail "the same data set was warned about"

echo "== 4. a checkpoint that records no data set"
mustrun o t2 --steps 2 --ckpt-every 2 --out "$W/o" --data "$W/syn/train"
"$PY" - "$W/o/checkpoints/step_00000002/index.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.pop("train_data", None)
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
prep small 3 5 # 12 images: the checkpoint's position (sample 16) lies past their end
before=$(files "$W/o")
refused2 old_past_end "records no data set, but its data position, sample 16, is past the end of the 12 samples" \
    t2 --steps 4 --out "$W/o" --resume auto --data "$W/small/train"
test "$before" = "$(files "$W/o")" || fail "the refused resume (old checkpoint) changed the run directory"
cp -r "$W/o" "$W/o2"
expect_ok old_past_end_ok t2 --steps 4 --out "$W/o2" --resume auto --data "$W/small/train" --resume-data-changed
grep -q "data position, sample 16 of epoch 0, is past the 12 samples of this data set: continuing at the start of epoch 1" \
    "$W/old_past_end_ok.log" || { FAIL_LOGS=("$W/old_past_end_ok.log"); fail "a position past the end did not move to the next epoch"; }
expect_ok old t2 --steps 4 --out "$W/o" --resume auto --data "$W/syn/train"
grep -q "records no training data set .*cannot be checked" "$W/old.log" ||
    { FAIL_LOGS=("$W/old.log"); fail "no line saying the old checkpoint's data cannot be checked"; }
grep -q "resume: step 2" "$W/old.log" || fail "the old checkpoint did not resume"

echo "== 5. --resume-data-changed needs --resume"
refused2 flag_alone "--resume-data-changed applies to --resume only" \
    t2 --steps 2 --out "$W/n" --data "$W/syn/train" --resume-data-changed
all_passed resume_data
