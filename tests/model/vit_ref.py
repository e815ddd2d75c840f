#!/usr/bin/python3
"""PyTorch reference for shardvit's ViT (docs/testing.md).

Usage: vit_ref.py CASE_DIR [CASE_DIR ...]

Each CASE_DIR holds what tests/model/test_vit_torch.c wrote from shardvit:
  config.txt    key value lines: img patch in_chans num_classes dim depth heads hidden batch
                smoothing loss
  manifest.txt  one line per tensor in canonical order: name offset numel ndim d0 [d1 ...]
  params.bin    every tensor's fp32 values, little-endian, concatenated at those offsets
  grads.bin     shardvit's gradients of the mean loss, same layout
  images.bin    (B, C, img, img) fp32;  labels.bin (B) int32;  logits.bin (B, K) fp32

The model below is written independently of shardvit and mirrors timm's VisionTransformer
(global_pool='token', class token, learned pos_embed including the class position, pre-norm
blocks, LayerNorm eps 1e-6, qkv Linear with bias, non-causal softmax attention, exact-erf
GELU MLP, final norm, linear head on token 0) with timm's parameter names, so the weights load
with a strict state_dict. The loss is nn.CrossEntropyLoss(label_smoothing=s), mean reduction.

Forward and backward run in float32 and in float64. For the logits, the loss and every
gradient the relative error max|a - b| / max|b| of shardvit against each must be <= 1e-4;
the float32-vs-float64 column shows the size of fp32 rounding alone. A table is printed;
each case writes result.txt (tensors compared, worst error). Exit 0: all match, 1: mismatch,
2: unreadable input.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

TOL = 1e-4


class PatchEmbed(nn.Module):
    def __init__(self, in_chans, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # (B, P, D)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # (B, H, N, dh) each
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()  # exact erf form
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, hidden)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, img, patch, in_chans, num_classes, dim, depth, heads, hidden):
        super().__init__()
        self.patch_embed = PatchEmbed(in_chans, dim, patch)
        tokens = 1 + (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, dim))
        self.blocks = nn.ModuleList([Block(dim, heads, hidden) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0])


class BadInput(Exception):
    pass


def read_config(case):
    cfg = {}
    with open(os.path.join(case, "config.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                cfg[parts[0]] = parts[1]
    need = "img patch in_chans num_classes dim depth heads hidden batch smoothing loss".split()
    missing = [k for k in need if k not in cfg]
    if missing:
        raise BadInput("%s/config.txt lacks %s" % (case, ", ".join(missing)))
    out = {k: int(cfg[k]) for k in need[:9]}
    out["smoothing"] = float(cfg["smoothing"])
    out["loss"] = float(cfg["loss"])
    return out


def read_manifest(case):
    rows = []
    with open(os.path.join(case, "manifest.txt")) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            name, off, numel, ndim = p[0], int(p[1]), int(p[2]), int(p[3])
            shape = tuple(int(s) for s in p[4:4 + ndim])
            if len(shape) != ndim or math.prod(shape) != numel:
                raise BadInput("%s/manifest.txt: bad row %r" % (case, line.strip()))
            rows.append((name, off, numel, shape))
    return rows


def read_bin(case, fname, dtype, count):
    a = np.fromfile(os.path.join(case, fname), dtype=dtype)
    if a.size != count:
        raise BadInput("%s/%s holds %d values, expected %d" % (case, fname, a.size, count))
    return a


def run_torch(cfg, rows, params, images, labels, dtype):
    torch.manual_seed(0)
    model = VisionTransformer(cfg["img"], cfg["patch"], cfg["in_chans"], cfg["num_classes"], cfg["dim"],
                              cfg["depth"], cfg["heads"], cfg["hidden"])
    sd = {}
    for name, off, numel, shape in rows:
        sd[name] = torch.from_numpy(params[off:off + numel].astype(np.float64).reshape(shape))
    own = model.state_dict()
    if set(own) != set(sd):
        raise BadInput("tensor names differ from timm's: only in shardvit %s, only in reference %s"
                       % (sorted(set(sd) - set(own)), sorted(set(own) - set(sd))))
    for name, t in sd.items():
        if tuple(own[name].shape) != tuple(t.shape):
            raise BadInput("%s: shape %s, reference %s" % (name, tuple(t.shape), tuple(own[name].shape)))
    model.load_state_dict(sd, strict=True)
    model = model.to(dtype)
    x = torch.from_numpy(images).to(dtype)
    y = torch.from_numpy(labels.astype(np.int64))
    logits = model(x)
    loss = nn.CrossEntropyLoss(label_smoothing=cfg["smoothing"])(logits, y)
    loss.backward()
    grads = {n: p.grad.detach().to(torch.float64).numpy().ravel() for n, p in model.named_parameters()}
    return logits.detach().to(torch.float64).numpy(), float(loss), grads


def rel_err(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    scale = np.max(np.abs(b))
    diff = np.max(np.abs(a - b))
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def check_case(case):
    cfg = read_config(case)
    rows = read_manifest(case)
    total = rows[-1][1] + rows[-1][2] if rows else 0
    B, K, C, img = cfg["batch"], cfg["num_classes"], cfg["in_chans"], cfg["img"]
    params = read_bin(case, "params.bin", "<f4", total)
    sv_grads = read_bin(case, "grads.bin", "<f4", total)
    images = read_bin(case, "images.bin", "<f4", B * C * img * img).reshape(B, C, img, img)
    labels = read_bin(case, "labels.bin", "<i4", B)
    sv_logits = read_bin(case, "logits.bin", "<f4", B * K).reshape(B, K)

    ref32 = run_torch(cfg, rows, params, images, labels, torch.float32)
    ref64 = run_torch(cfg, rows, params, images, labels, torch.float64)

    print("case %s: img %d patch %d in_chans %d classes %d dim %d depth %d heads %d hidden %d batch %d "
          "smoothing %g" % (os.path.basename(case.rstrip("/")), img, cfg["patch"], C, K, cfg["dim"],
                            cfg["depth"], cfg["heads"], cfg["hidden"], B, cfg["smoothing"]))
    print("  %-28s %11s %12s %12s %12s" % ("tensor", "max|ref|", "sv-vs-t32", "sv-vs-t64", "t32-vs-t64"))
    items = [("logits", sv_logits, ref32[0], ref64[0]), ("loss", [cfg["loss"]], [ref32[1]], [ref64[1]])]
    for name, off, numel, shape in rows:
        items.append((name, sv_grads[off:off + numel], ref32[2][name], ref64[2][name]))
    bad, worst = 0, 0.0
    for name, sv, r32, r64 in items:
        e32, e64, e3264 = rel_err(sv, r32), rel_err(sv, r64), rel_err(r32, r64)
        ok = e32 <= TOL and e64 <= TOL
        worst = max(worst, e32, e64)
        bad += not ok
        print("  %-28s %11.3e %12.3e %12.3e %12.3e%s" % (name, np.max(np.abs(np.asarray(r64))), e32, e64, e3264,
                                                         "" if ok else "  MISMATCH"))
    print("  %d compared, %d mismatched, worst relative error %.3e (tolerance %.0e)" % (len(items), bad, worst, TOL))
    with open(os.path.join(case, "result.txt"), "w") as f:
        f.write("compared %d\nmismatched %d\nworst %.6e\n" % (len(items), bad, worst))
    return bad


def main(argv):
    if len(argv) < 2:
        print("usage: vit_ref.py CASE_DIR [CASE_DIR ...]", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    bad = 0
    for case in argv[1:]:
        try:
            bad += check_case(case)
        except (BadInput, OSError, ValueError) as e:
            print("vit_ref.py: %s" % e, file=sys.stderr)
            return 2
    print("vit_ref.py: %s" % ("OK" if bad == 0 else "%d tensors mismatched" % bad))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
