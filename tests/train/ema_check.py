#!/usr/bin/env python3
"""Checks for train --model-ema (tests/train/model_ema.sh; docs/training.md "Weight EMA").

  ema_check.py recur P0.bin|P0.safetensors DIR K --decay D [--warmup] [--skip S ...] [--n0 N] [--timm]
      DIR/raw_k.safetensors and DIR/ema_k.safetensors (k = 1..K) are `shardvit export` and
      `export --ema` of the checkpoint after step k; P0.bin the initial weights (--save-params of a
      0-step run). Asserts, bitwise, ema_0 = p_0 and after every step k
        ema_k = lerp(ema_{k-1}, p_k, 1 - decay(n))   (applied step: n = its 1-based count)
        ema_k = ema_{k-1}                            (skipped step S, 0-based, also p_k = p_{k-1})
      with lerp = torch.lerp_'s two forms, each float32 operation rounded on its own, and
      decay(n) = 0 for n <= 1, else D, or min(D, 1 - (1 + (n - 1))^(-2/3)) with --warmup.
      --timm: the decay of every update comes from timm's own ModelEmaV3.get_decay, and timm's
      ModelEmaV3.update (torch lerp_, possibly fused) replayed over p_0..p_K matches ema_K to 1e-6.
      --n0 N: N updates were applied before step 1 (resumed run; ema_0 = p_0 still).
  ema_check.py same EXPORT.safetensors PARAMS.bin
      the export's tensor data (in file order) is byte for byte the parameter file.
  ema_check.py timm EXPORT.safetensors
      timm.create_model from config.json beside it + load_state_dict(strict=True), one forward.
Standard library only, except --timm / timm (torch, timm). Exit 0 pass, 1 fail."""
import argparse
import json
import os
import struct
import sys
from array import array


def st_read(path):
    """(ordered [(name, shape, floats)], data bytes) of an F32 safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    ents = sorted(((k, v) for k, v in hdr.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
    out = []
    for k, v in ents:
        assert v["dtype"] == "F32", (path, k, v["dtype"])
        a, b = v["data_offsets"]
        out.append((k, v["shape"], array("f", data[a:b])))
    return out, data, hdr.get("__metadata__", {})


def flat(path):
    ents, data, _ = st_read(path)
    return array("f", data), ents


def params(path):
    with open(path, "rb") as f:
        return array("f", f.read())


def decay_formula(d, warmup, n):
    s = n - 1
    if s <= 0:
        return 0.0
    if not warmup:
        return d
    return max(min(1 - (1 + s) ** (-2.0 / 3.0), d), 0.0)


def lerp(e, x, w):
    """torch.lerp_ forms, float32 rounding after every operation (array('f') rounds)."""
    diff = array("f", [xi - ei for xi, ei in zip(x, e)])
    if w < 0.5:
        prod = array("f", [w * di for di in diff])
        return array("f", [ei + pi for ei, pi in zip(e, prod)])
    omw = array("f", [1.0 - w])[0]
    prod = array("f", [di * omw for di in diff])
    return array("f", [xi - pi for xi, pi in zip(x, prod)])


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if struct.pack("f", x) != struct.pack("f", y):
            return i, x, y
    return None


def cmd_recur(a):
    p0 = flat(a.p0)[0] if a.p0.endswith(".safetensors") else params(a.p0)
    timm_decay = None
    if a.timm:
        import torch
        from timm.utils import ModelEmaV3
        probe = ModelEmaV3(torch.nn.Linear(1, 1), decay=a.decay, use_warmup=a.warmup)
        timm_decay = probe.get_decay
    ema = p0
    raw_prev = p0
    raws = [p0]
    n = a.n0
    for k in range(1, a.K + 1):
        raw, _ = flat(os.path.join(a.dir, "raw_%d.safetensors" % k))
        got, _ = flat(os.path.join(a.dir, "ema_%d.safetensors" % k))
        if len(raw) != len(p0) or len(got) != len(p0):
            print("FAIL: step %d: %d / %d values, expected %d" % (k, len(raw), len(got), len(p0)))
            return 1
        if (k - 1) in a.skip:
            if raw != raw_prev:
                print("FAIL: step %d was to be skipped but the weights changed" % k)
                return 1
            want = ema
            what = "skipped (EMA unchanged)"
        else:
            n += 1
            d = timm_decay(n) if timm_decay else decay_formula(a.decay, a.warmup, n)
            want = lerp(ema, raw, float(array("f", [1.0 - d])[0]))
            what = "update %d, decay %.9g" % (n, d)
        bad = first_diff(got, want)
        if bad:
            print("FAIL: step %d (%s): EMA element %d is %r, the formula gives %r" % (k, what, *bad))
            return 1
        print("ok step %d: %s, %d values bitwise" % (k, what, len(got)))
        ema, raw_prev = got, raw
        raws.append(raw)
    if a.timm:
        return timm_replay(a, raws, ema)
    return 0


def timm_replay(a, raws, ema_last):
    """timm's ModelEmaV3 over the same weight sequence (a parameter vector as one tensor)."""
    import torch
    from timm.utils import ModelEmaV3

    class Flat(torch.nn.Module):
        def __init__(self, v):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor(v, dtype=torch.float32))

    model = Flat(list(raws[0]))
    ema = ModelEmaV3(model, decay=a.decay, use_warmup=a.warmup)
    n = a.n0
    for k in range(1, len(raws)):
        if (k - 1) in a.skip:
            continue  # shardvit: a skipped step applies nothing and updates no EMA
        with torch.no_grad():
            model.w.copy_(torch.tensor(list(raws[k]), dtype=torch.float32))
        n += 1
        ema.update(model, step=n)
    got = torch.tensor(list(ema_last), dtype=torch.float32)
    err = (ema.module.w.detach() - got).abs().max().item()
    print("timm ModelEmaV3 replay over %d updates: max |timm - shardvit| = %.3e (tol 1e-6)" % (n, err))
    return 0 if err <= 1e-6 else 1


