#!/usr/bin/env bash
# The main job: install what is missing, build, import Fashion-MNIST from Debian's package as
# JPEGs, train a ViT with FSDP (full_shard, bf16 compute) over 2 MPI ranks, evaluate on the
# 10,000 test images, export the weights as timm safetensors and write the HTML report.
# Outputs go to ${OUT:-runs/fashion-mnist}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
OUT=${OUT:-runs/fashion-mnist}
DATA=${DATA:-data-cache/fashion-mnist}
if [ ! -f "$DATA/classes.txt" ]; then
    ./build/app/shardvit prep fashion-mnist --out "$DATA"
fi
mpiexec -n 2 ./build/app/shardvit train --model vit-28 --data "$DATA/train" --val-data "$DATA/test" \
    --strategy full_shard --param-dtype bf16 --batch-size 128 --steps "${STEPS:-400}" --lr 2e-3 --warmup 40 \
    --smoothing 0.1 --log-every 20 --out "$OUT"
./build/app/shardvit export "$OUT" "$OUT/model.safetensors"
./build/app/shardvit report "$OUT" --out "$OUT/report.html"
echo "main job: outputs in $OUT: metrics.jsonl, eval.json, confusion.csv, events.out.tfevents.*,"
echo "  checkpoints/, model.safetensors + config.json (timm), report.html"
