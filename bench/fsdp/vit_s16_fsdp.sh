#!/usr/bin/env bash
# FSDP measurements on vit-s16 at 224 (synthetic data): exposed communication at 2 ranks (time
# ranks spend blocked waiting in collectives / training time) and per-rank peak memory at 1, 2
# and 4 ranks, planner vs measured. Prints a markdown table. Not a test.
# usage: bench/fsdp/vit_s16_fsdp.sh [BUILD_DIR] [STEPS]
set -euo pipefail
source "$(dirname "$0")/../../scripts/usage.sh" "$@"
case "${1:-}" in -*) sv_usage_refuse "unknown option '$1'" ;; esac
BUILD=${1:-build}
STEPS=${2:-6}
SV=$BUILD/app/shardvit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
COMMON="--model vit-s16 --batch-size 16 --steps $STEPS --warmup 1 --synth-samples 64 --log-every 1 --workers 1"
echo "date: $(date -u +%F) machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| ranks | planned MiB/rank | measured arena MiB/rank | max RSS MiB (rank 0) | img/s (last step) | exposed comm |"
echo "|---|---|---|---|---|---|"
for n in 1 2 4; do
    extra=()
    [ "$n" -eq 2 ] && extra=(--trace "$tmp/trace.json")
    mpiexec -n "$n" "$SV" train $COMMON "${extra[@]}" >"$tmp/log$n" 2>&1 || { tail "$tmp/log$n"; exit 1; }
    plan=$("$SV" plan --model vit-s16 --batch-size 16 --world "$n" | awk '/^  total/ {print $2}')
    meas=$(sed -nE 's/.*arena ([0-9.]+) MiB \(planned.*/\1/p' "$tmp/log$n")
    rss=$(sed -nE 's/.*process RSS ([0-9.]+) MiB.*/\1/p' "$tmp/log$n")
    ips=$(grep -E "step $STEPS/$STEPS" "$tmp/log$n" | sed -nE 's/.*img\/s ([0-9.]+).*/\1/p')
    exp=$(sed -nE 's/.*exposed communication: .*\(([0-9.]+%)\).*/\1/p' "$tmp/log$n")
    label=$n
    [ "$n" -gt "$(nproc)" ] && label="$n (oversubscribed)"
    echo "| $label | $plan | $meas | $rss | $ips | $exp |"
done
echo
echo "trace of the 2-rank run: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['traceEvents']), 'events')" "$tmp/trace.json")"
