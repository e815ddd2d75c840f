#!/usr/bin/env bash
# The recipe's model options through real training runs (docs/training.md "Model"):
# - stochastic depth, proj dropout, head dropout and attention-probability dropout with
#   LayerScale, average pooling and no class token: world 1, 2 and 3, recompute and 2
#   micro-steps give the same losses and parameters
#   (the fp32 tolerances of tests/fsdp/equivalence.sh), so every rank draws the masks of its own
#   global samples; the same run without drop-path is far outside that tolerance (the masks
#   matter; likewise without --attn-drop), --drop-path-uniform (the rate in every block) is
#   world-size invariant too and another run, and rates of 0 reproduce the classic run bitwise;
# - the export of such a model loads back bitwise (--init-from) and `shardvit eval` infers the
#   architecture from the file (no flags) and reproduces the training run's own final eval;
# - bad combinations are refused with exit 2 and a message naming the flag; a checkpoint does not
#   resume into a model with other options.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
OPTS="--layer-scale 0.1 --global-pool avg --class-token 0 --drop-path 0.5 --proj-drop 0.2 --drop 0.2 --attn-drop 0.3"
run ref 1 --steps 8 $OPTS
for W in 2 3; do
    run "w$W" "$W" --steps 8 $OPTS
    compare "w$W" ref --loss-rtol 1e-5 --param-atol 5e-5 || fail "world $W differs from world 1"
done
run w2_rc 2 --steps 8 $OPTS --recompute
compare w2_rc ref --loss-rtol 1e-5 --param-atol 5e-5 || fail "recompute draws other masks"
run w2_acc 2 --steps 8 $OPTS --accum 2
compare w2_acc ref --loss-rtol 1e-5 --param-atol 5e-5 || fail "micro-batching draws other masks"
# the masks change the run: without drop-path it is far from the tolerance above
run nodp 1 --steps 8 --layer-scale 0.1 --global-pool avg --class-token 0 --proj-drop 0.2 --drop 0.2 --attn-drop 0.3
if compare nodp ref --loss-rtol 1e-3 --param-atol 5e-4 >/dev/null; then fail "drop-path had no effect"; fi
run noad 1 --steps 8 --layer-scale 0.1 --global-pool avg --class-token 0 --drop-path 0.5 --proj-drop 0.2 --drop 0.2
if compare noad ref --loss-rtol 1e-3 --param-atol 5e-4 >/dev/null; then fail "--attn-drop had no effect"; fi
# --drop-path-uniform (DeiT III's own rule: the rate in every block): the same masks at every
# world size, and another run than the linear rule's
run uni 1 --steps 8 $OPTS --drop-path-uniform
run uni_w2 2 --steps 8 $OPTS --drop-path-uniform
compare uni_w2 uni --loss-rtol 1e-5 --param-atol 5e-5 || fail "--drop-path-uniform: world 2 differs from world 1"
if compare uni ref --loss-rtol 1e-3 --param-atol 5e-4 >/dev/null; then fail "--drop-path-uniform had no effect"; fi
# rates of 0 are the classic model, bit for bit
run plain 2 --steps 4
run zero 2 --steps 4 --drop-path 0 --drop 0 --proj-drop 0 --attn-drop 0
cmp "$WORK/plain.bin" "$WORK/zero.bin" || fail "rates of 0 changed the run"
# export -> import round trip and eval with the architecture read from the file
run ev 2 --steps 6 --layer-scale 0.1 --global-pool avg --class-token 0 --drop-path 0.3 --val-data synthetic
# (at another resolution the pos_embed grid, no class position here, is resampled as timm does)
export_roundtrip ev --layer-scale 0.1 --global-pool avg --class-token 0
# refused combinations
expect_usage() { # expect_usage PATTERN FLAGS...
    local pat=$1 rc=0
    shift
    timeout 60 "$SHARDVIT" train $TINY --steps 1 "$@" >"$WORK/bad.log" 2>&1 || rc=$?
    test $rc -eq 2 && grep -q -- "$pat" "$WORK/bad.log" || { cat "$WORK/bad.log"; fail "'$*': exit $rc, wanted 2 and '$pat'"; }
}
expect_usage "--class-token 0 needs --global-pool avg" --class-token 0
expect_usage "--global-pool 'max': choose token or avg" --global-pool max
expect_usage "--class-token '2': choose 1 or 0" --class-token 2
expect_usage "--bce-sum and --bce-target-thresh apply to --bce-loss only" --bce-sum
expect_usage "--bce-sum and --bce-target-thresh apply to --bce-loss only" --bce-target-thresh 0
expect_usage "--bce-target-thresh -0.5: a threshold in \[0, 1\], or -1 (off)" --bce-loss --bce-target-thresh -0.5
# timm's transform factory applies no colour jitter under an --aa policy: not added here either
expect_usage "--color-jitter with --aa: timm applies no colour jitter" --aa rand-m9-mstd0.5-inc1 --color-jitter 0.4
# threshold 0 is timm's target.gt(0) (DeiT III): said once, since config.toml files of before recorded 0 for off
timeout 60 "$SHARDVIT" train $TINY --steps 1 --bce-loss --bce-target-thresh 0 --mixup 0.8 >"$WORK/bce0.log" 2>&1 ||
    { cat "$WORK/bce0.log"; fail "--bce-loss --bce-target-thresh 0"; }
grep -q "bce-target-thresh 0 binarises every positive target" "$WORK/bce0.log" || fail "no note on threshold 0"
expect_usage "drop-path" --drop-path 1.5
expect_usage "--drop-path-uniform needs --drop-path > 0" --drop-path-uniform
expect_usage "attn-drop" --attn-drop 1
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 8 --out "$WORK/ev" --resume auto >"$WORK/res.log" 2>&1 < /dev/null || rc=$?
test $rc -ne 0 && grep -q "LayerScale on, global pool avg, class token 0, 0 register tokens, no_embed_class 0 but this run has off, token, 1, 0, 0" "$WORK/res.log" ||
    { tail -5 "$WORK/res.log"; fail "resume into another architecture not refused clearly (exit $rc)"; }
echo "recipe_model: all passed"
