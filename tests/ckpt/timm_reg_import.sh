#!/usr/bin/env bash
# timm -> shardvit for register tokens and no_embed_class (tests/ckpt/timm_reg_import.py): a
# model of timm's vit_*_reg4_gap_* layout made and perturbed by timm itself, saved without a
# config.json, is
# - run by shardvit (`train --init-from ... --steps 0 --dump-logits`, world 2, the layout given by
#   flags) with timm's logits on the same images;
# - evaluated by `shardvit eval --weights` with no architecture flags: the layout read off the
#   tensors (no cls_token, reg_token (1, 4, D), a 16-row pos_embed: no_embed_class) gives the same
#   eval.json as the explicit flags;
# and the same file with its registers dropped is refused by --init-from naming --reg-tokens.
# Skipped (77) only when $SHARDVIT_TEST_PYTHON (else /usr/bin/python3) cannot import timm.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
need_timm
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$WORK/t"
W="$WORK/t/model.safetensors"
"$PYT" "$HERE/../ckpt/timm_reg_import.py" make "$W" || fail "timm could not make the model"
ARCH="--img 32 --in-chans 3 --patch 8 --dim 32 --depth 2 --heads 4 --class-token 0 --global-pool avg --reg-tokens 4
      --no-embed-class --layer-scale 1e-5"
run imp 2 --steps 0 $ARCH --init-from "$W" --dump-logits "$WORK/logits.safetensors"
"$PYT" "$HERE/../ckpt/timm_reg_import.py" check "$W" "$WORK/logits.safetensors" || fail "timm and shardvit differ"
ev() { # ev NAME [flags]: shardvit eval --weights W on synthetic data into $WORK/NAME
    local name=$1
    shift
    "$SHARDVIT" eval --weights "$W" --data synthetic --synth-samples 96 --crop-pct 1.0 "$@" --out "$WORK/$name" \
        >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log"; fail "eval $name"; }
}
ev inferred --heads 4 # (the head count is not in a timm file)
ev explicit $ARCH
# the metrics (eval.json also records when and where it ran)
"$PY" - "$WORK/inferred/eval.json" "$WORK/explicit/eval.json" <<'PYEOF' || fail "the layout read off the file evaluates differently"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
keys = ["top1", "top5", "loss", "top1_correct", "top5_correct", "num_samples", "per_class"]
print("eval, layout read off the file: top-1 %s loss %s; with the flags: top-1 %s loss %s"
      % (a["top1"], a["loss"], b["top1"], b["loss"]))
sys.exit(0 if all(a[k] == b[k] for k in keys) else 1)
PYEOF
rc=0
timeout 120 "$SHARDVIT" train $TINY --steps 0 $(echo "$ARCH" | sed 's/--reg-tokens 4//') --init-from "$W" \
    --out "$WORK/noreg" >"$WORK/noreg.log" 2>&1 </dev/null || rc=$?
test $rc -ne 0 && grep -q "the file has 4 register tokens (reg_token) but this model has 0 (--reg-tokens)" "$WORK/noreg.log" ||
    { tail -3 "$WORK/noreg.log"; fail "a model without registers accepted the file (exit $rc)"; }
echo "timm_reg_import: all passed"
