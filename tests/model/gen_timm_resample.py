#!/usr/bin/env python3
"""Reference values of timm's weight resampling, written once into
tests/model/data/timm_resample.safetensors for test_resample_timm (which needs no Python).

  SHARDVIT_TEST_PYTHON=/path/to/venv/python tests/model/gen_timm_resample.py [OUT]

With timm's own functions and their defaults (bicubic, antialias=True):
  pos14, pos14_to4    resample_abs_pos_embed (1, 1+14*14, 6) -> new_size [4, 4] (downsampling)
  pos7, pos7_to10     resample_abs_pos_embed (1, 1+7*7, 6) -> [10, 10] (upsampling)
  *_noaa              the same with antialias=False (PyTorch's plain bicubic)
  patch16, patch16_to8  resample_patch_embed (3, 2, 16, 16) -> [8, 8]
  patch4, patch4_to8    resample_patch_embed (3, 2, 4, 4) -> [8, 8]
  *_f64               the same computation as resample_patch_embed in float64 (timm's
                      _compute_resize_matrix / torch.linalg.pinv / _apply_resampling with
                      dtype float64): the exact pseudo-inverse, free of float32 SVD error
Inputs are torch.randn with seed 0. The file's metadata records the timm and torch versions."""
import os
import sys

import torch
import timm
from safetensors.torch import save_file
from timm.layers import resample_abs_pos_embed, resample_patch_embed
from timm.layers.patch_embed import _apply_resampling, _compute_resize_matrix


def patch_f64(w, new):
    m = _compute_resize_matrix(tuple(w.shape[-2:]), tuple(new), "bicubic", True, w.device, torch.float64)
    return _apply_resampling(w.double(), torch.linalg.pinv(m), tuple(new), torch.float64, torch.float64)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "data", "timm_resample.safetensors")
    g = torch.Generator().manual_seed(0)
    t = {}
    t["pos14"] = torch.randn(1, 1 + 14 * 14, 6, generator=g)
    t["pos7"] = torch.randn(1, 1 + 7 * 7, 6, generator=g)
    t["patch16"] = torch.randn(3, 2, 16, 16, generator=g)
    t["patch4"] = torch.randn(3, 2, 4, 4, generator=g)
    t["pos14_to4"] = resample_abs_pos_embed(t["pos14"], new_size=[4, 4])
    t["pos7_to10"] = resample_abs_pos_embed(t["pos7"], new_size=[10, 10])
    t["pos14_to4_noaa"] = resample_abs_pos_embed(t["pos14"], new_size=[4, 4], antialias=False)
    t["pos7_to10_noaa"] = resample_abs_pos_embed(t["pos7"], new_size=[10, 10], antialias=False)
    t["patch16_to8"] = resample_patch_embed(t["patch16"], [8, 8])
    t["patch4_to8"] = resample_patch_embed(t["patch4"], [8, 8])
    t["patch16_to8_f64"] = patch_f64(t["patch16"], [8, 8])
    t["patch4_to8_f64"] = patch_f64(t["patch4"], [8, 8])
    for k in ("patch16_to8", "patch4_to8"):
        d = (t[k].double() - t[k + "_f64"]).abs().max().item() / t[k + "_f64"].abs().max().item()
        print(f"{k}: timm's float32 result differs from float64 by {d:.2e} of max |value|")
    t = {k: v.contiguous() for k, v in t.items()}
    save_file(t, out, metadata={"timm": timm.__version__, "torch": torch.__version__,
                                "generator": "tests/model/gen_timm_resample.py"})
    print(f"wrote {out}: {len(t)} tensors (timm {timm.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
