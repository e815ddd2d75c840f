#!/usr/bin/env python3
"""Mimetic initialisation of the attention weights of a timm ViT safetensors file.

Trockman & Kolter, "Mimetic Initialization of Self-Attention Layers" (ICML 2023): for every
block and head h (head_dim k = D / heads), Wq_h Wk_h^T ~ a1 Z1 + b1 I and Wv_h Wproj_h ~
a2 Z2 - b2 I, each the rank-k truncation of the SVD of the D x D matrix on the right, with
Z ~ N(0, 1/D) entries. Every other tensor is copied unchanged. Used for the M1 run of
docs/results.md ("The optimizer's second moment and the attention initialisation"), where a
model's own initial weights are exported (`shardvit train ... --steps 0 --out RUN`, then
`shardvit export RUN init.safetensors`), rewritten by this script, and trained with
`shardvit train ... --init-from mimetic.safetensors`.

Usage: mimetic_init.py IN.safetensors OUT.safetensors HEADS SEED [A1 B1 A2 B2]
       (defaults 0.7 0.7 0.4 0.4). Needs numpy; F32 tensors only; OUT must not exist. numpy's
       SVD runs on a threaded LAPACK, so two runs may differ in the last bits of a few values
       (seen: 4e-15). Tested by tests/train/mimetic_init.sh.
"""
import json
import os
import stat
import struct
import sys

import numpy as np


def read_safetensors(path):
    """Tensors, their names in file order and the metadata; exits with a message on anything
    that is not a regular, well-formed F32 safetensors file (a FIFO is refused, not read)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            sys.exit(f"{path}: not a regular file")
        raw = open(path, "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        if n > len(raw) - 8:
            sys.exit(f"{path}: header length {n} runs past the end of the file ({len(raw)} bytes)")
        header = json.loads(raw[8 : 8 + n])
        meta = header.pop("__metadata__", None)
        body = raw[8 + n :]
        tensors = {}
        for name, v in header.items():
            if v["dtype"] != "F32":
                sys.exit(f"{path}: {name} is {v['dtype']}; export with --dtype fp32")
            s, e = v["data_offsets"]
            if not 0 <= s <= e <= len(body) or e - s != 4 * int(np.prod(v["shape"])):
                sys.exit(f"{path}: {name}: data_offsets {s}..{e} do not fit shape {v['shape']} in the file")
            tensors[name] = np.frombuffer(body[s:e], dtype=np.float32).reshape(v["shape"]).copy()
    except (OSError, struct.error, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{path}: not a readable safetensors file ({e})")
    return tensors, list(header), meta


def write_safetensors(path, tensors, order, meta):
    header, blobs, off = {}, [], 0
    for name in order:
        b = tensors[name].astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "xb") as f:  # never replaces anything (main checks first, for the message)
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def rank_k(m, k):
    """The rank-k SVD truncation of m as two factors (D x k each): m ~ left @ right.T."""
    u, s, vt = np.linalg.svd(m)
    r = np.sqrt(s[:k])
    return u[:, :k] * r, vt[:k].T * r


def main():
    if len(sys.argv) not in (5, 9):
        sys.exit(__doc__)
    src, dst, heads, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    a1, b1, a2, b2 = (float(x) for x in sys.argv[5:9]) if len(sys.argv) == 9 else (0.7, 0.7, 0.4, 0.4)
    if os.path.lexists(dst):
        sys.exit(f"{dst}: exists; will not replace it")
    t, order, meta = read_safetensors(src)
    rng = np.random.default_rng(seed)
    blocks = 0
    while f"blocks.{blocks}.attn.qkv.weight" in t:
        qkv, proj = t[f"blocks.{blocks}.attn.qkv.weight"], t[f"blocks.{blocks}.attn.proj.weight"]
        d = proj.shape[0]
        if heads < 1 or d % heads or qkv.shape != (3 * d, d) or proj.shape != (d, d):
            sys.exit(f"{src}: block {blocks}: qkv {qkv.shape} / proj {proj.shape} do not split into {heads} heads")
        k = d // heads
        eye = np.eye(d)
        for h in range(heads):
            rows = slice(h * k, (h + 1) * k)
            wq, wk = rank_k(a1 * rng.standard_normal((d, d)) / np.sqrt(d) + b1 * eye, k)
            qkv[rows] = wq.T  # q_h = x @ wq
            qkv[d + h * k : d + (h + 1) * k] = wk.T  # k_h = x @ wk
            wv, wo = rank_k(a2 * rng.standard_normal((d, d)) / np.sqrt(d) - b2 * eye, k)
            qkv[2 * d + h * k : 2 * d + (h + 1) * k] = wv.T  # v_h = x @ wv
            proj[:, rows] = wo  # out += (P v_h) @ wo.T
        blocks += 1
    if blocks == 0:
        sys.exit(f"{src}: no blocks.N.attn.qkv.weight tensors")
    write_safetensors(dst, t, order, meta)
    print(f"{dst}: {blocks} blocks x {heads} heads, a1 b1 a2 b2 = {a1} {b1} {a2} {b2}")


if __name__ == "__main__":
    main()
