#!/usr/bin/env python3
"""Compare the learning rate shardvit logged per optimizer step (metrics.jsonl, --log-every 1)
with a reference (docs/training.md "Learning-rate schedule").

usage: sched_check.py RUN_DIR SPE timm SCHED KEY=VALUE...         timm's scheduler classes, per update
       sched_check.py --batch FILE       one check per line of FILE: NAME RUN_DIR SPE REF SCHED KEY=VALUE...
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
        return [conv(x) for x in v.split(",")]
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


EXTRA = ("cycle_mul", "cycle_decay", "cycle_limit", "k_decay", "noise", "noise_pct", "noise_std", "noise_seed",
         "noise_type")


def create(opt, sched, spe, on_epochs, kw):
    from timm.scheduler import create_scheduler_v2
    kw = dict(kw)
    noise_type = kw.pop("noise_type", None)
    if "noise" in kw and not isinstance(kw["noise"], list):
        kw["noise"] = [kw["noise"]]  # train.py's --lr-noise is nargs='+'
    s, epochs = create_scheduler_v2(opt, sched, step_on_epochs=on_epochs, updates_per_epoch=spe, **kw)
    if noise_type:
        s.noise_type = noise_type
    return s, epochs


def timm_lrs(sched, spe, kw):
    import torch
    lr = kw.pop("lr")
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    s, epochs = create(opt, sched, spe, False, kw)
    n = int(epochs * spe)
    if hasattr(s, "get_cycle_length"):  # every update of the cycles and the cooldown
        exact = s.get_cycle_length() + kw.get("cooldown_epochs", 0) * spe
        if exact != n:
            print(f"  timm's schedule is {exact} updates; train.py would train its {epochs} whole epochs, {n}")
        n = int(exact)
    out = []
    for k in range(n):
        out.append(opt.param_groups[0]["lr"])
        s.step_update(num_updates=k + 1)
    return out


def timm_epoch_lrs(sched, spe, kw):
    import torch
    lr = kw.pop("lr")
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    s, epochs = create(opt, sched, spe, True, kw)
    out, num_updates = [], 0
    for e in range(int(epochs)):
        for _ in range(spe):
            out.append(opt.param_groups[0]["lr"])
            num_updates += 1
            s.step_update(num_updates=num_updates)
        s.step(e + 1)
    return out


def steps_timm_lrs(sched, spe, n, kw):
    """shardvit's --warmup ramp, then the decay at k - W (cycles or k-decay: timm's cycle scheduler
    without warmup; else the formula of steps_lrs), then the noise timm's scheduler draws at k."""
    import torch
    from timm.scheduler import CosineLRScheduler, PolyLRScheduler
    lr, W, wlr = kw["lr"], kw.get("warmup", 0), kw.get("warmup_lr", 0.0)
    cool = kw.get("cooldown_epochs", 0) * spe
    T = kw["num_epochs"] * spe - W if "num_epochs" in kw else n - W - cool
    noise = kw.get("noise")
    if noise is not None:
        noise = noise if isinstance(noise, list) else [noise]
        noise = [f * T for f in noise]
        noise = noise[0] if len(noise) == 1 else noise
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    args = dict(t_initial=T, lr_min=kw.get("min_lr", 0.0), cycle_mul=kw.get("cycle_mul", 1.0),
                cycle_decay=kw.get("cycle_decay", 0.5), cycle_limit=kw.get("cycle_limit", 1),
                k_decay=kw.get("k_decay", 1.0), t_in_epochs=False, noise_range_t=noise,
                noise_pct=kw.get("noise_pct", 0.67), noise_std=kw.get("noise_std", 1.0),
                noise_seed=kw.get("noise_seed", 42))
    if sched == "poly":
        s = PolyLRScheduler(opt, power=kw["decay_rate"], **args)
    else:  # cosine; for the others only its noise is used
        s = CosineLRScheduler(opt, **args)
    if "noise_type" in kw:
        s.noise_type = kw["noise_type"]
    cycled = any(k in kw for k in ("cycle_mul", "cycle_decay", "cycle_limit", "k_decay"))
    if cycled:
        want = W + s.get_cycle_length() + cool
        if n != want:
            print(f"FAIL: shardvit ran {n} steps, the --warmup ramp + timm's cycles + cooldown are {want}")
            return None
        base = [wlr + (lr - wlr) * (k + 1) / W if k < W else s._get_lr(k - W)[0] for k in range(n)]
    else:
        base = steps_lrs(sched, n, kw)
    out = []
    for k, v in enumerate(base):
        if k > 0 and s._is_apply_noise(k):
            v = v + v * s._calculate_noise(k)
        out.append(v)
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


def check(args):
    run_dir, spe, ref, sched = args[0], int(args[1]), args[2], args[3]
    kw = {k: conv(v) for k, v in (a.split("=", 1) for a in args[4:])}
    got = logged(run_dir)
    if ref == "timm":
        want = timm_lrs(sched, spe, kw)
    elif ref == "timm-epochs":
        want = timm_epoch_lrs(sched, spe, kw)
    elif any(k in kw for k in EXTRA):
        want = steps_timm_lrs(sched, spe, len(got), kw)
        if want is None:
            return 1
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


def main():
    if sys.argv[1] != "--batch":
        return check(sys.argv[1:])
    # --batch FILE: one check per line, "NAME RUN_DIR SPE REF SCHED KEY=VALUE...", in one process
    # (timm and torch imported once); every line is checked, exit 1 when any failed
    failed = []
    for line in open(sys.argv[2]):
        name, *args = line.split()
        print(f"{name}: ", end="", flush=True)
        if check(args):
            failed.append(name)
    if failed:
        print(f"FAIL: {len(failed)} schedules differ from their reference: {' '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
