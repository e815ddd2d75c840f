#!/usr/bin/env bash
# train --model-ema (docs/training.md "Weight EMA", fsdp/ema.h), end to end through the CLI:
# - the EMA after every step against the formula (tests/train/ema_check.py recur), bitwise, from
#   the checkpoint of each step exported raw and --ema, at world 1, 2 and 3 (and hybrid_shard,
#   no_shard, shard_grad_op), with a fixed decay, with --model-ema-warmup and with a skipped
#   (non-finite) step (timm itself: tests/train/model_ema_timm.sh);
# - --save-ema-params equals export --ema; the planner counts the EMA bytes (plan = trainer);
# - a checkpoint with EMA resharded 3 -> 2 -> 3 (shard files byte-identical) and 3 -> 1 (the
#   same EMA export); resumed (world 2 -> 2, interrupted by a crash during the last save) to the
#   EMA and weights of the uninterrupted run, bitwise; --async-ckpt shards byte-identical;
# - resuming without EMA in the checkpoint / without --model-ema: the documented log lines;
# - periodic evaluation reports raw and EMA (log, metrics.jsonl, eval.json), eval --ema differs
#   from the raw weights and equals the exported EMA evaluated; errors for --ema without EMA.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
source "$HERE/../train/ema_lib.sh"

run p0 1 --steps 0 $CONST
# 1. arithmetic against the formula, per step, at three world sizes
for W in 1 2 3; do
    run "fix$W" "$W" --steps $K $CONST --model-ema --model-ema-decay 0.75 --ckpt-every 1 --keep 0 \
        --save-ema-params "$WORK/fix$W.ema"
    exports "$WORK/fix$W.x" "fix$W" $K
    echo "== world $W, decay 0.75"
    "${CHECK[@]}" recur "$WORK/p0.bin" "$WORK/fix$W.x" $K --decay 0.75 || fail "EMA formula at world $W"
    "${CHECK[@]}" same "$WORK/fix$W.x/ema_$K.safetensors" "$WORK/fix$W.ema" || fail "--save-ema-params at world $W"
    "${CHECK[@]}" same "$WORK/fix$W.x/raw_$K.safetensors" "$WORK/fix$W.bin" || fail "raw export at world $W"
done
# the other strategies shard (or replicate) the EMA with the masters: the same formula holds
for spec in "hy 4 --strategy hybrid_shard --shard-group 2" "ns 2 --strategy no_shard" "sg 2 --strategy shard_grad_op"; do
    read -r name W strat <<<"$spec"
    run "$name" "$W" --steps 3 $CONST $strat --model-ema --model-ema-decay 0.75 --ckpt-every 1 --keep 0
    exports "$WORK/$name.x" "$name" 3
    echo "== world $W, $strat"
    "${CHECK[@]}" recur "$WORK/p0.bin" "$WORK/$name.x" 3 --decay 0.75 || fail "EMA formula with $strat"
done
# the EMA does not change training: the weights are those of a run without it
run plain2 2 --steps $K $CONST
cmp "$WORK/plain2.bin" "$WORK/fix2.bin" || fail "--model-ema changed the training"
# warmup decay and a skipped step (non-finite gradient at 0-based step 2)
run wu 2 --steps $K $CONST --model-ema --model-ema-warmup --ckpt-every 1 --keep 0 --debug-nan-step 2
exports "$WORK/wu.x" wu $K
echo "== world 2, warmup, step 2 skipped"
"${CHECK[@]}" recur "$WORK/p0.bin" "$WORK/wu.x" $K --decay 0.9998 --warmup --skip 2 || fail "warmup EMA formula"

