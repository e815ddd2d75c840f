#!/usr/bin/env python3
"""Compare two shardvit training runs: loss sequences (metrics.jsonl) and final parameters
(--save-params files, raw little-endian float32 in canonical order). Standard library only.

usage: compare_runs.py RUN_A RUN_B PARAMS_A PARAMS_B --loss-rtol X --param-atol Y [--bitwise] [--first-step N]
--first-step N compares the losses of steps >= N only (a resumed run logs only the steps after
its checkpoint). Exit 0 when within tolerance (or bitwise identical with --bitwise), 1 otherwise."""
import argparse
import json
import struct
import sys


def losses(run_dir, first=0):
    out = []
    with open(f"{run_dir}/metrics.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            if "loss" in rec and rec["step"] >= first:
                out.append((rec["step"], rec["loss"]))
    return out


def params(path):
    with open(path, "rb") as f:
        data = f.read()
    return data, struct.unpack(f"<{len(data) // 4}f", data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("params_a")
    ap.add_argument("params_b")
    ap.add_argument("--loss-rtol", type=float, default=1e-4)
    ap.add_argument("--param-atol", type=float, default=1e-4)
    ap.add_argument("--bitwise", action="store_true")
    ap.add_argument("--first-step", type=int, default=0)
    a = ap.parse_args()
    la, lb = losses(a.run_a, a.first_step), losses(a.run_b, a.first_step)
    if [s for s, _ in la] != [s for s, _ in lb] or not la:
        print(f"FAIL: logged steps differ or empty: {len(la)} vs {len(lb)}")
        return 1
    raw_a, pa = params(a.params_a)
    raw_b, pb = params(a.params_b)
    if len(pa) != len(pb):
        print(f"FAIL: parameter counts differ: {len(pa)} vs {len(pb)}")
        return 1
    if a.bitwise:
        same = raw_a == raw_b and all(x == y for (_, x), (_, y) in zip(la, lb))
        print(f"bitwise: losses and {len(pa)} parameters {'identical' if same else 'DIFFER'}")
        return 0 if same else 1
    worst_loss = max(abs(x - y) / max(abs(y), 1e-12) for (_, x), (_, y) in zip(la, lb))
    worst_param = max(abs(x - y) for x, y in zip(pa, pb))
    print(f"steps {len(la)}: max loss rel diff {worst_loss:.3e} (tol {a.loss_rtol:g}); "
          f"max param abs diff {worst_param:.3e} over {len(pa)} params (tol {a.param_atol:g})")
    return 0 if worst_loss <= a.loss_rtol and worst_param <= a.param_atol else 1


if __name__ == "__main__":
    sys.exit(main())
