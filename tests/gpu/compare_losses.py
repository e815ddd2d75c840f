#!/usr/bin/env python3
"""Compare the per-step losses of two shardvit runs (metrics.jsonl, one JSON object per line with
"step" and "loss"). Prints one JSON object: the steps compared, the largest relative difference
and whether it is within --tol. Exit 0 when within tolerance, 1 otherwise, 2 on unreadable input.

Usage: compare_losses.py A/metrics.jsonl B/metrics.jsonl --tol 0.02 [--key loss] [--name LABEL]
(--key grad_norm compares the gradient norms instead: a direct check of the backward pass.)"""
import argparse
import json
import math
import sys


def losses(path, key):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if key in rec and "step" in rec:
                out[int(rec["step"])] = float(rec[key])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=0.02)
    ap.add_argument("--name", default="")
    ap.add_argument("--key", default="loss")
    args = ap.parse_args()
    try:
        la, lb = losses(args.a, args.key), losses(args.b, args.key)
    except (OSError, ValueError) as e:
        print(json.dumps({"name": args.name, "ok": False, "error": str(e)}))
        return 2
    steps = sorted(set(la) & set(lb))
    worst, worst_step = 0.0, None
    finite = True
    for s in steps:
        x, y = la[s], lb[s]
        if not (math.isfinite(x) and math.isfinite(y)):
            finite = False
            continue
        rel = abs(x - y) / max(abs(y), 1e-12)
        if rel > worst:
            worst, worst_step = rel, s
    ok = bool(steps) and finite and worst <= args.tol
    print(json.dumps({"name": args.name, "key": args.key, "steps": len(steps), "max_rel_diff": worst,
                      "worst_step": worst_step, "tol": args.tol, "finite": finite, "ok": ok,
                      "a": [la[s] for s in steps], "b": [lb[s] for s in steps]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