# 2. planner: the EMA is counted, and plan = trainer
PLAN_TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24"
want=$(grep -m1 -oE "total [0-9.]+ MiB \([0-9]+ bytes\)" "$WORK/fix2.log" | grep -oE "[0-9]+ bytes")
got=$("$SHARDVIT" plan $PLAN_TINY --world 2 --model-ema | grep -E "^  total" | grep -oE "[0-9]+ bytes")
[ "$want" = "$got" ] || fail "plan --model-ema says '$got', trainer '$want'"
plan=$("$SHARDVIT" plan $PLAN_TINY --world 2 --model-ema)
grep -qE "^  weight EMA" <<<"$plan" || fail "plan --model-ema prints no weight EMA row"
t0=$("$SHARDVIT" plan $PLAN_TINY --world 2 | grep -E "^  total" | grep -oE "[0-9]+ bytes" | cut -d' ' -f1)
t1=$(cut -d' ' -f1 <<<"$got")
# the EMA adds one fp32 value per sharded element (the trainer's "16 B x M sharded elements")
M=$(grep -m1 -oE "16 B x [0-9]+ sharded elements" "$WORK/fix2.log" | grep -oE "[0-9]+ sharded" | cut -d' ' -f1)
[ $((t1 - t0)) -ge $((4 * M)) ] && [ $((t1 - t0)) -le $((4 * M + 4096)) ] ||
    fail "plan --model-ema adds $((t1 - t0)) bytes, expected 4 x $M (+ alignment)"
echo "ok plan = trainer with --model-ema: $got ($((t1 - t0)) bytes of EMA for $M sharded elements)"

# 3. reshard: 3 -> 2 -> 3 byte-identical files, 3 -> 1 the same EMA
S3="$WORK/fix3/checkpoints/$(printf step_%08d $K)"
"$SHARDVIT" reshard "$S3" "$WORK/r2" --world 2 >/dev/null || fail "reshard 3 -> 2"
"$SHARDVIT" reshard "$WORK/r2" "$WORK/r23" --world 3 >/dev/null || fail "reshard 2 -> 3"
for f in "$S3"/shard_*.bin "$S3/index.json"; do
    cmp "$f" "$WORK/r23/$(basename "$f")" || fail "3 -> 2 -> 3: $(basename "$f") differs"
done
"$SHARDVIT" reshard "$S3" "$WORK/r1" --world 1 >/dev/null || fail "reshard 3 -> 1"
"$SHARDVIT" export "$WORK/r1" "$WORK/r1.safetensors" --ema >/dev/null 2>&1 || fail "export --ema of r1"
cmp "$WORK/r1.safetensors" "$WORK/fix3.x/ema_$K.safetensors" || fail "3 -> 1: EMA export differs"
"${CHECK[@]}" same "$WORK/r1.safetensors" "$WORK/fix3.ema" >/dev/null || fail "3 -> 1: EMA differs from the run's"
grep -q '"model_ema"' "$WORK/r1/index.json" || fail "resharded index.json lost model_ema"
echo "ok reshard 3 -> 2 -> 3 byte-identical, 3 -> 1 same EMA"

# 4. resume continues the EMA exactly: crash during the save of step 6, resume from step 3
EMA6="--steps 6 $CONST --model-ema --model-ema-decay 0.9 --ckpt-every 3"
run full 2 $EMA6 --save-ema-params "$WORK/full.ema"
rc=0
SHARDVIT_TEST_CRASH_AT=before_index@6 timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY $EMA6 --out "$WORK/cut" \
    >"$WORK/cut.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "the crash hook did not stop the run"
grep -q "step_00000003" "$WORK/cut/checkpoints/latest" || fail "latest is not step 3"
run cut 2 $EMA6 --resume auto --save-ema-params "$WORK/cut.ema"
cmp "$WORK/cut.ema" "$WORK/full.ema" || fail "resumed EMA differs from the uninterrupted run"
cmp "$WORK/cut.bin" "$WORK/full.bin" || fail "resumed weights differ from the uninterrupted run"
echo "ok resume: EMA and weights bitwise equal to the uninterrupted run"
# async checkpoints hold the same bytes
run asy 2 $EMA6 --async-ckpt --save-ema-params "$WORK/asy.ema"
for s in 3 6; do
    d=$(printf step_%08d $s)
    for f in "$WORK/full/checkpoints/$d"/shard_*.bin "$WORK/full/checkpoints/$d/index.json"; do
        cmp "$f" "$WORK/asy/checkpoints/$d/$(basename "$f")" || fail "--async-ckpt $d/$(basename "$f") differs"
    done
done
echo "ok --async-ckpt shards and index byte-identical"

