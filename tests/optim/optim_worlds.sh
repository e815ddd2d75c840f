#!/usr/bin/env bash
# LAMB, SGD and Lion (with and without layer-wise LR decay) give the world-1 loss sequence and
# final parameters at world 2 and 3 (real MPI ranks; full_shard, and hybrid_shard at world 4):
# LAMB's per-tensor norms are summed over the shard group in rank order, every other rule is
# per element. Tolerances as tests/fsdp/equivalence.sh (fp32: reductions of different partial
# sums round differently); Lion's sign() update uses a small LR so that the update size is below
# the parameter tolerance even where rounding flips a sign.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
check() {
    local name=$1
    shift
    run "${name}_w1" 1 --steps 8 "$@"
    for W in 2 3; do
        run "${name}_w$W" "$W" --steps 8 "$@"
        compare "${name}_w$W" "${name}_w1" --loss-rtol 1e-5 --param-atol 5e-5
    done
}
check lamb --opt lamb --lr 5e-3 --warmup 2
check lamb_ld --opt lamb --lr 5e-3 --layer-decay 0.7 --sched step --decay-epochs 0.2 --warmup 0
check sgd --opt sgd --lr 5e-2 --nesterov --sched multistep --decay-milestones 0.1,0.3
check sgd_plain --opt sgd --lr 5e-2 --momentum 0.5 --layer-decay 0.8
# Lion's update is lr * sign(.): where rounding of the reduced gradient flips a sign near zero
# the element moves 2 lr the other way, so Lion is compared element by element: the loss as
# above, at most 1% of the parameters apart by more than 1e-6 (gradients that are 0 or nearly 0
# take either sign), none by more than 2 x the LR sum.
lion_compare() {
    "$PY" - "$WORK/$1" "$WORK/$2" "$3" <<'PYEOF'
import json, struct, sys
a, b, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
def load(p):
    d = open(p + ".bin", "rb").read()
    return struct.unpack(f"<{len(d) // 4}f", d)
def losses(p):
    return [json.loads(l)["loss"] for l in open(p + "/metrics.jsonl") if '"loss"' in l]
pa, pb = load(a), load(b)
diff = [abs(x - y) for x, y in zip(pa, pb)]
far = sum(d > 1e-6 for d in diff)
worst_loss = max(abs(x - y) / abs(y) for x, y in zip(losses(a), losses(b)))
print(f"lion {a.rsplit('/', 1)[-1]}: loss rel diff {worst_loss:.3e}, {far} of {len(diff)} params apart > 1e-6, "
      f"max {max(diff):.3e} (bound {bound:g})")
sys.exit(0 if len(pa) == len(pb) and worst_loss <= 1e-5 and far <= len(diff) // 100 and max(diff) <= bound else 1)
PYEOF
}
run lion_w1 1 --steps 8 --opt lion --lr 1e-4 --warmup-epochs 0.2 --sched poly
for W in 2 3; do
    run "lion_w$W" "$W" --steps 8 --opt lion --lr 1e-4 --warmup-epochs 0.2 --sched poly
    lion_compare "lion_w$W" lion_w1 1.6e-3
done
run lamb_w4_hybrid 4 --steps 8 --opt lamb --lr 5e-3 --warmup 2 --strategy hybrid_shard --shard-group 2
compare lamb_w4_hybrid lamb_w1 --loss-rtol 1e-5 --param-atol 5e-5
run lamb_w2_noshard 2 --steps 8 --opt lamb --lr 5e-3 --warmup 2 --strategy no_shard
compare lamb_w2_noshard lamb_w1 --loss-rtol 1e-5 --param-atol 5e-5
# the rules must have acted: each run's parameters differ from AdamW's
run adamw_w1 1 --steps 8 --lr 5e-3 --warmup 2
for r in lamb sgd lion; do
    if "$PY" "$HERE/compare_runs.py" "$WORK/${r}_w1" "$WORK/adamw_w1" "$WORK/${r}_w1.bin" "$WORK/adamw_w1.bin" \
        --loss-rtol 0 --param-atol 0 --bitwise >/dev/null 2>&1; then
        echo "FAIL: --opt $r trained exactly like adamw"
        exit 1
    fi
done
echo "optim_worlds: all passed"
