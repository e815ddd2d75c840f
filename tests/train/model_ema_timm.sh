#!/usr/bin/env bash
# train --model-ema against timm itself ($SHARDVIT_TEST_PYTHON, the test venv with timm + torch;
# skipped, 77, without): the decay of every update from timm's ModelEmaV3.get_decay (fixed and
# --model-ema-warmup, with a skipped step) gives shardvit's EMA bitwise (tests/train/ema_check.py
# recur --timm), timm's own ModelEmaV3.update replayed over the same weights matches to 1e-6
# (torch's lerp_ may fuse), and timm loads `export --ema` (create_model + load_state_dict strict).
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
source "$HERE/../train/ema_lib.sh"
TPY=${SHARDVIT_TEST_PYTHON:-}
[ -n "$TPY" ] || { echo "SKIP: SHARDVIT_TEST_PYTHON is not set (the test venv with timm)"; exit 77; }
"$TPY" -c "import timm, torch, safetensors.torch" 2>/dev/null ||
    { echo "SKIP: $TPY cannot import timm + torch + safetensors"; exit 77; }
TCHECK=("$TPY" "$HERE/../train/ema_check.py")
run p0 1 --steps 0 $CONST
run fix 2 --steps $K $CONST --model-ema --model-ema-decay 0.75 --ckpt-every 1 --keep 0
exports "$WORK/fix.x" fix $K
echo "== decay 0.75, timm's get_decay and update"
"${TCHECK[@]}" recur "$WORK/p0.bin" "$WORK/fix.x" $K --decay 0.75 --timm || fail "timm, fixed decay"
run wu 2 --steps $K $CONST --model-ema --model-ema-warmup --ckpt-every 1 --keep 0 --debug-nan-step 2
exports "$WORK/wu.x" wu $K
echo "== warmup, step 2 skipped, timm's get_decay and update"
"${TCHECK[@]}" recur "$WORK/p0.bin" "$WORK/wu.x" $K --decay 0.9998 --warmup --skip 2 --timm || fail "timm, warmup"
mkdir -p "$WORK/tx"
"$SHARDVIT" export "$WORK/fix" "$WORK/tx/model.safetensors" --ema >/dev/null 2>&1 || fail "export --ema"
"${TCHECK[@]}" timm "$WORK/tx/model.safetensors" || fail "timm loading export --ema"
echo "model_ema_timm: all passed"
