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
("<threads>" for fp32, "<threads>-bf16" for bf16) and the best setting. With --compile (torch >= 2)
every setting is also timed with torch.compile(model) (compiled afresh per thread count; the
compilation falls into the warm-up steps) and keeps the better of eager and compiled: key
best_mode / mode_by_setting says which won, img_per_s_eager_compile has both figures.

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
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile(model) (torch >= 2) and keep the better of eager and compiled")
    a = ap.parse_args()
    if a.warmup < 1 and a.compile:
        ap.error("--compile needs --warmup >= 1 (the compilation must not be timed)")
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

    compile_note = None
    if a.compile and not hasattr(torch, "compile"):
        compile_note = "torch %s has no torch.compile: eager only" % torch.__version__
        print("note: " + compile_note, file=sys.stderr)

    def step(m, bf16):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = lossf(m(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss.detach())

    def timed(m, bf16):  # best img/s over the repeats
        best = 0.0
        for _ in range(a.repeats):
            for _ in range(a.warmup):
                step(m, bf16)
            t0 = time.perf_counter()
            for _ in range(a.steps):
                step(m, bf16)
            dt = time.perf_counter() - t0
            best = max(best, a.steps * a.batch_size / dt)
        return best

    try_compile = a.compile and compile_note is None
    per, mode_of, both = {}, {}, {}
    for dt_name in a.dtypes.split(","):
        if dt_name not in ("fp32", "bf16"):
            ap.error("--dtypes: unknown precision %r (fp32, bf16)" % dt_name)
        for nt in [int(t) for t in a.threads.split(",")]:
            torch.set_num_threads(nt)
            key = str(nt) + ("-bf16" if dt_name == "bf16" else "")
            rates = {"eager": timed(model, dt_name == "bf16")}
            if try_compile:
                try:
                    torch._dynamo.reset()  # compile afresh for this thread count
                    rates["compile"] = timed(torch.compile(model), dt_name == "bf16")
                except Exception as e:  # noqa: BLE001 - any compiler failure means: eager only
                    compile_note = "torch.compile failed (%s: %s): eager only" % (type(e).__name__, str(e)[:200])
                    print("note: " + compile_note, file=sys.stderr)
                    try_compile = False
            win = max(rates, key=rates.get)
            per[key], mode_of[key] = rates[win], win
            if "compile" in rates:
                both[key] = [rates["eager"], rates["compile"]]
            print("torch %s batch %d threads %d %s: %s -> %s" % (a.model, a.batch_size, nt, dt_name, ", ".join(
                "%s %.2f img/s" % kv for kv in rates.items()), win), file=sys.stderr)
    bt = max(per, key=per.get)
    out = {"framework": "pytorch", "version": torch.__version__, "python": sys.executable,
           "mkldnn": torch.backends.mkldnn.is_available(), "model": a.model, "img": img,
           "batch_size": a.batch_size, "steps": a.steps, "img_per_s_by_setting": per,
           "mode_by_setting": mode_of, "best_setting": bt, "best_threads": int(bt.split("-")[0]),
           "best_dtype": "bf16" if bt.endswith("-bf16") else "fp32", "best_mode": mode_of[bt], "img_per_s": per[bt]}
    if a.compile:
        out["img_per_s_eager_compile"] = both
        out["compile_note"] = compile_note
    print(json.dumps(out))


if __name__ == "__main__":
    main()
