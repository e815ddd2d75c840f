#!/usr/bin/env bash
# Weights used at another resolution / patch size, against timm itself (tests/eval/eval_resize.py
# with $SHARDVIT_TEST_PYTHON; skipped, 77, without timm): a random timm ViT at img 32 / patch 8,
# and the same weights loaded by timm's checkpoint_filter_fn into img 48, img 16, patch 4 and
# img 48 + patch 4 models (timm's defaults: bicubic, antialias). shardvit predict/eval on the
# original file with --img/--patch must equal shardvit on timm's resampled file (log-probabilities
# within 1e-5, eval.json loss within 1e-6 relative and the same counts, at 2 ranks), and must
# differ from a file resampled without antialias (the control); train --init-from at img 48 +
# patch 4 must seed the parameters timm computes (1e-5); import accepts the file for that model;
# eval --ckpt at another --img is refused, pointing to export + --weights.
SV=$1
source "$(dirname "$0")/lib.sh"
PYT=${SHARDVIT_TEST_PYTHON:-}
if [ -z "$PYT" ] || ! "$PYT" -c "import timm, safetensors.torch" 2>/dev/null; then
    echo "SKIP: SHARDVIT_TEST_PYTHON (a python with timm + safetensors) is not set or cannot import them"
    exit 77
fi
ER=("$PYT" "$HERE/eval_resize.py")
fail() { echo "FAIL: $*"; exit 1; }
"${ER[@]}" write "$WORK/w" || fail "timm reference files"
SHAPE="--dim 32 --depth 2 --heads 2 --num-classes 4"
mapfile -t img < <(find "$WORK/data/test" -name '*.jpg' | sort | head -8)
predict() { # predict OUT FLAGS...: --json --topk 0 lines
    local out=$1
    shift
    run "$out.log" "$SV" predict --topk 0 --json --threads 1 "$@" "${img[@]}"
    grep '^{' "$out.log" >"$out" || fail "no predictions in $out.log"
}
for c in "img48:--img 48" "img16:--img 16" "p4:--patch 4" "both:--img 48 --patch 4"; do
    name=${c%%:*}
    flags=${c#*:}
    predict "$WORK/$name-sv.jsonl" --weights "$WORK/w/src/model.safetensors" $flags
    predict "$WORK/$name-timm.jsonl" --weights "$WORK/w/$name/model.safetensors"
    grep -q "weights: pos_embed grid 4x4 resampled" "$WORK/$name-sv.jsonl.log" || fail "$name: no resampling logged"
    "${ER[@]}" same "$WORK/$name-sv.jsonl" "$WORK/$name-timm.jsonl" || fail "predict $flags differs from timm's resampling"
done
predict "$WORK/plain48.jsonl" --weights "$WORK/w/plain48/model.safetensors"
"${ER[@]}" same "$WORK/img48-sv.jsonl" "$WORK/plain48.jsonl" --differ || fail "the control without antialias matches"
# eval at 2 ranks: --img 48 on the original weights = timm's img 48 file
run "$WORK/e1.log" "$MPIEXEC" -n 2 "$SV" eval --weights "$WORK/w/src/model.safetensors" --img 48 \
    --data "$WORK/data/test" --batch-size 10 --out "$WORK/e1" $COMMON
run "$WORK/e2.log" "$MPIEXEC" -n 2 "$SV" eval --weights "$WORK/w/img48/model.safetensors" \
    --data "$WORK/data/test" --batch-size 10 --out "$WORK/e2" $COMMON
"$PYT" - "$WORK/e1/eval.json" "$WORK/e2/eval.json" <<'PYEOF' || fail "eval --img 48 differs from timm's resampling"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("num_samples", "top1_correct", "top5_correct", "per_class"):
    assert a[k] == b[k], (k, a[k], b[k])
rel = abs(a["loss"] - b["loss"]) / abs(b["loss"])
print(f"eval --img 48: loss {a['loss']:.7f}, timm-resampled {b['loss']:.7f} (relative {rel:.1e}, tol 1e-6)")
assert rel <= 1e-6
PYEOF
# training seeded at img 48 + patch 4
run "$WORK/t.log" "$SV" train --data "$WORK/data/train" --model vit-32 --img 48 --patch 4 $SHAPE --threads 1 \
    --steps 0 --batch-size 8 --init-from "$WORK/w/src/model.safetensors" --save-params "$WORK/both.bin" --out "$WORK/t"
"${ER[@]}" params "$WORK/w/both/model.safetensors" "$WORK/both.bin" || fail "train --init-from differs from timm"
run "$WORK/import.log" "$SV" import "$WORK/w/src/model.safetensors" --model vit-32 --img 48 --patch 4 $SHAPE
grep -q "32 of 32 tensors from the file" "$WORK/import.log" || fail "import: $(cat "$WORK/import.log")"
# a checkpoint runs at its own shape: another --img is refused with the way to do it (exit 2)
rc=0
"$SV" eval --ckpt "$WORK/t" --img 32 --data "$WORK/data/test" $COMMON --out "$WORK/e3" >"$WORK/e3.log" 2>&1 || rc=$?
test $rc -eq 2 && grep -q "\-\-img 32: checkpoint .* holds a model of img 48 patch 4; .* export it" "$WORK/e3.log" ||
    fail "eval --ckpt --img (exit $rc): $(tail -1 "$WORK/e3.log")"
echo "eval_resize: all passed"
