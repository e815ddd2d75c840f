#!/usr/bin/env bash
# shardvit's export loaded by timm itself (PyPI's timm, tests/ckpt/timm_real.py, run with
# $SHARDVIT_TEST_PYTHON, the test venv of scripts/test_venv.sh, else /usr/bin/python3): a tiny
# ViT trained 3 steps at world 2 (tests/fsdp/lib.sh), `shardvit export`, then
# timm.create_model(..., pretrained=False, <config.json's shape>) + load_state_dict(strict=True)
# and timm's fp32 logits against shardvit's (--dump-logits); config.json's pretrained_cfg resolved
# by timm's resolve_data_config (printed). Two shapes: vit-28 (1 channel, mlp_ratio 4) and
# 32x32 RGB with mlp_ratio 2, 4 heads, and the timm options LayerScale (ls1/ls2.gamma), average
# pooling (fc_norm), class_token=False, register tokens (reg_tokens) and no_embed_class. Skipped
# (77) only when timm/safetensors/torch are not importable. (tests/ckpt/timm.sh checks the same
# export against an independent PyTorch twin.)
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
need_timm
fail() { echo "FAIL: $*"; exit 1; }
check() {  # check NAME TRAIN_FLAGS...
    local name=$1
    shift
    run "$name" 2 --steps 3 --dump-logits "$WORK/$name-logits.safetensors" "$@"
    mkdir -p "$WORK/$name-export"
    "$SHARDVIT" export "$WORK/$name" "$WORK/$name-export/model.safetensors" >"$WORK/$name-export.log" 2>&1 ||
        { cat "$WORK/$name-export.log"; fail "export $name"; }
    echo "== $name ($*)"
    "$PYT" "$HERE/../ckpt/timm_real.py" "$WORK/$name-export/model.safetensors" "$WORK/$name-logits.safetensors" ||
        fail "timm on $name"
}
check gray
check rgb --img 32 --in-chans 3 --dim 32 --heads 4 --mlp-ratio 2
# timm's VisionTransformer options (trained with the recipe's regularisation, which is off in
# the dumped evaluation forward): LayerScale + average pooling (fc_norm), and no class token
check ls_avg --layer-scale 0.1 --global-pool avg --drop-path 0.2 --proj-drop 0.1 --drop 0.1
check no_cls --img 32 --in-chans 3 --dim 32 --heads 4 --class-token 0 --global-pool avg --layer-scale 1e-5 --bce-loss
# register tokens (timm reg_tokens) after the class token, and without one (average pooling skips them)
check reg --reg-tokens 2
check reg_no_cls --img 32 --in-chans 3 --dim 32 --heads 4 --class-token 0 --global-pool avg --reg-tokens 3
# timm's vit_*_reg4_gap_* layout: no class token, 4 registers, pos_embed for the patches only
# (no_embed_class), LayerScale, average pooling; and no_embed_class with a class token alone
check reg4_gap --img 32 --in-chans 3 --dim 32 --heads 4 --class-token 0 --global-pool avg --reg-tokens 4 \
    --no-embed-class --layer-scale 1e-5
check nec_cls --no-embed-class
echo "timm_real: all passed"
