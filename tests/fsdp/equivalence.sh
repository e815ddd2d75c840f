#!/usr/bin/env bash
# FSDP equivalence: world sizes 1..4 x strategies give the loss sequence and final parameters
# of world 1 (fp32: losses rel 1e-5, params abs 5e-5 after 10 AdamW steps; bf16 compute:
# losses rel 2e-3, params abs 5e-3, since bf16 rounding of gathered weights and activations
# depends on nothing but the values, yet reductions of different partial sums round differently).
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
run ref 1 --steps 10
for W in 2 3 4; do
    for S in full_shard shard_grad_op no_shard; do
        run "w${W}_$S" "$W" --steps 10 --strategy "$S"
        compare "w${W}_$S" ref --loss-rtol 1e-5 --param-atol 5e-5
    done
done
run w4_hybrid 4 --steps 10 --strategy hybrid_shard --shard-group 2
compare w4_hybrid ref --loss-rtol 1e-5 --param-atol 5e-5
run w2_wrap 2 --steps 10 --wrap auto:0.1
compare w2_wrap ref --loss-rtol 1e-5 --param-atol 5e-5
run w2_recompute 2 --steps 10 --recompute
compare w2_recompute ref --loss-rtol 1e-5 --param-atol 5e-5
# accumulation: 2 micro-steps of half the micro-batch cover the same samples per step
run w2_acc_shard 2 --steps 10 --accum 2 --accum-mode shard
compare w2_acc_shard ref --loss-rtol 1e-5 --param-atol 5e-5
run w2_acc_local 2 --steps 10 --accum 2 --accum-mode local
compare w2_acc_local ref --loss-rtol 1e-5 --param-atol 5e-5
# accumulation across an epoch's end: 500 samples at batch 24 make 20 steps an epoch; with
# --accum 2 the tail is dropped at the step's 24 samples, not at the micro-batch's 12, so step 21
# starts epoch 1 in both runs (it took the last micro-batch of epoch 0 and the first of epoch 1)
run ep_ref 1 --steps 25 --synth-samples 500
run ep_acc 2 --steps 25 --synth-samples 500 --accum 2
compare ep_acc ep_ref --loss-rtol 1e-5 --param-atol 5e-5
"$PY" - "$WORK/ep_acc/metrics.jsonl" <<'PYEOF'
import json, sys
ep = {r["step"]: r["epoch"] for r in map(json.loads, open(sys.argv[1])) if "epoch" in r and "step" in r}
assert ep[20] == 0 and ep[21] == 1, ep
print("ok accumulation keeps the epoch: step 20 in epoch", ep[20], "step 21 in epoch", ep[21])
PYEOF
# bf16 compute and bf16 gradient reduction
run bf16_ref 1 --steps 10 --param-dtype bf16
for W in 2 3; do
    run "w${W}_bf16" "$W" --steps 10 --param-dtype bf16 --reduce-dtype bf16
    compare "w${W}_bf16" bf16_ref --loss-rtol 2e-3 --param-atol 5e-3
done
run w4_bf16_hybrid 4 --steps 10 --param-dtype bf16 --strategy hybrid_shard --shard-group 2
compare w4_bf16_hybrid bf16_ref --loss-rtol 2e-3 --param-atol 5e-3
echo "equivalence: all passed"
