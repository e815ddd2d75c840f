#!/usr/bin/env bash
# `shardvit plan`'s numbers never wrap, and its sweep CSV is well-formed (docs/fsdp.md "Memory
# plan", docs/simulate.md). Each check fails on a build without its fix:
#   1. plan --mem's "global batch" of the largest micro-batch is micro x world x accum in 64 bits
#      (it was an int: 892862464 for 5187829760, negative at --world 1048576);
#   2. a plan whose sizes pass 2^64 bytes is an error or does not fit, never a wrapped, smaller
#      total (vit-h14 at --img 4096 --patch 1: batch 1024 was planned 380x smaller than 1023), a
#      total past 2^63 bytes does not "fit" (a signed comparison), and the largest micro-batch
#      that fits --mem is one whose plan fits while the next one's does not;
#   3. plan --sweep --format csv: every string field RFC 4180-escaped (a quote in a value broke
#      the row) and a failed row keeps its error text in `status` (it was "").
# Usage: plan_sizes.sh SHARDVIT
set -euo pipefail
SHARDVIT=$1
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-plan.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}

# ---- 1. the global batch of the largest micro-batch ----
for c in "4096 64 262144 80G" "1048576 1 1048576 16G"; do
    read -r world accum batch mem <<<"$c"
    line=$("$SHARDVIT" plan --model vit-28 --world $world --accum $accum --batch-size $batch --mem $mem | tail -1)
    micro=$(sed -nE 's/^largest micro-batch per rank that fits: ([0-9]+) \(global batch .*/\1/p' <<<"$line")
    global=$(sed -nE 's/.*\(global batch (-?[0-9]+) at --accum.*/\1/p' <<<"$line")
    [ -n "$micro" ] && [ -n "$global" ] || fail "plan --world $world --accum $accum --mem $mem: no largest micro-batch: $line"
    [ "$global" = $((micro * world * accum)) ] ||
        fail "plan --world $world --accum $accum: global batch $global, want $micro x $world x $accum = $((micro * world * accum))"
    echo "ok global batch (world $world, accum $accum, $mem): $micro x $world x $accum = $global"
done

# ---- 2. sizes past 2^64 bytes ----
HUGE=(--model vit-h14 --img 4096 --patch 1 --threads 1)
# total_of ARGS...: the planned total in bytes, or "error" when plan refused with a size error
total_of() {
    local rc=0
    "$SHARDVIT" plan "$@" >"$WORK/p.out" 2>"$WORK/p.err" || rc=$?
    if [ $rc -ne 0 ]; then
        grep -qE "exceed 2\^64 bytes|past 2\^64 bytes" "$WORK/p.err" ||
            fail "plan $*: exit $rc without a size error: $(cat "$WORK/p.err")"
        echo error
        return
    fi
    sed -nE 's/^  total .*\(([0-9]+) bytes\)$/\1/p' "$WORK/p.out"
}
prev=0
for b in 1 1000 1023 1024; do
    t=$(total_of "${HUGE[@]}" --batch-size $b)
    if [ "$t" = error ]; then
        prev=error
    else
        [ "$prev" != error ] || fail "batch $b planned at $t bytes after a smaller batch exceeded 2^64 bytes"
        "$PY" -c "import sys; sys.exit(not int(sys.argv[1]) >= int(sys.argv[2]))" "$t" "$prev" ||
            fail "batch $b planned at $t bytes, less than the smaller batch's $prev"
        prev=$t
    fi
    echo "ok vit-h14 img 4096 patch 1 batch $b: $t"
done
# one block: a total between 2^63 and 2^64 bytes is no negative size that fits
out=$("$SHARDVIT" plan "${HUGE[@]}" --depth 1 --batch-size 1000 --mem 80G)
grep -q "fits in 80G: NO" <<<"$out" || fail "a plan of more than 2^63 bytes fits 80G: $out"
# the largest micro-batch that fits: its plan fits, the next one's does not
mem=8000000000G
out=$("$SHARDVIT" plan "${HUGE[@]}" --depth 1 --batch-size 1 --mem $mem)
L=$(sed -nE 's/^largest micro-batch per rank that fits: ([0-9]+) \(global batch.*/\1/p' <<<"$out")
[ -n "$L" ] || fail "plan --mem $mem: no largest micro-batch: $out"
"$SHARDVIT" plan "${HUGE[@]}" --depth 1 --batch-size "$L" --mem $mem | grep -q "fits in $mem: yes" ||
    fail "the largest micro-batch $L that fits $mem does not fit"
