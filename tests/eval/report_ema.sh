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
# a relative --out / --ckpt-dir is recorded as an absolute path in config.toml: a report made
# from another working directory still knows the run's checkpoint root and refuses to write
# into it, and the run's own config.toml continues it in place from there
RUNS="$WORK/c\"w#d" # config.toml records paths with quotes and #
mkdir -p "$RUNS" "$WORK/elsewhere"
(cd "$RUNS" && run "$WORK/train3.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" \
    --val-data "$WORK/data/test" --steps 3 --batch-size 8 --warmup 1 --out run3 --ckpt-dir ck3)
CWD=$(cd "$RUNS" && pwd -P)
Q=${CWD//\"/\\\"} # as config.toml writes it (core/kv.h: a quote is escaped)
for kv in "out = \"$Q/run3\"" "ckpt-dir = \"$Q/ck3\""; do
    grep -Fqx "$kv" "$RUNS/run3/config.toml" ||
        { echo "FAIL: config.toml does not record $kv"; grep "^out\|^ckpt-dir" "$RUNS/run3/config.toml"; exit 1; }
done
# refuses_ckpt_root NAME WHAT: a report of run3 made from $WORK/elsewhere with --out in run3's
# checkpoint root ck3 fails, saying so, and writes nothing there (output in $WORK/NAME.log; WHAT
# describes the failure)
refuses_ckpt_root() {
    local log="$WORK/$1.log" what=$2 rc=0
    (cd "$WORK/elsewhere" && timeout 60 "$SV" report "$RUNS/run3" --out "$RUNS/ck3/report.html") >"$log" 2>&1 || rc=$?
    if [ "$rc" = 0 ] || ! grep -q "inside the run's checkpoint directory" "$log" || [ -e "$RUNS/ck3/report.html" ]; then
        echo "FAIL: $what (exit $rc)"
        cat "$log"
        exit 1
    fi
}
refuses_ckpt_root report3 "a report made elsewhere wrote into the run's relative --ckpt-dir"
(cd "$WORK/elsewhere" && run "$WORK/report4.log" "$SV" report "$RUNS/run3" --out report3.html)
(cd "$WORK/elsewhere" && run "$WORK/train4.log" "$SV" train --config "$RUNS/run3/config.toml" --steps 4 \
    --resume auto)
grep -qF "resumed from $CWD/ck3/step_00000003" "$WORK/train4.log" || { echo "FAIL: --config did not resume in place"; exit 1; }
[ ! -e "$WORK/elsewhere/run3" ] && [ ! -e "$WORK/elsewhere/ck3" ] ||
    { echo "FAIL: --config from elsewhere wrote a second run directory"; ls -R "$WORK/elsewhere"; exit 1; }
# a config.toml from before --out / --ckpt-dir were recorded as absolute paths holds them as
# given (relative to where train ran): report takes the checkpoint root from there, not from its
# own working directory
sed -i -e 's|^out = .*|out = "./run3/"|' -e 's|^ckpt-dir = .*|ckpt-dir = "ck3"|' "$RUNS/run3/config.toml"
refuses_ckpt_root report5 "a report of a run that recorded a relative --ckpt-dir wrote into its checkpoint root"
# a config.toml whose ckpt-dir is given twice cannot say where the checkpoints are: report refuses
# it naming the key, rather than guessing RUN/checkpoints and leaving the real root unprotected
printf 'ckpt-dir = "%s/ck3"\n' "$Q" >>"$RUNS/run3/config.toml"
rc=0
timeout 60 "$SV" report "$RUNS/run3" --out "$WORK/report6.html" >"$WORK/report6.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] || ! grep -q "ckpt-dir" "$WORK/report6.log"; then
    echo "FAIL: report read a config.toml with ckpt-dir given twice (exit $rc)"
    cat "$WORK/report6.log"
    exit 1
fi
echo "report_ema: ok"
