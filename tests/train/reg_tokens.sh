#!/usr/bin/env bash
# Register tokens (--reg-tokens R, timm reg_tokens) and --no-embed-class (timm no_embed_class;
# docs/training.md "Model") through real runs:
# - world 1, 2 and 3 give the same losses and parameters (the fp32 tolerances of
#   tests/fsdp/equivalence.sh), with stochastic depth on, with registers after the class token
#   and in timm's reg4_gap layout (no class token, pos_embed for the patches only);
# - a world-2 checkpoint resumes at world 3 and ends where the uninterrupted run does;
# - the export loads back bitwise (--init-from), `shardvit eval --weights` reads the layout off
#   the file (no flags) and reproduces the run's own final eval, and at another --img the
#   pos_embed grid is resampled behind the prefix positions (or alone, with no_embed_class);
# - a checkpoint does not resume into a model with another R or no_embed_class, an export with
#   registers does not seed a model without them, and an out-of-range R is a usage error.
# (tests/ckpt/timm_real.sh loads such exports into timm with identical logits, and
# tests/ckpt/timm_reg_import.sh a timm-made reg4_gap model into shardvit;
# tests/model/test_vit_grad checks the gradients by finite differences.)
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
OPTS="--reg-tokens 2 --drop-path 0.3"
run ref 1 --steps 8 $OPTS
for W in 2 3; do
    run "w$W" "$W" --steps 8 $OPTS
    compare "w$W" ref --loss-rtol 1e-5 --param-atol 5e-5 || fail "world $W differs from world 1"
done
# the registers are trained: their gradients are not zero, so the parameters move away from the
# near-zero timm init (normal, std 1e-6)
"$SHARDVIT" info --model vit-28 --dim 36 --depth 3 --heads 3 --reg-tokens 2 >"$WORK/info.log" 2>&1 || { cat "$WORK/info.log"; fail "info"; }
grep -q "tokens 52" "$WORK/info.log" && grep -q "reg_tokens 2" "$WORK/info.log" ||
    { cat "$WORK/info.log"; fail "info does not show 1 + 2 + 49 tokens"; }
grep -q "reg_token .*(1, 2, 36)" "$WORK/info.log" || { cat "$WORK/info.log"; fail "info lists no reg_token (1, 2, 36)"; }
# checkpoint at world 2, resumed at world 3
run ck 2 --steps 4 $OPTS --ckpt-every 4
run ck 3 --steps 8 $OPTS --ckpt-every 4 --resume auto
grep -q "resum" "$WORK/ck.log" || { tail -5 "$WORK/ck.log"; fail "the world-3 run did not resume"; }
compare ck ref --loss-rtol 1e-5 --param-atol 5e-5 || fail "resumed at world 3 differs from the uninterrupted run"
# export -> import round trip, eval with the architecture read from the file
run ev 2 --steps 6 $OPTS --val-data synthetic
export_roundtrip ev --reg-tokens 2
# timm's reg4_gap layout: no class token, pos_embed for the patches only (--no-embed-class)
NEC="--reg-tokens 4 --class-token 0 --global-pool avg --no-embed-class"
run nec1 1 --steps 6 $NEC --drop-path 0.3
run nec 2 --steps 6 $NEC --drop-path 0.3 --val-data synthetic
compare nec nec1 --loss-rtol 1e-5 --param-atol 5e-5 || fail "no_embed_class: world 2 differs from world 1"
export_roundtrip nec $NEC
# refusals
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 8 --reg-tokens 3 --out "$WORK/ev" --resume auto \
    >"$WORK/res.log" 2>&1 </dev/null || rc=$?
test $rc -ne 0 && grep -q "2 register tokens, no_embed_class 0 but this run has off, token, 1, 3, 0" "$WORK/res.log" ||
    { tail -5 "$WORK/res.log"; fail "resume into another register count not refused clearly (exit $rc)"; }
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 8 --reg-tokens 4 --class-token 0 --global-pool avg \
    --out "$WORK/nec" --resume auto >"$WORK/res2.log" 2>&1 </dev/null || rc=$?
test $rc -ne 0 && grep -q "4 register tokens, no_embed_class 1 but this run has off, avg, 0, 4, 0" "$WORK/res2.log" ||
    { tail -5 "$WORK/res2.log"; fail "resume without --no-embed-class not refused clearly (exit $rc)"; }
rc=0
timeout 120 "$SHARDVIT" train $TINY --steps 0 --init-from "$WORK/ev-export/model.safetensors" --out "$WORK/noreg" \
    >"$WORK/noreg.log" 2>&1 </dev/null || rc=$?
test $rc -ne 0 && grep -q "the file has 2 register tokens (reg_token) but this model has 0 (--reg-tokens)" "$WORK/noreg.log" ||
    { tail -5 "$WORK/noreg.log"; fail "an export with registers seeded a model without them (exit $rc)"; }
# another --heads than the export's config.json records loads (timm allows it) but is warned, also
# without --out: the warning comes with the load itself
rc=0
timeout 120 "$SHARDVIT" train $TINY --steps 0 --reg-tokens 2 --heads 2 --init-from "$WORK/ev-export/model.safetensors" \
    >"$WORK/heads.log" 2>&1 </dev/null || rc=$?
test $rc -eq 0 && grep -q "WARN --init-from .*config.json records num_heads 3, this run's model has 2 heads" "$WORK/heads.log" ||
    { tail -5 "$WORK/heads.log"; fail "another --heads than config.json's num_heads not warned without --out (exit $rc)"; }
rc=0
timeout 60 "$SHARDVIT" train $TINY --steps 1 --reg-tokens 257 >"$WORK/bad.log" 2>&1 || rc=$?
test $rc -eq 2 && grep -q -- "reg-tokens" "$WORK/bad.log" || { cat "$WORK/bad.log"; fail "--reg-tokens 257: exit $rc"; }
echo "reg_tokens: all passed"