# 5. resume without EMA in the checkpoint: the EMA starts from the restored weights, and its
#    updates go on with the applied-step count (4 and 5 here: decay 0.5, no first-update copy)
run noema 2 --steps 3 $CONST --ckpt-every 3
run noema 2 --steps 5 $CONST --resume auto --model-ema --model-ema-decay 0.5 --ckpt-every 1 --keep 0
logline noema "holds no weight EMA: --model-ema starts it from the restored weights" >/dev/null
mkdir -p "$WORK/ne.x"
"$SHARDVIT" export "$WORK/noema/checkpoints/step_00000003" "$WORK/ne.x/p3.safetensors" >/dev/null 2>&1 || fail "export"
for k in 4 5; do
    d="$WORK/noema/checkpoints/step_0000000$k"
    "$SHARDVIT" export "$d" "$WORK/ne.x/raw_$((k - 3)).safetensors" >/dev/null 2>&1 || fail "export step $k"
    "$SHARDVIT" export "$d" "$WORK/ne.x/ema_$((k - 3)).safetensors" --ema >/dev/null 2>&1 || fail "export --ema $k"
done
"${CHECK[@]}" recur "$WORK/ne.x/p3.safetensors" "$WORK/ne.x" 2 --decay 0.5 --n0 3 || fail "EMA after a resume without EMA"
echo "ok resume of a checkpoint without EMA: logged, EMA saved from then on"
# a checkpoint with EMA resumed without --model-ema: the EMA is dropped
run drop 2 --steps 3 $CONST --model-ema --ckpt-every 3
run drop 2 --steps 4 $CONST --resume auto
logline drop "holds a weight EMA; this run has no --model-ema, so it is dropped" >/dev/null
! grep -q '"model_ema"' "$WORK/drop/checkpoints/step_00000004/index.json" || fail "dropped EMA still saved"
echo "ok resume without --model-ema drops the EMA"

# 6. evaluation: periodic raw + EMA, eval --ema = the exported EMA evaluated, errors
run ev 2 --steps 6 --model-ema --model-ema-decay 0.9 --val-data synthetic --eval-every 3
logline ev "eval \(weight EMA\) at step 3: top1" >/dev/null
logline ev "eval \(weight EMA\) at step 6: top1" >/dev/null
logline ev "^.*eval at step 6: top1" >/dev/null
[ "$(grep -c '"eval_ema_top1"' "$WORK/ev/metrics.jsonl")" = 2 ] || fail "metrics.jsonl: eval_ema_top1 not twice"
[ "$(grep -c '"eval_top1"' "$WORK/ev/metrics.jsonl")" = 2 ] || fail "metrics.jsonl: eval_top1 not twice"
"$PY" -c "import json,sys; e=json.load(open(sys.argv[1]))['ema']; assert 0 <= e['top1'] <= 1 and e['samples'] > 0, e" \
    "$WORK/ev/eval.json" || fail "eval.json has no ema member"
EV="--data synthetic --synth-samples 480 --batch-size 24 --workers 1"
timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" eval --ckpt "$WORK/ev" --ema $EV --out "$WORK/e_ema" >"$WORK/e_ema.log" 2>&1 ||
    { tail "$WORK/e_ema.log"; fail "eval --ema"; }
timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" eval --ckpt "$WORK/ev" $EV --out "$WORK/e_raw" >"$WORK/e_raw.log" 2>&1 ||
    fail "eval raw"
mkdir -p "$WORK/evx"
"$SHARDVIT" export "$WORK/ev" "$WORK/evx/model.safetensors" --ema >/dev/null 2>&1 || fail "export --ema ev"
timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" eval --weights "$WORK/evx/model.safetensors" $EV --out "$WORK/e_exp" \
    >"$WORK/e_exp.log" 2>&1 || fail "eval of the EMA export"
"$PY" - "$WORK/e_ema/eval.json" "$WORK/e_raw/eval.json" "$WORK/e_exp/eval.json" "$WORK/ev/eval.json" <<'PYEOF' || fail "eval --ema"
import json, sys
ema, raw, exp, train = (json.load(open(p)) for p in sys.argv[1:])
keys = ("top1", "top5", "loss")
assert all(ema[k] == exp[k] for k in keys), ("eval --ema != eval of export --ema", [(ema[k], exp[k]) for k in keys])
assert ema["loss"] != raw["loss"], ("eval --ema equals the raw weights", ema["loss"])
assert ema["top1"] == train["ema"]["top1"], ("train's final EMA top1 differs from eval --ema", ema["top1"], train["ema"])
assert raw["top1"] == train["top1"], ("train's final raw top1 differs from eval", raw["top1"], train["top1"])
print("ok eval --ema: loss %.6f (raw %.6f) = export --ema evaluated; top1 %.4f = train's final EMA eval"
      % (ema["loss"], raw["loss"], ema["top1"]))
