#!/usr/bin/env bash
# A head of more than 1024 classes (ImageNet-21k has 21,843) keeps no confusion matrix: its K*K
# counters were staged in every run's arena (3.6 GiB per rank at 21,843 classes, evaluation or
# not). Asserted:
#   1. plan of vit-b16 with 21,843 classes: the input batch (images, labels, soft targets, the
#      metric staging) stays under 64 MiB (it was 3,645.7 MiB);
#   2. train --val-data with --num-classes 1100 on 4-class data: eval.json with per-class counts
#      for all 1100 classes and the log's "no confusion.csv" line, no confusion.csv; report reads
#      the run directory without it;
#   3. eval --out of those weights: the same, and an earlier evaluation's confusion.csv in --out
#      is removed (it would read as this evaluation's);
#   4. at 4 classes confusion.csv is still written (the matrix is kept up to 1024 classes).
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
MANY="--model vit-32 --img 32 --patch 8 --dim 32 --depth 2 --heads 2 --num-classes 1100"
run "$WORK/plan.log" "$SV" plan --model vit-b16 --num-classes 21843 --batch-size 64 --world 8
mib=$(awk '/input batch/ {print $3; exit}' "$WORK/plan.log")
[ -n "$mib" ] || fail "plan printed no input batch line"
awk -v m="$mib" 'BEGIN {exit !(m < 64)}' || fail "input batch of $mib MiB at 21,843 classes"
echo "ok: plan at 21,843 classes: input batch $mib MiB"

run "$WORK/train.log" "$SV" train $MANY $COMMON --data "$WORK/data/train" --val-data "$WORK/data/test" --steps 2 \
    --batch-size 6 --warmup 1 --out "$WORK/run"
[ -s "$WORK/run/eval.json" ] || fail "train wrote no eval.json"
[ ! -e "$WORK/run/confusion.csv" ] || fail "train wrote a confusion.csv for 1100 classes"
grep -q "no confusion.csv: 1100 classes" "$WORK/train.log" || fail "no line about the missing confusion.csv"
"$PY" - "$WORK/run/eval.json" <<'PYEOF' || fail "eval.json of 1100 classes"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["num_classes"] == 1100 and len(d["per_class"]) == 1100, (d["num_classes"], len(d["per_class"]))
assert d["num_samples"] == 28 and sum(c["total"] for c in d["per_class"]) == 28
PYEOF
run "$WORK/report.log" "$SV" report "$WORK/run"
echo "ok: 1100 classes: eval.json, no confusion.csv, report reads the run"

mkdir -p "$WORK/w"
run "$WORK/export.log" "$SV" export "$WORK/run" "$WORK/w/model.safetensors"
run "$WORK/eval4.log" "$SV" eval $COMMON --weights "$WORK/w/model.safetensors" --data "$WORK/data/test" \
    --out "$WORK/e"
[ -s "$WORK/e/eval.json" ] && [ ! -e "$WORK/e/confusion.csv" ] || fail "eval --out: $(ls "$WORK/e")"
grep -q "wrote $WORK/e/eval.json\$" "$WORK/eval4.log" || fail "eval does not say it wrote eval.json alone"
if grep -q "wrote .*confusion.csv" "$WORK/eval4.log"; then fail "eval says it wrote a confusion.csv"; fi
# an earlier evaluation (4 classes) in the same --out: its confusion.csv is removed
run "$WORK/train4.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 1 --batch-size 6 --warmup 0 \
    --out "$WORK/run4"
run "$WORK/eval_small.log" "$SV" eval $COMMON --ckpt "$WORK/run4" --data "$WORK/data/test" --out "$WORK/e2"
[ -s "$WORK/e2/confusion.csv" ] || fail "4 classes: no confusion.csv"
run "$WORK/eval_big.log" "$SV" eval $COMMON --weights "$WORK/w/model.safetensors" --data "$WORK/data/test" \
    --out "$WORK/e2"
[ ! -e "$WORK/e2/confusion.csv" ] || fail "the earlier evaluation's confusion.csv is still in --out"
grep -q '"num_classes": 1100' "$WORK/e2/eval.json" || fail "eval.json is not the new evaluation's"
echo PASS
