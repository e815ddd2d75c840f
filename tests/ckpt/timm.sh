#!/usr/bin/env bash
# timm round trip through an independent PyTorch reader (timm_check.py): export names/shapes,
# config.json, logits of a PyTorch ViT built from the export against shardvit's (--dump-logits),
# bf16 export rounding, import of a file written by Python (bitwise), and a fine-tuning import
# with another head and another patch grid (pos_embed resampled as timm does). Skipped (77)
# when /usr/bin/python3 cannot import torch and numpy.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
PYT=/usr/bin/python3
"$PYT" -c "import torch, numpy" 2>/dev/null || { echo "SKIP: /usr/bin/python3 cannot import torch + numpy"; exit 77; }
CHECK=("$PYT" "$HERE/../ckpt/timm_check.py")
fail() { echo "FAIL: $*"; exit 1; }
run t 2 --steps 3 --dump-logits "$WORK/logits.safetensors"
mkdir -p "$WORK/f32" "$WORK/bf16"
"$SHARDVIT" export "$WORK/t" "$WORK/f32/model.safetensors" >/dev/null 2>&1 || fail "export fp32"
"$SHARDVIT" export "$WORK/t" "$WORK/bf16/model.safetensors" --dtype bf16 >/dev/null 2>&1 || fail "export bf16"
"${CHECK[@]}" check "$WORK/f32/model.safetensors" "$WORK/logits.safetensors" "$WORK/bf16/model.safetensors" || fail "export check"
# a file written by Python for the same model seeds the weights bit for bit
"${CHECK[@]}" write "$WORK/py.safetensors" --img 28 --patch 4 --chans 1 --classes 10 --dim 36 --depth 3 --heads 3 || exit 1
"$SHARDVIT" import "$WORK/py.safetensors" --dim 36 --depth 3 --heads 3 >/dev/null || fail "import check"
run imp 2 --steps 0 --init-from "$WORK/py.safetensors"
"${CHECK[@]}" params "$WORK/py.safetensors" "$WORK/imp.bin" || fail "import not bitwise"
# the export of a run imports back to the same parameters (shardvit -> safetensors -> shardvit)
run back 3 --steps 0 --init-from "$WORK/f32/model.safetensors"
cmp "$WORK/back.bin" "$WORK/t.bin" || fail "export -> import round trip differs"
grep -q "records num_heads" "$WORK/back.log" && fail "head-count warning with the recorded count"
# another head count loads (timm allows it) but is not silent: config.json's num_heads is named
run heads2 2 --steps 0 --heads 2 --init-from "$WORK/f32/model.safetensors"
grep -q "WARN.*config.json records num_heads 3, this run's model has 2 heads" "$WORK/heads2.log" ||
    fail "another --heads than config.json's num_heads not warned"
# fine-tuning: 5 classes at 28x28 (grid 7) into 10 classes at 32x32 (grid 8)
"${CHECK[@]}" write "$WORK/g7.safetensors" --img 28 --patch 4 --chans 1 --classes 5 --dim 36 --depth 3 --heads 3 || exit 1
run g8 2 --steps 0 --img 32 --init-from "$WORK/g7.safetensors"
grep -q "head.weight is (5, 36) in .* but (10, 36) here" "$WORK/g8.log" || fail "new head not logged"
run g8fresh 2 --steps 0 --img 32
"${CHECK[@]}" resampled "$WORK/g7.safetensors" "$WORK/g8.bin" "$WORK/g8fresh.bin" --img 32 --patch 4 --chans 1 \
    --classes 10 --dim 36 --heads 3 || fail "resampled import"
# shapes that cannot be adapted are refused, naming the tensor
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --dim 48 --steps 0 --init-from "$WORK/py.safetensors" \
    >"$WORK/bad.log" 2>&1 || rc=$?
test $rc -eq 1 && grep -q "error: .*py.safetensors: tensor patch_embed.proj.weight has shape (36, 1, 4, 4) but this model needs (48, 1, 4, 4)" \
    "$WORK/bad.log" || fail "shape mismatch not reported (exit $rc)"
echo "timm: all passed"
