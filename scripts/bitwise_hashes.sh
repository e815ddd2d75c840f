#!/usr/bin/env bash
# Fingerprints of 15 short training configurations, for refactors that must not change a bit:
# SHA-256 (first 16 hex digits) of the final parameters (--save-params) and the step-6 checkpoint
# shards, and of the logged losses. Run it before and after a change and diff the two outputs.
# Usage: bash scripts/bitwise_hashes.sh [SHARDVIT] [OUT]   (defaults: build/app/shardvit, stdout only)
# The configurations cover the strategies, bf16 compute and reduction, accumulation, recompute,
# auto-wrap, the optimizers other than AdamW and a 26-token layout at world 1-4 (a tiny vit-28
# on synthetic data, 6 steps each, about a minute and a half).
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
for a in "$@"; do
    case "$a" in
    -h | --help) usage; exit 0 ;;
    -*) echo "bitwise_hashes.sh: unknown option '$a' (see --help)" >&2; exit 2 ;;
    esac
done
[ $# -le 2 ] || { echo "bitwise_hashes.sh: at most two arguments, SHARDVIT and OUT (see --help)" >&2; exit 2; }
S=${1:-build/app/shardvit}
OUT=${2:-/dev/null}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24 --synth-samples 480 --log-every 1 --seed 7 --workers 1 --comm-timeout 60 --steps 6"
i=0
while read -r n flags; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    mpiexec -n "$n" "$S" train $TINY $flags --out "$W/r$i" --save-params "$W/r$i.bin" >"$W/r$i.log" 2>&1 </dev/null ||
        { echo "run $i failed: $flags" >&2; tail -3 "$W/r$i.log" >&2; exit 1; }
    h=$( (cat "$W/r$i.bin" "$W/r$i"/checkpoints/step_00000006/*.bin) | sha256sum | cut -c1-16)
    l=$(grep -o '"loss":[^,]*' "$W/r$i/metrics.jsonl" | tr '\n' ' ' | sha256sum | cut -c1-16)
    echo "$n $flags | params+shards $h | losses $l"
done <<'CFG' | tee "$OUT"
1 --strategy full_shard
2 --strategy full_shard
2 --strategy full_shard --param-dtype bf16
2 --strategy shard_grad_op
2 --strategy no_shard
4 --strategy hybrid_shard --shard-group 2
2 --accum 2 --accum-mode local
2 --accum 2
3 --recompute
2 --wrap auto:0.05
2 --param-dtype bf16 --reduce-dtype bf16
2 --opt lamb --lr 4e-3
2 --opt sgd --momentum 0.9 --nesterov --lr 0.05
2 --opt lion --lr 2e-4 --weight-decay 0.5
2 --img 30 --patch 6 --param-dtype bf16 --opt lamb --lr 4e-3
CFG
