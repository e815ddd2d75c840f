#!/usr/bin/env bash
# What a short real training run (2 ranks, periodic evaluation, trace) leaves behind:
# - the TensorBoard event file decodes, every record's CRC32C checks out, and its scalars equal
#   metrics.jsonl's (tb_check);
# - eval.json/confusion.csv from the end-of-training evaluation;
# - shardvit report makes a well-formed, self-contained HTML page with one SVG path per curve
#   and the right number of points (report_check.py, stdlib only).
SV=$1
source "$(dirname "$0")/lib.sh"
run "$WORK/train.log" "$MPIEXEC" -n 2 "$SV" train $MODEL $COMMON --data "$WORK/data/train" \
    --val-data "$WORK/data/test" --eval-every 4 --steps 10 --batch-size 8 --log-every 1 --warmup 2 --lr 3e-3 \
    --out "$WORK/run" --trace "$WORK/run/trace.json"
grep -q "eval at step 4" "$WORK/train.log" || { echo "FAIL: no periodic evaluation"; exit 1; }
test -s "$WORK/run/eval.json" && test -s "$WORK/run/confusion.csv" || { echo "FAIL: no eval outputs"; exit 1; }
"$TB_CHECK" "$WORK/run"
run "$WORK/report.log" "$SV" report "$WORK/run" --out "$WORK/report.html"
"$PY" "$HERE/report_check.py" "$WORK/report.html" "$WORK/run/metrics.jsonl" 2
