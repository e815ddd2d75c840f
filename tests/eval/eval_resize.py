#!/usr/bin/env python3
"""timm side of tests/eval/eval_resize.sh (run with $SHARDVIT_TEST_PYTHON: timm + safetensors).

  eval_resize.py write DIR
      DIR/src: a random timm ViT (img 32, patch 8, 3 channels, 4 classes, dim 32, depth 2,
      heads 2; pos_embed and head scaled up so that the position embedding moves the logits)
      as model.safetensors + config.json. Then the same weights loaded by timm's own
      checkpoint_filter_fn (timm's defaults: bicubic, antialias) into models of another shape,
      each saved beside its config.json: DIR/img48 (img 48: pos_embed 4x4 -> 6x6), DIR/img16
      (img 16: 4x4 -> 2x2), DIR/p4 (patch 4: patch_embed 8 -> 4 and pos_embed 4x4 -> 8x8),
      DIR/both (img 48, patch 4); and DIR/plain48: img 48 with antialias=False (a control that
      must NOT match shardvit's default).
  eval_resize.py params DIR/both/model.safetensors PARAMS.bin
      PARAMS.bin (train --save-params, canonical order) equals the file within 1e-5 of each
      tensor's max |value| (the resampled pos_embed and patch_embed; the rest bitwise).
  eval_resize.py same A.jsonl B.jsonl [--differ]
      predict --json --topk 0 outputs: the same images, log-probabilities (logits less their
      logsumexp, so small probabilities count as much as large ones) equal within 1e-5 (float32
      logits of magnitude ~10 carry ~1e-6 rounding); with --differ: some differ by more than 1e-4."""
import json
import math
import os
import sys

# numpy, torch, timm and safetensors are imported by the commands that use them: `same`, called
# most, reads JSON only (importing torch and timm costs 2-3 s of CPU per call)

ARCH = "vit_base_patch16_224"
SHAPE = dict(in_chans=3, num_classes=4, embed_dim=32, depth=2, num_heads=2, mlp_ratio=4.0)


def save(model, d, img, patch):
    from safetensors.torch import save_file
    os.makedirs(d, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(d, "model.safetensors"))
    cfg = dict(architecture=ARCH, img_size=img, patch_size=patch, **SHAPE)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)


def write(d):
    import torch
    import timm
    from safetensors.torch import load_file
    from timm.models.vision_transformer import checkpoint_filter_fn
    torch.manual_seed(0)
    src = timm.create_model(ARCH, pretrained=False, img_size=32, patch_size=8, **SHAPE)
    with torch.no_grad():
        src.pos_embed.mul_(40.0)
        src.head.weight.mul_(20.0)
    save(src, os.path.join(d, "src"), 32, 8)
    sd = load_file(os.path.join(d, "src", "model.safetensors"))
    for name, img, patch, aa in [("img48", 48, 8, True), ("img16", 16, 8, True), ("p4", 32, 4, True),
                                 ("both", 48, 4, True), ("plain48", 48, 8, False)]:
        m = timm.create_model(ARCH, pretrained=False, img_size=img, patch_size=patch, **SHAPE)
        m.load_state_dict(checkpoint_filter_fn(dict(sd), m, antialias=aa), strict=True)
        save(m, os.path.join(d, name), img, patch)
        print(f"{name}: timm {timm.__version__} checkpoint_filter_fn(antialias={aa}) into img {img} patch {patch}")
    return 0


def params(path, bin_path):
    import numpy as np
    from safetensors.torch import load_file
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ckpt"))
    from timm_check import canonical
    sd = {k: v.numpy() for k, v in load_file(path).items()}
    depth = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("blocks."))
    raw, o, bad = np.fromfile(bin_path, dtype="<f4"), 0, 0
    for n in canonical(depth):
        want = sd[n].astype(np.float32)
        got = raw[o:o + want.size].reshape(want.shape)
        o += want.size
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        if n in ("pos_embed", "patch_embed.proj.weight"):
            print(f"{n}: shardvit vs timm checkpoint_filter_fn relative error {err:.2e} (tol 1e-5)")
            bad += err > 1e-5
        elif got.tobytes() != want.tobytes():
            print(f"FAIL: {n} differs")
            bad += 1
    if o != raw.size:
        print(f"FAIL: {bin_path} has {raw.size} values, expected {o}")
        return 1
    return 1 if bad else 0


def same(a, b, differ):
    la = [json.loads(l) for l in open(a)]
    lb = [json.loads(l) for l in open(b)]
    assert len(la) == len(lb) and la, (len(la), len(lb))
    worst = 0.0
    for x, y in zip(la, lb):
        assert x["image"] == y["image"]
        px = {t["index"]: t["prob"] for t in x["top"]}
        py = {t["index"]: t["prob"] for t in y["top"]}
        assert px.keys() == py.keys()
        worst = max(worst, max(abs(math.log(px[k]) - math.log(py[k])) for k in px))
    print(f"{os.path.basename(a)} vs {os.path.basename(b)}: {len(la)} images, max |log-probability difference| "
          f"{worst:.2e} ({'must exceed 1e-4' if differ else 'tol 1e-5'})")
    return 0 if (worst > 1e-4 if differ else worst <= 1e-5) else 1


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        return write(sys.argv[2])
    if cmd == "params":
        return params(sys.argv[2], sys.argv[3])
    if cmd == "same":
        return same(sys.argv[2], sys.argv[3], "--differ" in sys.argv[4:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
