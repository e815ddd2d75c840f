#!/usr/bin/python3
"""Independent checks of shardvit's timm-compatible export/import (tests/ckpt/timm.sh).

Safetensors files are read and written here with numpy and the standard library only (no
safetensors package); the model is tests/model/vit_ref.py's VisionTransformer, a PyTorch twin of
timm's with timm's parameter names.

  timm_check.py check EXPORT_F32 LOGITS [EXPORT_BF16]
      EXPORT_F32 (and config.json beside it) has exactly timm's names and shapes; a PyTorch ViT
      built from config.json and loaded (strict) from the file reproduces the logits shardvit
      dumped (--dump-logits) for the same images; the bf16 export is the f32 one rounded to
      nearest even.
  timm_check.py write OUT --img I --patch P --chans C --classes K --dim D --depth L --heads H
      writes random weights with timm names (header keys sorted as the reference writer does).
  timm_check.py params FILE PARAMS_BIN
      PARAMS_BIN (train --save-params: canonical order) equals FILE's tensors bit for bit.
  timm_check.py resampled FILE PARAMS_BIN FRESH_BIN --img I --patch P --classes K ...
      the model (img I) seeded from FILE (another grid, another head): pos_embed equals torch's
      bicubic interpolation (align_corners=False, antialias=True: timm's default), the head equals the fresh
      init (FRESH_BIN), everything else equals FILE bit for bit.
Exit 0: pass, 1: mismatch."""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
from vit_ref import VisionTransformer  # noqa: E402

DT = {"F32": (np.float32, 4), "BF16": (np.uint16, 2), "I32": (np.int32, 4), "F16": (np.float16, 2)}


def st_read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    out = {}
    for name, e in hdr.items():
        dt, size = DT[e["dtype"]]
        b, end = e["data_offsets"]
        a = np.frombuffer(raw[8 + n + b:8 + n + end], dtype=dt).reshape(e["shape"])
        out[name] = (e["dtype"], a)
    return out, meta


def st_write(path, tensors):
    """tensors: name -> float32 array. Keys sorted, header padded to 8 bytes with spaces."""
    hdr, blobs, off = {}, [], 0
    for name in sorted(tensors):
        b = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def canonical(depth):
    names = ["patch_embed.proj.weight", "patch_embed.proj.bias", "cls_token", "pos_embed", "norm.weight",
             "norm.bias", "head.weight", "head.bias"]
    for l in range(depth):
        names += [f"blocks.{l}.{n}" for n in ["norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias",
                                              "attn.proj.weight", "attn.proj.bias", "norm2.weight", "norm2.bias",
                                              "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"]]
    return names


def model_from(cfg, dtype=torch.float64):
    m = VisionTransformer(cfg["img_size"], cfg["patch_size"], cfg["in_chans"], cfg["num_classes"], cfg["embed_dim"],
                          cfg["depth"], cfg["num_heads"], int(cfg["embed_dim"] * cfg["mlp_ratio"]))
    return m.to(dtype)


def check(a):
    bad = 0
    ex, meta = st_read(a.export)
    cfg = json.load(open(os.path.join(os.path.dirname(os.path.abspath(a.export)), "config.json")))
    for k in ["architecture", "num_classes", "img_size", "patch_size", "embed_dim", "depth", "num_heads",
              "mlp_ratio", "in_chans", "global_pool"]:
        if k not in cfg:
            print(f"FAIL: config.json lacks {k}")
            bad += 1
    if cfg.get("global_pool") != "token" or cfg.get("model_args", {}).get("global_pool") != "token":
        print("FAIL: config.json global_pool is not 'token'")
        bad += 1
    model = model_from(cfg)
    sd = model.state_dict()
    if set(sd) != set(ex):
        print(f"FAIL: names differ: missing {sorted(set(sd) - set(ex))}, extra {sorted(set(ex) - set(sd))}")
        return 1
    for k, v in sd.items():
        if tuple(v.shape) != ex[k][1].shape or ex[k][0] != "F32":
            print(f"FAIL: {k}: {ex[k][0]} {ex[k][1].shape}, timm has {tuple(v.shape)}")
            bad += 1
    model.load_state_dict({k: torch.from_numpy(ex[k][1].astype(np.float64)) for k in sd}, strict=True)
    try:  # timm itself, when it is installed
        import timm
        tm = timm.create_model(cfg["architecture"], pretrained=False, **cfg["model_args"])
        tm.load_state_dict({k: torch.from_numpy(ex[k][1].copy()) for k in ex}, strict=True)
        print("timm: load_state_dict(strict=True) accepted the export")
    except ImportError:
        print("timm: not installed (the PyTorch twin in tests/model/vit_ref.py is used)")
    dump, _ = st_read(a.logits)
    images = torch.from_numpy(dump["images"][1].astype(np.float64))
    want = dump["logits"][1].astype(np.float64)
    with torch.no_grad():
        got = model(images).numpy()
    err = np.abs(got - want).max() / max(np.abs(got).max(), 1e-30)
    print(f"logits: {want.shape[0]} images, relative error {err:.2e} (tol 1e-4)")
    if not err <= 1e-4:
        bad += 1
    if a.bf16:
        b16, _ = st_read(a.bf16)
        for k in sd:
            if b16[k][0] != "BF16" or not np.array_equal(b16[k][1], f32_to_bf16(ex[k][1])):
                print(f"FAIL: bf16 export of {k} is not the f32 export rounded to nearest even")
                bad += 1
        print(f"bf16: {len(sd)} tensors are the f32 values rounded to nearest even")
    print(f"{len(sd)} tensors with timm names/shapes; metadata {meta}")
    return 1 if bad else 0


