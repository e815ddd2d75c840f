#!/usr/bin/env bash
# Corrupt files inside an ImageFolder training set made by `shardvit prep synthetic`: one JPEG
# truncated to half its size, one replaced by a text file still named .jpg, in different
# classes, each followed (in sorted order) by a good file of the same class.
# Asserted:
#   1. one rank, one epoch (every sample visited once): training completes, the log names each
#      bad file exactly once ("skipping unreadable image"), and the summary reports at least 2
#      substituted samples (it also counts substitutions in batches prefetched past the end);
#   2. the loss sequence is bit-identical to a run on a copy of the set in which each bad file
#      was replaced by the file that substitutes it (the next sample of its class: same image,
#      same label, and the augmentation stream is keyed by the original index either way);
#   3. two ranks on the damaged set: completes with its summary;
#   4. a set whose every image is unreadable (fewer than the 64 substitution tries): exit 1,
#      the message says every image of the set (its count) is unreadable.
# Usage: corrupt_images.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
"$SHARDVIT" prep synthetic --out "$WORK/set" --classes 3 --per-class 8 --test-per-class 1 --width 40 \
    --height 36 --seed 3 >"$WORK/prep.log" 2>&1 || { FAIL_LOGS=("$WORK/prep.log"); fail "prep failed"; }
cp -r "$WORK/set" "$WORK/good"
bad=0
for cls in class_000 class_002; do
    files=($(ls "$WORK/set/train/$cls"))
    [ ${#files[@]} -ge 4 ] || fail "prep made too few files in $cls"
    victim=${files[1]} subst=${files[2]}
    if [ $cls = class_000 ]; then
        sz=$(stat -c %s "$WORK/set/train/$cls/$victim")
        head -c $((sz / 2)) "$WORK/good/train/$cls/$victim" >"$WORK/set/train/$cls/$victim"
    else
        echo "this is not a JPEG" >"$WORK/set/train/$cls/$victim"
    fi
    cp "$WORK/set/train/$cls/$subst" "$WORK/good/train/$cls/$victim"
    bad=$((bad + 1))
done
# 24 samples, batch 8: three steps make exactly one epoch
ARGS="--model vit-28 --img 28 --in-chans 3 --dim 36 --depth 2 --heads 3 --batch-size 8 --steps 3 --log-every 1 \
 --seed 5 --workers 2 --comm-timeout 30"
FAIL_LOGS=("$WORK/bad.log" "$WORK/good.log" "$WORK/bad2.log")
timeout 120 "$MPIEXEC" -n 1 "$SHARDVIT" train $ARGS --data "$WORK/set/train" --out "$WORK/bad" >"$WORK/bad.log" 2>&1 ||
    fail "training on the damaged set failed"
timeout 120 "$MPIEXEC" -n 1 "$SHARDVIT" train $ARGS --data "$WORK/good/train" --out "$WORK/goodrun" >"$WORK/good.log" 2>&1 ||
    fail "training on the repaired set failed"
n_warn=$(grep -c "skipping unreadable image" "$WORK/bad.log")
[ "$n_warn" -eq $bad ] || fail "$n_warn unreadable-image messages for $bad bad files"
# the summary counts substitutions the loader prepared, prefetched batches of the next epoch
# included, so at least one per bad file
subst=$(grep -o "substituted samples [0-9]*" "$WORK/bad.log" | grep -o "[0-9]*$")
[ "${subst:-0}" -ge $bad ] || fail "summary reports ${subst:-no} substituted samples for $bad bad files"
grep -q "substituted samples 0" "$WORK/good.log" || fail "repaired set reports substitutions"
metric_values "$WORK/bad/metrics.jsonl" loss >"$WORK/bad.loss"
metric_values "$WORK/goodrun/metrics.jsonl" loss >"$WORK/good.loss"
[ "$(wc -l <"$WORK/bad.loss")" -eq 3 ] || fail "expected 3 logged steps"
cmp -s "$WORK/bad.loss" "$WORK/good.loss" || { paste "$WORK/bad.loss" "$WORK/good.loss"; fail "loss sequences differ"; }
echo "ok: $bad bad files logged once each, $subst substitutions counted; losses equal the repaired set's: $(tr '\n' ' ' <"$WORK/bad.loss")"
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $ARGS --data "$WORK/set/train" --out "$WORK/bad2" >"$WORK/bad2.log" 2>&1 ||
    fail "2-rank training on the damaged set failed"
grep -q "done: final loss" "$WORK/bad2.log" || fail "no final summary"
echo "ok: 2 ranks complete on the damaged set"
cp -r "$WORK/set" "$WORK/allbad"
for f in "$WORK"/allbad/train/*/*.jpg; do echo "not a JPEG" >"$f"; done
rc=0
timeout 120 "$MPIEXEC" -n 1 "$SHARDVIT" train $ARGS --data "$WORK/allbad/train" >"$WORK/allbad.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/allbad.log")
[ $rc = 1 ] || fail "every image unreadable: exit $rc, expected 1"
grep -q "every image of the data set (24) is unreadable" "$WORK/allbad.log" || fail "every image unreadable: message"
echo "ok: every image unreadable: exit 1, named as such"
echo PASS
