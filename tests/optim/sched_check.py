#!/usr/bin/env python3
"""Compare the learning rate shardvit logged per optimizer step (metrics.jsonl, --log-every 1)
with a reference (docs/training.md "Learning-rate schedule").

usage: sched_check.py RUN_DIR SPE timm SCHED KEY=VALUE...         timm's scheduler classes, per update
       sched_check.py RUN_DIR SPE timm-epochs SCHED KEY=VALUE...  the same, stepped per epoch
       sched_check.py RUN_DIR SPE steps SCHED KEY=VALUE...        shardvit's --warmup-steps form

timm: create_scheduler_v2(optimizer, SCHED, step_on_epochs=False, updates_per_epoch=SPE, **KEYS)
stepped as timm's train.py steps it with --sched-on-updates: step k trains with the group LR
set after step_update(num_updates=k) (the constructor's value for k = 0); the run must be as
long as the epochs create_scheduler_v2 returns. timm-epochs: create_scheduler_v2(...,
step_on_epochs=True) stepped as timm's train.py steps it without --sched-on-updates: every
update of epoch e trains with the group LR (step_update(num_updates) after each one, a no-op
for an epoch scheduler) and s.step(e + 1) runs at the end of epoch e. steps: the direct formula of core/lr_sched.h
(ramp warmup_lr + (lr - warmup_lr)(k+1)/W, then timm's decay at time k - W over total - W).
Every step must agree within 1e-7 relative (the log prints 9 significant digits).
Exit 0: all agree, 1: mismatch."""
import json
import math
import sys


def logged(run_dir):
    out = []
    for line in open(f"{run_dir}/metrics.jsonl"):
        rec = json.loads(line)
        if "lr" in rec and "loss" in rec:
            out.append((rec["step"], rec["lr"]))
    return [lr for _, lr in sorted(out)]


def conv(v):
    if "," in v:
        return [int(x) for x in v.split(",")]
    try:
        return int(v)
    except ValueError:
        return float(v)


def timm_lrs(sched, spe, kw):
    import torch
    from timm.scheduler import create_scheduler_v2
    lr = kw.pop("lr")
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    s, epochs = create_scheduler_v2(opt, sched, step_on_epochs=False, updates_per_epoch=spe, **kw)
    out = []
    for k in range(int(epochs * spe)):
        out.append(opt.param_groups[0]["lr"])
        s.step_update(num_updates=k + 1)
    return out


def timm_epoch_lrs(sched, spe, kw):
    import torch
    from timm.scheduler import create_scheduler_v2
    lr = kw.pop("lr")
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    s, epochs = create_scheduler_v2(opt, sched, step_on_epochs=True, updates_per_epoch=spe, **kw)
    out, num_updates = [], 0
    for e in range(int(epochs)):
        for _ in range(spe):
            out.append(opt.param_groups[0]["lr"])
            num_updates += 1
            s.step_update(num_updates=num_updates)
        s.step(e + 1)
    return out


def steps_lrs(sched, n, kw):
    lr, W, wlr = kw["lr"], kw.get("warmup", 0), kw.get("warmup_lr", 0.0)
    span = n - W
    out = []
    for k in range(n):
        if k < W:
            out.append(wlr + (lr - wlr) * (k + 1) / W)
            continue
        t = k - W
        if sched == "cosine":
            p = min(t / span, 1.0) if span > 0 else 1.0
            out.append(kw["min_lr"] + 0.5 * (lr - kw["min_lr"]) * (1 + math.cos(math.pi * p)))
        elif sched == "step":
            out.append(lr * kw["decay_rate"] ** (t // kw["decay_steps"]))
        else:
            raise SystemExit(f"no formula for {sched}")
    return out


def main():
    run_dir, spe, ref, sched = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    kw = {k: conv(v) for k, v in (a.split("=", 1) for a in sys.argv[5:])}
    got = logged(run_dir)
    if ref == "timm":
        want = timm_lrs(sched, spe, kw)
    elif ref == "timm-epochs":
        want = timm_epoch_lrs(sched, spe, kw)
    else:
        want = steps_lrs(sched, len(got), kw)
    if len(got) != len(want):
        print(f"FAIL: shardvit ran {len(got)} steps, the reference schedule has {len(want)}")
        return 1
    bad = [(k, g, w) for k, (g, w) in enumerate(zip(got, want)) if abs(g - w) > 1e-7 * max(abs(w), 1e-30)]
    distinct = len(set(round(w, 12) for w in want))
    print(f"{sched} ({ref}): {len(got)} steps, {distinct} distinct LRs, {len(bad)} mismatches")
    for k, g, w in bad[:5]:
        print(f"  step {k}: shardvit {g!r}, reference {w!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