def cmd_same(a):
    data, _ = flat(a.export)
    p = params(a.params)
    if data.tobytes() != p.tobytes():
        bad = first_diff(data, p)
        print("FAIL: %s differs from %s (%s)" % (a.export, a.params, bad))
        return 1
    print("ok %s == %s (%d values)" % (os.path.basename(a.export), os.path.basename(a.params), len(p)))
    return 0


def cmd_timm(a):
    import safetensors.torch
    import timm
    import torch
    cfg = json.load(open(os.path.join(os.path.dirname(os.path.abspath(a.export)), "config.json")))
    kw = dict(num_classes=cfg["num_classes"], img_size=cfg["img_size"], patch_size=cfg["patch_size"],
              in_chans=cfg["in_chans"], embed_dim=cfg["embed_dim"], depth=cfg["depth"],
              num_heads=cfg["num_heads"], mlp_ratio=cfg["mlp_ratio"])
    model = timm.create_model(cfg["architecture"], pretrained=False, **kw)
    sd = safetensors.torch.load_file(a.export)
    print("timm %s: load_state_dict(strict=True) of %d tensors: %s"
          % (timm.__version__, len(sd), model.load_state_dict(sd, strict=True)))
    meta = st_read(a.export)[2]
    if meta.get("shardvit_weights") != "ema":
        print("FAIL: metadata shardvit_weights = %r, expected 'ema'" % meta.get("shardvit_weights"))
        return 1
    model.eval()
    with torch.no_grad():
        y = model(torch.zeros(2, cfg["in_chans"], cfg["img_size"], cfg["img_size"]))
    ok = tuple(y.shape) == (2, cfg["num_classes"]) and bool(torch.isfinite(y).all())
    print("forward: logits %s, finite %s" % (tuple(y.shape), ok))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recur")
    r.add_argument("p0")
    r.add_argument("dir")
    r.add_argument("K", type=int)
    r.add_argument("--decay", type=float, required=True)
    r.add_argument("--warmup", action="store_true")
    r.add_argument("--skip", type=int, action="append", default=[])
    r.add_argument("--timm", action="store_true")
    r.add_argument("--n0", type=int, default=0, help="applied updates before step 1 (a resumed EMA)")
    s = sub.add_parser("same")
    s.add_argument("export")
    s.add_argument("params")
    t = sub.add_parser("timm")
    t.add_argument("export")
    a = ap.parse_args()
    return {"recur": cmd_recur, "same": cmd_same, "timm": cmd_timm}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
