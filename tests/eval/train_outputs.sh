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
# --log-every 3: each logged step's loss is that step's (the same as at --log-every 1) and its
# loss_avg the mean of the steps since the previous logged one, in metrics.jsonl and TensorBoard
# (and --trace-events 40: the trace keeps each rank's first 40 events and the run says so)
run "$WORK/train3.log" "$MPIEXEC" -n 2 "$SV" train $MODEL $COMMON --data "$WORK/data/train" \
    --steps 10 --batch-size 8 --log-every 3 --warmup 2 --lr 3e-3 --out "$WORK/run3" \
    --trace "$WORK/run3/trace.json" --trace-events 40
"$TB_CHECK" "$WORK/run3"
for r in 0 1; do
    grep -q "trace.json lacks the last [0-9]* events of rank $r: its buffer of 40 events filled" "$WORK/train3.log" ||
        { cat "$WORK/train3.log"; echo "FAIL: no warning that rank $r's trace buffer filled"; exit 1; }
done
"$PY" - "$WORK/run3/trace.json" "$WORK/run/trace.json" <<'PYEOF'
import json, sys
def per_rank(path):
    n = {}
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") == "X":
            n[e["pid"]] = n.get(e["pid"], 0) + 1
    return n
small, full = per_rank(sys.argv[1]), per_rank(sys.argv[2])
assert small == {0: 40, 1: 40}, small
assert all(v > 40 for v in full.values()) and len(full) == 2, full
print("ok --trace-events 40: 40 events per rank kept (the default run kept", full, ")")
PYEOF
"$PY" - "$WORK/run/metrics.jsonl" "$WORK/run3/metrics.jsonl" <<'PYEOF'
import json, sys
every = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
logged = [r for r in map(json.loads, open(sys.argv[2])) if "loss" in r]
assert [r["step"] for r in logged] == [1, 3, 6, 9, 10], [r["step"] for r in logged]
prev = 0
for r in logged:
    s = r["step"]
    want = sum(every[k] for k in range(prev + 1, s + 1)) / (s - prev)
    assert r["loss"] == every[s], (s, r["loss"], every[s])
    assert r["loss_avg_steps"] == s - prev, (s, r["loss_avg_steps"])
    assert abs(r["loss_avg"] - want) <= 1e-6 * abs(want), (s, r["loss_avg"], want)
    prev = s
print("ok loss_avg: the mean of the window's step losses at", [r["step"] for r in logged])
PYEOF
# a run directory path of ~1,100 bytes (train accepts up to PATH_MAX less 256): the TensorBoard file
# is written there too (its name had a 1024-byte buffer: dropped with a warning, exit 0)
long="$WORK/$(printf 'd%.0s' $(seq 200))/$(printf 'e%.0s' $(seq 200))/$(printf 'f%.0s' $(seq 200))/$(printf 'g%.0s' $(seq 200))/$(printf 'h%.0s' $(seq 200))"
run "$WORK/long.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 8 --out "$long"
ls "$long"/events.out.tfevents.* >/dev/null 2>&1 || { grep -i tensorboard "$WORK/long.log"; echo "FAIL: no TensorBoard file under a ${#long}-byte --out"; exit 1; }
echo "ok: TensorBoard event file under a ${#long}-byte --out"
run "$WORK/report.log" "$SV" report "$WORK/run" --out "$WORK/report.html"
"$PY" "$HERE/report_check.py" "$WORK/report.html" "$WORK/run/metrics.jsonl" 2
