#!/usr/bin/env bash
# Collective counts per step match the schedule, persistent memory falls as 1/N, at most two
# block units are gathered at once, and a NaN gradient on one rank skips the step everywhere.
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
S=5      # steps
D=3      # blocks (units 1..3) + root unit
expect() { # name pattern expected
    local line
    line=$(logline "$1" "collectives:")
    if ! grep -q -- "$2" <<<"$line"; then echo "FAIL: $1: expected '$2' in: $line"; exit 1; fi
    echo "ok $1: $2"
}
# full_shard: per step 1 root + D forward + D backward all-gathers + 1 norm all-gather;
# D+1 reduce-scatters (counted before the --save-params gather).
run fs 2 --steps $S
expect fs "shard all_gather $((S * (2 + 2 * D))) reduce_scatter $((S * (D + 1))) "
# shard_grad_op: the forward gather is kept for backward.
run sgo 2 --steps $S --strategy shard_grad_op
expect sgo "shard all_gather $((S * (2 + D))) reduce_scatter $((S * (D + 1))) "
# no_shard: no parameter gathers (shard group of one), gradients all-reduced across replicas.
run ns 2 --steps $S --strategy no_shard
expect ns "replica all_reduce $((S * (D + 1))) "
# hybrid: full_shard inside groups of 2, all-reduce of each reduced shard across the 2 groups.
run hy 4 --steps $S --strategy hybrid_shard --shard-group 2
expect hy "shard all_gather $((S * (2 + 2 * D))) reduce_scatter $((S * (D + 1))) all_reduce 0; replica all_reduce $((S * (D + 1))) "

# memory: persistent bytes per rank ~ 1/N (padding makes it slightly more), <= 2 gathered units
mem() { logline "$1" "memory: persistent" | sed -E 's/.*persistent ([0-9]+) bytes.*/\1/'; }
run m1 1 --steps 1
run m4 4 --steps 1
b1=$(mem m1); b2=$(mem fs); b4=$(mem m4)
echo "persistent bytes: world1 $b1 world2 $b2 world4 $b4"
"$PY" - "$b1" "$b2" "$b4" <<'PYEOF'
import sys
b1, b2, b4 = map(int, sys.argv[1:])
assert abs(b2 / b1 - 0.5) < 0.02, (b1, b2)
assert abs(b4 / b1 - 0.25) < 0.02, (b1, b4)
PYEOF
for r in fs m4 hy; do
    logline "$r" "max gathered block units [12]$" >/dev/null
done
echo "ok memory"

# NaN injected into rank 1's gradient at step index 3 (the last): the step is skipped on every
# rank and the parameters equal those after 3 steps (constant LR so schedules agree).
CONST="--lr 1e-3 --min-lr 1e-3 --warmup 0"
run three 2 --steps 3 $CONST
run nan 2 --steps 4 $CONST --debug-nan-step 3 --debug-nan-rank 1
logline nan "non-finite gradient norm; step skipped" >/dev/null
logline nan "skipped steps 1" >/dev/null
cmp "$WORK/three.bin" "$WORK/nan.bin" || { echo "FAIL: parameters changed by a skipped step"; exit 1; }
echo "ok nan skip"
# --max-skipped-steps 0 aborts at the first skipped step: exit 1 on every rank, clear message
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 4 $CONST --debug-nan-step 1 --debug-nan-rank 0 \
    --max-skipped-steps 0 >"$WORK/abort.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: expected a clean non-zero exit, got $rc"; exit 1; }
grep -q "steps skipped for non-finite gradients (limit --max-skipped-steps 0)" "$WORK/abort.log" ||
    { echo "FAIL: no abort message"; cat "$WORK/abort.log"; exit 1; }
echo "ok max-skipped-steps abort (exit $rc)"
echo "schedule: all passed"
