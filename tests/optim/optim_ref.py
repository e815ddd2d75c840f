#!/usr/bin/env python3
"""Reference check of shardvit's update rules and layer-wise LR decay (docs/testing.md).

usage: optim_ref.py CASE_DIR [CASE_DIR ...]   (written by tests/optim/test_optim_ref.c)

  case.txt      key value lines: ref lr beta1 beta2 eps weight_decay clip momentum nesterov
                layer_decay steps and the ViT shape (img patch in_chans num_classes dim depth
                heads mlp_ratio)
  manifest.txt  per tensor in canonical order: name offset numel no_decay lr_scale
  params.bin    fp32 weights, canonical order: the initial ones, then after each step
  grads.bin     fp32 gradients of each step, canonical order

timm's VisionTransformer of that shape supplies the parameter names and shapes; the parameter
groups are timm's param_groups_layer_decay (layer_decay > 0) or its decay / no-decay split
(param_groups_weight_decay), and shardvit's per-tensor lr_scale and no_decay must equal them.
The reference optimizer (timm.optim.Lamb, torch.optim.SGD, timm.optim.Lion, torch.optim.AdamW;
single-tensor code paths) then steps the same tensors with the same gradients, learning rate
lr * (s + 1) / steps at step s times each group's lr_scale, and shardvit's --clip applied as
timm's train.py applies --clip-grad (torch.nn.utils.clip_grad_norm_) before the step. For
ref lamb_max_grad_norm the clip is Lamb's own max_grad_norm instead. Every tensor after every
step must agree within max|a - b| <= 2e-6 + 2e-5 * max|b|. Exit 0: all agree, 1: mismatch."""
import sys

import numpy as np
import torch
from timm.models.vision_transformer import VisionTransformer
from timm.optim import Lamb, Lion
from timm.optim._param_groups import param_groups_layer_decay, param_groups_weight_decay


def read_case(d):
    cfg = {}
    for line in open(f"{d}/case.txt"):
        k, v = line.split()
        cfg[k] = v
    man = []
    for line in open(f"{d}/manifest.txt"):
        name, off, n, nd, sc = line.split()
        man.append((name, int(off), int(n), int(nd), float(sc)))
    steps = int(cfg["steps"])
    total = sum(m[2] for m in man)
    params = np.fromfile(f"{d}/params.bin", dtype="<f4").reshape(steps + 1, total)
    grads = np.fromfile(f"{d}/grads.bin", dtype="<f4").reshape(steps, total)
    return cfg, man, params, grads


def check_case(d):
    cfg, man, params, grads = read_case(d)
    f = lambda k: float(cfg[k])
    i = lambda k: int(cfg[k])
    model = VisionTransformer(img_size=i("img"), patch_size=i("patch"), in_chans=i("in_chans"),
                              num_classes=i("num_classes"), embed_dim=i("dim"), depth=i("depth"),
                              num_heads=i("heads"), mlp_ratio=f("mlp_ratio"), reg_tokens=i("reg_tokens"))
    named = dict(model.named_parameters())
    names = [m[0] for m in man]
    if sorted(names) != sorted(named):
        print(f"{d}: tensor names differ from timm's: {sorted(set(names) ^ set(named))}")
        return False
    wd, ld = f("weight_decay"), f("layer_decay")
    if ld > 0:
        groups = param_groups_layer_decay(model, weight_decay=wd, no_weight_decay_list=model.no_weight_decay(),
                                          layer_decay=ld)
    else:
        groups = param_groups_weight_decay(model, weight_decay=wd, no_weight_decay_list=model.no_weight_decay())
    by_id = {id(p): n for n, p in named.items()}
    ok = True
    info = {}
    for g in groups:
        for p in g["params"]:
            info[by_id[id(p)]] = (g.get("lr_scale", 1.0), g["weight_decay"])
    for name, off, n, nd, sc in man:
        tscale, twd = info[name]
        if abs(tscale - sc) > 1e-6 * tscale or (twd == 0) != (nd == 1 or wd == 0):
            print(f"{d}: {name}: shardvit lr_scale {sc} no_decay {nd}, timm lr_scale {tscale} weight_decay {twd}")
            ok = False
    # load shardvit's initial weights
    with torch.no_grad():
        for name, off, n, nd, sc in man:
            named[name].copy_(torch.from_numpy(params[0, off:off + n].copy()).view_as(named[name]))
    ref, lr = cfg["ref"], f("lr")
    for g in groups:
        g["lr_scale"] = g.get("lr_scale", 1.0)
    if ref.startswith("lamb"):
        opt = Lamb(groups, lr=lr, betas=(f("beta1"), f("beta2")), eps=f("eps"), weight_decay=wd,
                   max_grad_norm=f("clip") if ref == "lamb_max_grad_norm" else None, foreach=False)
    elif ref == "sgd":
        opt = torch.optim.SGD(groups, lr=lr, momentum=f("momentum"), nesterov=bool(i("nesterov")),
                              weight_decay=wd, foreach=False)
    elif ref == "lion":
        opt = Lion(groups, lr=lr, betas=(f("beta1"), f("beta2")), weight_decay=wd, foreach=False)
    else:
        opt = torch.optim.AdamW(groups, lr=lr, betas=(f("beta1"), f("beta2")), eps=f("eps"), weight_decay=wd,
                                foreach=False)
    steps = i("steps")
    worst = 0.0
    for s in range(steps):
        for name, off, n, nd, sc in man:
            named[name].grad = torch.from_numpy(grads[s, off:off + n].copy()).view_as(named[name])
        if f("clip") > 0 and ref != "lamb_max_grad_norm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), f("clip"))
        for g in opt.param_groups:
            g["lr"] = lr * (s + 1) / steps * g["lr_scale"]
        opt.step()
        for name, off, n, nd, sc in man:
            a = params[s + 1, off:off + n].astype(np.float64)
            b = named[name].detach().numpy().reshape(-1).astype(np.float64)
            err = np.max(np.abs(a - b))
            tol = 2e-6 + 2e-5 * np.max(np.abs(b))
            worst = max(worst, err / tol)
            if not err <= tol:
                print(f"{d}: step {s + 1} {name}: max |shardvit - reference| {err:.3g} > {tol:.3g}")
                ok = False
    print(f"{d.rsplit('/', 1)[-1]:>20}: {'ok' if ok else 'MISMATCH'} ({ref}, worst error {worst:.3f} of tolerance)")
    return ok


def main():
    torch.manual_seed(0)
    ok = all([check_case(d) for d in sys.argv[1:]])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