PYEOF
# predict --ckpt --ema: the EMA's probabilities, the same as predicting with the EMA export
"$SHARDVIT" prep synthetic --out "$WORK/pimg" --classes 1 --per-class 3 --test-per-class 0 --width 28 --height 28 \
    >/dev/null 2>&1 || fail "prep synthetic for predict"
mapfile -t IMGS < <(find "$WORK/pimg" -name '*.jpg' | sort)
[ ${#IMGS[@]} -gt 0 ] || fail "no JPEG for predict"
"$SHARDVIT" predict --ckpt "$WORK/ev" --ema --json --topk 0 "${IMGS[@]}" >"$WORK/p_ema.jsonl" 2>/dev/null || fail "predict --ema"
"$SHARDVIT" predict --weights "$WORK/evx/model.safetensors" --json --topk 0 "${IMGS[@]}" >"$WORK/p_exp.jsonl" 2>/dev/null ||
    fail "predict of the EMA export"
"$SHARDVIT" predict --ckpt "$WORK/ev" --json --topk 0 "${IMGS[@]}" >"$WORK/p_raw.jsonl" 2>/dev/null || fail "predict raw"
# (class names: the run directory's classes.txt for --ckpt, none beside the export: compare
# indices and probabilities)
"$PY" - "$WORK/p_ema.jsonl" "$WORK/p_exp.jsonl" "$WORK/p_raw.jsonl" <<'PYEOF' || fail "predict --ema"
import json, sys
ema, exp, raw = ([[(t["index"], t["prob"]) for t in json.loads(l)["top"]] for l in open(p)] for p in sys.argv[1:])
assert len(ema) == 3 and ema == exp, "predict --ema != predict of export --ema"
assert ema != raw, "predict --ema equals the raw weights"
PYEOF
echo "ok predict --ema ($(wc -l <"$WORK/p_ema.jsonl") images) = the EMA export's predictions, not the raw ones"
# errors
rc=0
"$SHARDVIT" predict --weights "$WORK/evx/model.safetensors" --ema "${IMGS[@]}" >"$WORK/err6.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "\-\-ema needs --ckpt" "$WORK/err6.log" || fail "predict --weights --ema: rc $rc"
rc=0
"$SHARDVIT" eval --ckpt "$WORK/plain2" --ema $EV >"$WORK/err1.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "eval --ema of a checkpoint without EMA succeeded"
grep -q "holds no weight EMA" "$WORK/err1.log" || { cat "$WORK/err1.log"; fail "eval --ema: no clear error"; }
rc=0
"$SHARDVIT" export "$WORK/plain2" "$WORK/x.safetensors" --ema >"$WORK/err2.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "holds no weight EMA" "$WORK/err2.log" || fail "export --ema without EMA: rc $rc"
[ ! -e "$WORK/x.safetensors" ] || fail "export --ema without EMA wrote a file"
needs_ema() { # needs_ema FLAG...: train with FLAG... and without --model-ema is refused (exit 2)
    local rc=0
    "$SHARDVIT" train $TINY --steps 1 "$@" >"$WORK/err3.log" 2>&1 || rc=$?
    [ $rc -eq 2 ] && grep -q "needs --model-ema" "$WORK/err3.log" || fail "'$*' without --model-ema: rc $rc"
}
needs_ema --model-ema-warmup
needs_ema --model-ema-decay 0.9
needs_ema --save-ema-params "$WORK/y.bin"
rc=0
"$SHARDVIT" train $TINY --steps 1 --model-ema --model-ema-decay 1.5 >"$WORK/err4.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "model-ema-decay" "$WORK/err4.log" || fail "--model-ema-decay 1.5: rc $rc"
rc=0
"$SHARDVIT" eval --weights "$WORK/evx/model.safetensors" --ema $EV >"$WORK/err5.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "\-\-ema needs --ckpt" "$WORK/err5.log" || fail "eval --weights --ema: rc $rc"
echo "ok errors"
echo "model_ema: all passed"