def write(a):
    cfg = {"img_size": a.img, "patch_size": a.patch, "in_chans": a.chans, "num_classes": a.classes,
           "embed_dim": a.dim, "depth": a.depth, "num_heads": a.heads, "mlp_ratio": 4.0}
    g = torch.Generator().manual_seed(a.seed)
    t = {k: (torch.randn(v.shape, generator=g, dtype=torch.float64) * 0.1).float().numpy()
         for k, v in model_from(cfg).state_dict().items()}
    st_write(a.out, t)
    print(f"wrote {len(t)} tensors to {a.out}")
    return 0


def flat(path, depth, shapes):
    raw = np.fromfile(path, dtype="<f4")
    out, o = {}, 0
    for n in canonical(depth):
        k = int(np.prod(shapes[n]))
        out[n] = raw[o:o + k].reshape(shapes[n])
        o += k
    assert o == raw.size, f"{path}: {raw.size} values, expected {o}"
    return out


def params(a):
    src, _ = st_read(a.file)
    depth = 1 + max(int(k.split(".")[1]) for k in src if k.startswith("blocks."))
    got = flat(a.params, depth, {k: v[1].shape for k, v in src.items()})
    bad = [k for k in got if got[k].tobytes() != src[k][1].astype("<f4").tobytes()]
    print(f"import: {len(got) - len(bad)} of {len(got)} tensors bitwise equal to {os.path.basename(a.file)}")
    return 1 if bad else 0


def resampled(a):
    src, _ = st_read(a.file)
    depth = 1 + max(int(k.split(".")[1]) for k in src if k.startswith("blocks."))
    cfg = {"img_size": a.img, "patch_size": a.patch, "in_chans": a.chans, "num_classes": a.classes,
           "embed_dim": a.dim, "depth": depth, "num_heads": a.heads, "mlp_ratio": 4.0}
    shapes = {k: tuple(v.shape) for k, v in model_from(cfg).state_dict().items()}
    got, fresh = flat(a.params, depth, shapes), flat(a.fresh, depth, shapes)
    bad = 0
    for k in got:
        if k.startswith("head."):
            ok = np.array_equal(got[k], fresh[k])
        elif k == "pos_embed":
            pe = torch.from_numpy(src[k][1].copy())
            gi, go, d = int(round((pe.shape[1] - 1) ** 0.5)), a.img // a.patch, pe.shape[2]
            grid = pe[:, 1:].reshape(1, gi, gi, d).permute(0, 3, 1, 2)
            grid = F.interpolate(grid, size=(go, go), mode="bicubic", align_corners=False, antialias=True)
            want = torch.cat([pe[:, :1], grid.permute(0, 2, 3, 1).reshape(1, go * go, d)], dim=1).numpy()
            err = np.abs(got[k] - want).max()
            print(f"pos_embed {gi}x{gi} -> {go}x{go}: max abs difference to torch bicubic (antialias) {err:.2e} (tol 1e-5)")
            ok = err <= 1e-5
        else:
            ok = got[k].tobytes() == src[k][1].astype("<f4").tobytes()
        if not ok:
            print(f"FAIL: {k}")
            bad += 1
    print(f"resampled import: {len(got) - bad} of {len(got)} tensors as expected (head fresh, pos_embed resampled)")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("export")
    c.add_argument("logits")
    c.add_argument("bf16", nargs="?")
    for name in ["write", "resampled"]:
        p = sub.add_parser(name)
        if name == "write":
            p.add_argument("out")
            p.add_argument("--depth", type=int, required=True)
            p.add_argument("--seed", type=int, default=1)
        else:
            p.add_argument("file")
            p.add_argument("params")
            p.add_argument("fresh")
        for k in ["img", "patch", "chans", "classes", "dim", "heads"]:
            p.add_argument("--" + k, type=int, required=True)
    p = sub.add_parser("params")
    p.add_argument("file")
    p.add_argument("params")
    a = ap.parse_args()
    return {"check": check, "write": write, "params": params, "resampled": resampled}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
