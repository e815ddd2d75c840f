#!/usr/bin/env bash
# shardvit report of a short --model-ema run with periodic evaluation: the EMA series are drawn
# beside the raw ones with one point per evaluation record, and the values in metrics.jsonl
# (raw and EMA top-1 / top-5 / loss at every evaluated step) and eval.json's "ema" are in the
# page's tables (report_ema_check.py); the page is well-formed and self-contained (report_check.py).
SV=$1
source "$(dirname "$0")/lib.sh"
run "$WORK/train.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --val-data "$WORK/data/test" \
    --eval-every 3 --steps 9 --batch-size 8 --log-every 1 --warmup 2 --lr 3e-3 --model-ema --model-ema-decay 0.8 \
    --out "$WORK/run" --trace "$WORK/run/trace.json"
grep -q "eval (weight EMA) at step 3" "$WORK/train.log" || { echo "FAIL: no periodic EMA evaluation"; exit 1; }
run "$WORK/report.log" "$SV" report "$WORK/run" --out "$WORK/report.html"
"$PY" "$HERE/report_check.py" "$WORK/report.html" "$WORK/run/metrics.jsonl" 1
"$PY" "$HERE/report_ema_check.py" "$WORK/report.html" "$WORK/run"
# a run without --model-ema gets no EMA columns or curves
run "$WORK/train2.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --val-data "$WORK/data/test" \
    --eval-every 3 --steps 6 --batch-size 8 --log-every 1 --warmup 2 --lr 3e-3 --out "$WORK/run2"
run "$WORK/report2.log" "$SV" report "$WORK/run2" --out "$WORK/report2.html"
"$PY" "$HERE/report_ema_check.py" "$WORK/report2.html" "$WORK/run2" --no-ema
