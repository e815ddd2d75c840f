#!/usr/bin/env bash
# Synthetic training learns (mean loss of the last 10 steps below 1.2, about half of chance
# ln(10) = 2.303) and the same seed gives a bitwise-identical loss sequence. `--data synthetic`
# beside a directory named synthetic trains on the generated set and says that it does not read the
# directory; `--data ./synthetic` reads it.
set -euo pipefail
SV=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
A="--model vit-28 --dim 48 --depth 2 --heads 3 --batch-size 32 --steps 150 --lr 2e-3 --warmup 5 --smoothing 0 --synth-samples 2048 --log-every 1 --seed 3 --workers 1 --threads 1"
"$SV" train $A --out "$tmp/a" >"$tmp/a.log" 2>&1 || { tail "$tmp/a.log"; exit 1; }
"$SV" train $A --out "$tmp/b" >"$tmp/b.log" 2>&1 || { tail "$tmp/b.log"; exit 1; }
last=$(tail -10 "$tmp/a/metrics.jsonl" | sed -E 's/.*"loss":([0-9.eE+-]+).*/\1/' | awk '{s += $1} END {print s / NR}')
first=$(grep -m1 '"loss":' "$tmp/a/metrics.jsonl" | sed -E 's/.*"loss":([0-9.eE+-]+).*/\1/')
echo "synthetic: first loss $first, last loss $last (mean of the last 10 steps; threshold 1.2, chance 2.303)"
awk -v l="$last" 'BEGIN { exit !(l < 1.2) }' || { echo "FAIL: loss $last did not fall below 1.2"; exit 1; }
grep '"loss":' "$tmp/a/metrics.jsonl" | cut -d, -f1-3 >"$tmp/a.loss"
grep '"loss":' "$tmp/b/metrics.jsonl" | cut -d, -f1-3 >"$tmp/b.loss"
[ "$(wc -l <"$tmp/a.loss")" = 150 ] || { echo "FAIL: expected 150 step records"; exit 1; }
cmp "$tmp/a.loss" "$tmp/b.loss" || { echo "FAIL: same seed, different loss sequence"; exit 1; }
echo "ok: bitwise-identical loss sequence for the same seed"
# the keyword beside a directory of that name (12 JPEGs of 3 classes): warned, generated data used
mkdir -p "$tmp/cwd" && cd "$tmp/cwd"
"$SV" prep synthetic --out "$tmp/syn" --classes 3 --per-class 4 --test-per-class 0 --width 40 --height 40 >"$tmp/p.log" 2>&1 ||
    { tail "$tmp/p.log"; exit 1; }
cp -r "$tmp/syn/train" synthetic
B="--model vit-28 --img 32 --dim 32 --depth 1 --heads 2 --batch-size 4 --epochs 1 --workers 1 --threads 1"
"$SV" train $B --num-classes 10 --data synthetic --synth-samples 40 >"$tmp/k.log" 2>&1 || { tail "$tmp/k.log"; exit 1; }
grep -q "data 'synthetic' is the generated data set; the 'synthetic' in the working directory is not read" "$tmp/k.log" ||
    { echo "FAIL: --data synthetic beside ./synthetic: no warning"; tail "$tmp/k.log"; exit 1; }
grep -q "step 10/10 " "$tmp/k.log" || { echo "FAIL: --data synthetic did not train an epoch of the 40 generated samples"; grep "step " "$tmp/k.log"; exit 1; }
"$SV" train $B --data ./synthetic >"$tmp/d.log" 2>&1 || { tail "$tmp/d.log"; exit 1; }
grep -q "not read" "$tmp/d.log" && { echo "FAIL: ./synthetic warned"; exit 1; }
grep -q "step 3/3 " "$tmp/d.log" || { echo "FAIL: ./synthetic did not train an epoch of its 12 images"; grep "step " "$tmp/d.log"; exit 1; }
echo "ok: --data synthetic beside ./synthetic warned and generated; ./synthetic read the directory"
# throughput counts training time only: the first logged window does not include the set-up (the
# MFU peak's calibration, here 2 s: a window of 2 steps x 16 images that held it could not exceed
# 16 img/s; a tiny model's steps run thousands of images a second)
cd "$tmp"
"$SV" train --model vit-28 --dim 32 --depth 1 --heads 2 --batch-size 16 --steps 4 --log-every 2 --synth-samples 64 \
    --workers 1 --threads 1 --mfu-calib-seconds 2 --out "$tmp/calib" >"$tmp/calib.log" 2>&1 ||
    { tail "$tmp/calib.log"; exit 1; }
first=$(grep -m1 '"img_per_s":' "$tmp/calib/metrics.jsonl" | sed -E 's/.*"img_per_s":([0-9.eE+-]+).*/\1/')
awk -v v="$first" 'BEGIN { exit !(v > 64) }' ||
    { echo "FAIL: the first logged window ran at $first img/s: the 2 s calibration was counted"; exit 1; }
echo "ok: the first logged window ($first img/s) excludes the set-up"
# the progress line (a terminal only) after a resume late in the run: its rate counts the steps this
# process trained, not the run's (resumed at step 38 of 40, it showed ~20x the real rate)
if command -v script >/dev/null; then
    R="--model vit-28 --dim 32 --depth 1 --heads 2 --batch-size 16 --synth-samples 64 --workers 1 --threads 1 --mfu-calib-seconds 0"
    "$SV" train $R --steps 38 --out "$tmp/pr" >"$tmp/pr.log" 2>&1 || { tail "$tmp/pr.log"; exit 1; }
    script -q -e -c "\"$SV\" train $R --steps 40 --log-every 1 --out \"$tmp/pr\" --resume auto" /dev/null >"$tmp/pr2.log" 2>&1 ||
        { tail "$tmp/pr2.log"; exit 1; }
    shown=$(tr '\r' '\n' <"$tmp/pr2.log" | grep -o 'step 40/40 .* | [0-9.]* img/s' | tail -1 | sed -E 's/.* \| ([0-9.]+) img\/s/\1/')
    logged=$(grep '"step":39,\|"step":40,' "$tmp/pr/metrics.jsonl" | sed -E 's/.*"img_per_s":([0-9.eE+-]+).*/\1/' |
        sort -g | tail -1)
    [ -n "$shown" ] && [ -n "$logged" ] || { echo "FAIL: no progress line or no logged rate"; tail -5 "$tmp/pr2.log"; exit 1; }
    awk -v s="$shown" -v l="$logged" 'BEGIN { exit !(s < 3 * l) }' ||
        { echo "FAIL: the progress line showed $shown img/s after the resume, metrics.jsonl at most $logged"; exit 1; }
    echo "ok: progress line after a resume: $shown img/s (metrics.jsonl: up to $logged)"
else
    echo "skip (no script(1) for a terminal): the progress line's rate after a resume is not checked here"
fi
