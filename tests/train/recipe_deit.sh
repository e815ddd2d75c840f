#!/usr/bin/env bash
# The DeiT-S and DeiT III command lines of docs/training.md ("A DeiT command line, translated"),
# flag for flag, on a tiny model and synthetic data over 2 MPI ranks: every recipe flag together
# parses, trains with finite losses, evaluates raw and EMA weights, checkpoints, resumes bitwise
# and exports a file timm's layout describes (config.json with init_values for DeiT III).
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
SMALL="--model vit-32 --dim 48 --depth 2 --heads 3 --batch-size 12 --synth-samples 240 --data synthetic
       --val-data synthetic --workers 1 --log-every 1 --comm-timeout 60 --seed 3"
DEIT="--epochs 3 --opt adamw --lr 1e-3 --min-lr 1e-5 --sched cosine --sched-on-updates 0 --warmup-lr 1e-6
      --warmup-epochs 1 --weight-decay 0.05 --clip 0 --drop-path 0.1 --smoothing 0.1
      --aa rand-m9-mstd0.5-inc1 --aa-interp bicubic --interp bicubic --aug-repeats 3 --reprob 0.25 --remode pixel --recount 1
      --mixup 0.8 --cutmix 1.0 --mixup-prob 1.0 --mixup-switch-prob 0.5 --mixup-mode batch
      --model-ema --model-ema-decay 0.99996 --crop-pct 0.875"
DEIT3="--layer-scale 1e-4 --no-embed-class --epochs 3 --opt lamb --lr 4e-3 --weight-decay 0.05 --sched cosine
       --sched-on-updates 0 --warmup-lr 1e-6 --warmup-epochs 1 --clip 1 --drop-path 0.05 --drop-path-uniform
       --bce-loss --bce-target-thresh 0 --smoothing 0 --three-augment --color-jitter 0.3 --reprob 0 --interp bicubic
       --aug-repeats 3 --mixup 0.8 --cutmix 1.0 --mixup-mode batch --crop-pct 1.0
       --model-ema --model-ema-decay 0.99996"
train() { # train NAME FLAGS...
    local name=$1
    shift
    timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" train $SMALL --out "$WORK/$name" --save-params "$WORK/$name.bin" "$@" \
        >"$WORK/$name.log" 2>&1 </dev/null || { tail -20 "$WORK/$name.log"; fail "$name"; }
}
for recipe in deit deit3; do
    flags=$DEIT
    [ $recipe = deit3 ] && flags=$DEIT3
    train $recipe $flags --ckpt-every 20
    # 20 steps per epoch, --epochs 3 (DeiT's loop ignores its cooldown epochs: the translation has none)
    steps=60
    "$PY" - "$WORK/$recipe/metrics.jsonl" $steps <<'PY' || fail "$recipe: losses"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
losses = [r["loss"] for r in rows if "loss" in r]
assert len(losses) == int(sys.argv[2]) and all(math.isfinite(x) for x in losses), (len(losses), losses)
print("%d steps, losses %.4f .. %.4f" % (len(losses), losses[0], losses[-1]))
PY
    grep -q "eval (weight EMA)" "$WORK/$recipe.log" || fail "$recipe: no EMA evaluation"
    # resume from the step-20 checkpoint reproduces the uninterrupted run
    rm -rf "$WORK/$recipe-r" && cp -r "$WORK/$recipe" "$WORK/$recipe-r"
    rm -rf "$WORK/$recipe-r/checkpoints/step_000000"[4-8]0
    echo step_00000020 >"$WORK/$recipe-r/checkpoints/latest"
    train $recipe-r $flags --ckpt-every 20 --resume auto
    cmp "$WORK/$recipe.bin" "$WORK/$recipe-r.bin" || fail "$recipe: resume differs from the uninterrupted run"
    mkdir -p "$WORK/$recipe-x"
    ema=--ema
    "$SHARDVIT" export "$WORK/$recipe" "$WORK/$recipe-x/model.safetensors" $ema >"$WORK/x.log" 2>&1 ||
        { cat "$WORK/x.log"; fail "$recipe: export $ema"; }
done
grep -q '"init_values"' "$WORK/deit3-x/config.json" || fail "deit3: config.json lacks init_values"
grep -q '"no_embed_class": true' "$WORK/deit3-x/config.json" || fail "deit3: config.json lacks no_embed_class"
echo "recipe_deit: all passed"
