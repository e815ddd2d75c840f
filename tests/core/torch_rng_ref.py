#!/usr/bin/env python3
"""Check test_torch_rng's values against torch and timm (tests/core/test_torch_rng.c).

usage: torch_rng_ref.py VALUES
  gen SEED A B C U V: three torch.randn(1) of a generator seeded with SEED, then two
                      torch.rand(1) after seeding it again;
  noise SEED T PCT STD TYPE N: timm's Scheduler._calculate_noise(T) with noise_seed SEED,
                      noise_pct PCT, noise_std STD, noise_type TYPE.
Every value must be equal (the C side prints 17 significant digits: the exact double).
Exit 0: all equal, 1: a mismatch."""
import sys

import torch
from timm.scheduler import CosineLRScheduler


def main():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = CosineLRScheduler(opt, t_initial=10, t_in_epochs=False)
    n = {"gen": 0, "noise": 0}
    bad = 0
    for line in open(sys.argv[1]):
        f = line.split()
        if f[0] == "gen":
            seed, got = int(f[1]), [float(x) for x in f[2:]]
            g = torch.Generator()
            g.manual_seed(seed)
            want = [torch.randn(1, generator=g).item() for _ in range(3)]
            g.manual_seed(seed)
            want += [torch.rand(1, generator=g).item() for _ in range(2)]
        else:
            sched.noise_seed, t = int(f[1]), int(f[2])
            sched.noise_pct, sched.noise_std, sched.noise_type = float(f[3]), float(f[4]), f[5]
            got, want = [float(f[6])], [sched._calculate_noise(t)]
        n[f[0]] += 1
        if got != want:
            bad += 1
            if bad <= 5:
                print(f"mismatch: {line.strip()}: torch/timm {want!r}")
    print(f"torch generator: {n['gen']} seeds, timm noise: {n['noise']} draws, {bad} mismatches")
    return 1 if bad or not n["gen"] or not n["noise"] else 0


if __name__ == "__main__":
    sys.exit(main())
