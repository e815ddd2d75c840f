#!/usr/bin/env bash
# --trace writes a merged per-rank Chrome trace showing prefetch overlap; `shardvit plan` reports
# exactly the arena the trainer carves for the same configuration.
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
# several steps with prefetch: reduce-scatters and prefetched all-gathers are in flight together
run tr 2 --steps 5 --trace "$WORK/trace.json"
"$PY" "$HERE/check_trace.py" "$WORK/trace.json" 2 3
# the cross-group all-reduce and gradient accumulation get well-nested tracks too
run tra 2 --steps 2 --strategy hybrid_shard --shard-group 1 --accum 2 --trace "$WORK/trace_ar.json"
"$PY" "$HERE/check_trace.py" --tracks-only "$WORK/trace_ar.json" 2 3
[ ! -e "$WORK/trace.json.rank0" ] || { echo "FAIL: trace part files left behind"; exit 1; }
PLAN_TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24"
# plan vs trainer: the planned total equals what the trainer logs as its memory plan (threads
# included: every CPU worker thread has attention scratch of its own)
for args in "--strategy full_shard" "--strategy shard_grad_op --param-dtype bf16" "--strategy no_shard --accum 2 --accum-mode local" \
    "--strategy hybrid_shard --shard-group 2 --reduce-dtype bf16" "--recompute" "--threads 3"; do
    world=2
    [[ "$args" == *hybrid* ]] && world=4
    run pl "$world" --steps 1 $args
    want=$(grep -m1 -oE "total [0-9.]+ MiB \([0-9]+ bytes\)" "$WORK/pl.log" | grep -oE "[0-9]+ bytes")
    got=$("$SHARDVIT" plan $PLAN_TINY --world "$world" $args | grep -E "^  total" | grep -oE "[0-9]+ bytes")
    [ "$want" = "$got" ] || { echo "FAIL: plan ($args) says '$got', trainer '$want'"; exit 1; }
    echo "ok plan = trainer ($args): $got"
done
# plan vs measured: every byte the trainer allocates through the backend (sv_be_mem_stats, whatever
# code asked for it) is in the plan, periodic evaluation included (its buffers are the run's batch
# buffers); the only excess allowed is the arena's 4 KiB alignment reserve plus the transient
# agreement / checkpoint-CRC exchange buffers of fsdp/agree.c (a few KiB, freed at once). Before the
# evaluator borrowed the batch buffers, its own images/logits/metrics buffers exceeded this.
for args in "--strategy full_shard" "--strategy shard_grad_op --param-dtype bf16"; do
    run pm 2 --steps 2 --val-data synthetic --eval-every 1 $args
    line=$(logline pm "device memory allocated [0-9]+ bytes \(plan [0-9]+ bytes\)")
    meas=$(grep -oE "allocated [0-9]+ bytes" <<<"$line" | grep -oE "[0-9]+")
    logged=$(grep -oE "\(plan [0-9]+ bytes" <<<"$line" | grep -oE "[0-9]+")
    planned=$("$SHARDVIT" plan $PLAN_TINY --world 2 $args | grep -E "^  total" | grep -oE "[0-9]+ bytes" | grep -oE "[0-9]+")
    [ "$logged" = "$planned" ] || { echo "FAIL: trainer's plan $logged != plan command's $planned ($args)"; exit 1; }
    excess=$((meas - planned))
    if [ "$excess" -lt 0 ] || [ "$excess" -gt 8192 ]; then
        echo "FAIL: measured device allocation $meas bytes vs plan $planned ($args): excess $excess"
        exit 1
    fi
    grep -q "eval at step 2" "$WORK/pm.log" || { echo "FAIL: no periodic eval in the measured run"; exit 1; }
    echo "ok measured = plan + $excess bytes ($args, with periodic eval)"
done
out=$("$SHARDVIT" plan --model vit-b16 --world 1 --batch-size 4096 --mem 24G)
grep -q "fits in 24G: NO" <<<"$out" || { echo "FAIL: vit-b16 batch 4096 should not fit 24G"; echo "$out"; exit 1; }
grep -q "largest micro-batch per rank that fits" <<<"$out" || { echo "FAIL: no fitting batch reported"; exit 1; }
# --mem must be a positive size (0 printed "fits in 0: NO (inf% of it)")
rc=0
"$SHARDVIT" plan $PLAN_TINY --mem 0 >"$WORK/mem0.log" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "more than 0" "$WORK/mem0.log" || { cat "$WORK/mem0.log"; echo "FAIL: plan --mem 0: exit $rc"; exit 1; }
echo "trace_plan: all passed"
