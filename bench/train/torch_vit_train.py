#!/usr/bin/python3
"""PyTorch training-throughput reference for shardvit's bench (bench/compare_pytorch.sh).

Trains the same ViT as shardvit (timm VisionTransformer semantics: class token, learned
pos_embed incl. the class position, pre-norm blocks, LayerNorm eps 1e-6, qkv with bias, exact
erf GELU, final norm, linear head on token 0) in float32 with AdamW and label-smoothed
cross-entropy on one fixed synthetic batch (so data loading is excluded, as in
`shardvit bench --synthetic`). For each requested intra-op thread count and each requested
precision it runs `--warmup` untimed steps then `--steps` timed steps, repeated `--repeats`
times, and keeps the best repeat. Precisions: fp32, and bf16 = torch.autocast("cpu",
dtype=torch.bfloat16) around forward and loss with fp32 parameters and optimizer (the same
mixed precision as shardvit's --param-dtype bf16; on CPUs with AVX-512 BF16 this PyTorch's
oneDNN runs the linear layers in bf16). Prints one JSON object on stdout: img/s per setting
("<threads>" for fp32, "<threads>-bf16" for bf16) and the best setting.

The module code is the one of tests/model/vit_ref.py (kept independent of shardvit).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "model"))
from vit_ref import VisionTransformer  # noqa: E402

PRESETS = {  # name: img patch in_chans classes dim depth heads
    "vit-28": (28, 4, 1, 10, 192, 6, 3),
    "vit-ti16": (224, 16, 3, 1000, 192, 12, 3),
    "vit-s16": (224, 16, 3, 1000, 384, 12, 6),
    "vit-b16": (224, 16, 3, 1000, 768, 12, 12),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="vit-28", choices=sorted(PRESETS))
    ap.add_argument("--img", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", default="1,2", help="comma-separated intra-op thread counts")
    ap.add_argument("--smoothing", type=float, default=0.1)
    ap.add_argument("--dtypes", default="fp32", help="comma-separated precisions: fp32, bf16 (autocast)")
    a = ap.parse_args()
    img, patch, chans, classes, dim, depth, heads = PRESETS[a.model]
    if a.img:
        img = a.img
    hidden = 4 * dim
    torch.manual_seed(0)
    model = VisionTransformer(img, patch, chans, classes, dim, depth, heads, hidden)
    for p in model.parameters():  # timm-like scale; values do not change the timing
        nn.init.trunc_normal_(p, std=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    lossf = nn.CrossEntropyLoss(label_smoothing=a.smoothing)
    x = torch.randn(a.batch_size, chans, img, img)
    y = torch.randint(0, classes, (a.batch_size,))

    def step(bf16):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = lossf(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss)

    per = {}
    for dt_name in a.dtypes.split(","):
        if dt_name not in ("fp32", "bf16"):
            ap.error("--dtypes: unknown precision %r (fp32, bf16)" % dt_name)
        for nt in [int(t) for t in a.threads.split(",")]:
            torch.set_num_threads(nt)
            best = 0.0
            for _ in range(a.repeats):
                for _ in range(a.warmup):
                    step(dt_name == "bf16")
                t0 = time.perf_counter()
                for _ in range(a.steps):
                    step(dt_name == "bf16")
                dt = time.perf_counter() - t0
                best = max(best, a.steps * a.batch_size / dt)
            key = str(nt) + ("-bf16" if dt_name == "bf16" else "")
            per[key] = best
            print("torch %s batch %d threads %d %s: %.2f img/s" % (a.model, a.batch_size, nt, dt_name, best),
                  file=sys.stderr)
    bt = max(per, key=per.get)
    print(json.dumps({"framework": "pytorch", "version": torch.__version__, "model": a.model, "img": img,
                      "batch_size": a.batch_size, "steps": a.steps, "img_per_s_by_setting": per,
                      "best_setting": bt, "best_threads": int(bt.split("-")[0]),
                      "best_dtype": "bf16" if bt.endswith("-bf16") else "fp32", "img_per_s": per[bt]}))


if __name__ == "__main__":
    main()
