#!/usr/bin/env bash
# Weights whose values are all finite but whose logits overflow (the head's weights set to
# +-3e38, as a diverged model's can be: every safetensors check passes) give no result:
#   1. eval (1 and 2 ranks) exits 1 with "the model gave non-finite logits (NaN or Inf) for 28 of
#      28 samples", and --out gets no eval.json or confusion.csv (before: top-1 of the NaN rows'
#      "class 0" predictions, exit 0);
#   2. train's evaluation (--val-data) of such a model stops the run the same way;
#   3. predict exits 1 naming the image and the non-finite logit (before: "-nan%" rows, exit 0);
#   4. the unchanged weights still evaluate and predict (exit 0).
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
run "$WORK/train.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 --warmup 1 \
    --out "$WORK/run"
mkdir -p "$WORK/w" "$WORK/big"
run "$WORK/export.log" "$SV" export "$WORK/run" "$WORK/w/model.safetensors"
cp "$WORK/w/config.json" "$WORK/big/" 2>/dev/null || true
# head.weight := +-3e38 (finite fp32 values: their sums overflow)
"$PY" - "$WORK/w/model.safetensors" "$WORK/big/model.safetensors" <<'PYEOF'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n])
t = hdr["head.weight"]
assert t["dtype"] == "F32", t["dtype"]
lo, hi = t["data_offsets"]
base = 8 + n
for i, off in enumerate(range(base + lo, base + hi, 4)):
    b[off:off + 4] = struct.pack("<f", 3e38 if i % 2 == 0 else -3e38)
open(dst, "wb").write(bytes(b))
PYEOF
[ -s "$WORK/big/model.safetensors" ] || fail "could not write the overflowing weights"

run "$WORK/eval_ok.log" "$SV" eval $COMMON --weights "$WORK/w/model.safetensors" --data "$WORK/data/test" \
    --out "$WORK/ok"
[ -s "$WORK/ok/eval.json" ] || fail "the unchanged weights wrote no eval.json"
echo "ok: the unchanged weights evaluate"

expect_fail eval1 120 "$SV" eval $COMMON --weights "$WORK/big/model.safetensors" --data "$WORK/data/test" \
    --out "$WORK/e1"
error_says eval1 "the model gave non-finite logits (NaN or Inf) for 28 of 28 samples"
[ ! -e "$WORK/e1/eval.json" ] && [ ! -e "$WORK/e1/confusion.csv" ] || fail "eval wrote a result: $(ls "$WORK/e1")"
expect_fail eval2 120 "$MPIEXEC" -n 2 "$SV" eval $COMMON --weights "$WORK/big/model.safetensors" \
    --data "$WORK/data/test" --out "$WORK/e2"
error_says eval2 "for 28 of 28 samples"
[ ! -e "$WORK/e2/eval.json" ] || fail "eval at 2 ranks wrote eval.json"

expect_fail train_val 120 "$SV" train $MODEL $COMMON --data "$WORK/data/train" --val-data "$WORK/data/test" \
    --steps 1 --batch-size 6 --warmup 0 --lr 0 --min-lr 0 --init-from "$WORK/big/model.safetensors" --out "$WORK/tv"
error_says train_val "the model gave non-finite logits"
[ ! -e "$WORK/tv/eval.json" ] || fail "train wrote eval.json for non-finite logits"

IMG=$(find "$WORK/data/test" -name '*.jpg' | sort | head -1)
run "$WORK/predict_ok.log" "$SV" predict --threads 1 --topk 2 --weights "$WORK/w/model.safetensors" "$IMG"
expect_fail predict 120 "$SV" predict --threads 1 --topk 2 --weights "$WORK/big/model.safetensors" "$IMG"
error_says predict "$IMG: the model gave a non-finite logit"
if grep -q "nan%" "$WORK/predict.log"; then fail "predict printed NaN probabilities"; fi
echo PASS