rc=0
"$SHARDVIT" plan "${HUGE[@]}" --depth 1 --batch-size $((L + 1)) --mem $mem >"$WORK/p.out" 2>"$WORK/p.err" || rc=$?
[ $rc -ne 0 ] || grep -q "fits in $mem: NO" "$WORK/p.out" ||
    fail "micro-batch $((L + 1)), beyond the largest that fits ($L), fits $mem: $(grep fits "$WORK/p.out")"
echo "ok largest micro-batch in $mem: $L"

# ---- 3. plan --sweep --format csv ----
SWEEP=(plan --device cpu --model vit-28 --steps 1 --format csv)
"$SHARDVIT" "${SWEEP[@]}" --sweep 'strategy=full_shard,a"b world=2' >"$WORK/q.csv" 2>/dev/null
"$SHARDVIT" "${SWEEP[@]}" --sweep 'model=nosuch world=2' >"$WORK/m.csv" 2>/dev/null
"$SHARDVIT" "${SWEEP[@]}" --model 'vit,28' --sweep 'world=2' >"$WORK/c.csv" 2>/dev/null
# the timm-named columns in timm's units (as bench --sweep): ms, millions, GMACs, against the JSON rows
"$SHARDVIT" plan --device h200 --model vit-28 --dim 32 --depth 2 --heads 2 --sweep 'world=1,2 batch=32' --format csv \
    >"$WORK/u.csv" 2>/dev/null
"$SHARDVIT" plan --device h200 --model vit-28 --dim 32 --depth 2 --heads 2 --sweep 'world=1,2 batch=32' >"$WORK/u.jsonl" \
    2>/dev/null
"$SHARDVIT" info --model vit-28 --dim 32 --depth 2 --heads 2 --table=0 >"$WORK/u.info" 2>/dev/null
"$PY" - "$WORK" <<'PYEOF'
import csv, sys
d = sys.argv[1]
def rows(name):
    with open(f"{d}/{name}", newline="") as f:
        r = list(csv.reader(f, strict=True))
    head = r[0]
    for row in r[1:]:
        assert len(row) == len(head), (name, row)
    return [dict(zip(head, row)) for row in r[1:]]
q = rows("q.csv")
assert [r["strategy"] for r in q] == ["full_shard", 'a"b'], q
assert q[0]["status"] == "ok", q[0]
assert q[1]["status"] == "--strategy 'a\"b' (choose full_shard|shard_grad_op|no_shard|hybrid_shard)", q[1]
m = rows("m.csv")
assert len(m) == 1 and m[0]["model"] == "nosuch" and m[0]["status"].startswith("unknown model 'nosuch'"), m
c = rows("c.csv")
assert len(c) == 1 and c[0]["model"] == "vit,28" and c[0]["status"].startswith("unknown model 'vit,28'"), c
print("ok sweep csv:", q[1]["status"], "|", m[0]["status"][:40], "|", c[0]["status"][:40])
import json, re
u = rows("u.csv")
j = [json.loads(l) for l in open(f"{d}/u.jsonl")]
info = open(f"{d}/u.info").read()
params = int(re.search(r"parameters: ([0-9]+)", info).group(1))
gflops = float(re.search(r"forward ([0-9.]+) GFLOP", info).group(1))
assert len(u) == len(j) == 2
for r, x in zip(u, j):
    assert abs(float(r["train_step_time"]) - 1e3 * x["step_time_s"]) <= 1e-5 * 1e3 * x["step_time_s"], (r, x["step_time_s"])
    assert abs(float(r["param_count"]) - params / 1e6) <= 1e-5 * params / 1e6, (r["param_count"], params)
    assert abs(float(r["gmacs"]) - gflops / 2) <= 0.01 * gflops / 2 + 1e-6, (r["gmacs"], gflops)
print("ok sweep csv units: step", u[0]["train_step_time"], "ms, params", u[0]["param_count"], "M, gmacs", u[0]["gmacs"])
PYEOF
echo "plan_sizes: all passed"
