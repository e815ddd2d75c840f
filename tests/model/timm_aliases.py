#!/usr/bin/env python3
"""The timm model names shardvit accepts for --model against timm itself
(tests/model/timm_aliases.sh; run with $SHARDVIT_TEST_PYTHON: timm + torch).

  timm_aliases.py SHARDVIT

Every alias `shardvit info --models` lists: `shardvit info --model ALIAS` prints exactly the
preset's output, and its tensor names and shapes equal timm.create_model(ALIAS, pretrained=False,
num_classes=1000).state_dict() (num_classes 1000 because timm's default pretrained_cfg of
vit_huge_patch14_224 is the in21k trunk without a head; the trunk is what the name fixes).
Names that are not aliases are refused (exit 2), and their timm tensors indeed match no preset
(deit3_*: LayerScale and no class position; *_reg4_gap_*: registers, no class token; distilled
DeiT: a distillation token; *_384 and other patch sizes: other shapes). `info --timm-data` (the
data config train takes from a timm name) equals timm's pretrained_cfg of each alias. Where shardvit's flags
express the model (deit3_* and the register models with the architecture flags, other sizes with
--img / --patch), those flags reproduce timm's tensors exactly. Exit 0 pass, 1 fail."""
import re
import subprocess
import sys

import timm
import torch

NOT_ALIASES = {  # timm name -> shardvit flags that give its shapes (None: no shardvit equivalent)
    "deit3_small_patch16_224": ["--model", "vit-s16", "--layer-scale", "1e-6", "--no-embed-class"],
    "vit_base_patch16_reg4_gap_256": ["--model", "vit-b16", "--img", "256", "--reg-tokens", "4", "--class-token", "0",
                                      "--global-pool", "avg", "--no-embed-class"],
    "deit_base_distilled_patch16_224": None,
    "vit_base_patch16_224_miil": None,  # qkv_bias=False
    "vit_base_patch16_384": ["--model", "vit_base_patch16_224", "--img", "384"],
    "deit_base_patch16_384": ["--model", "deit_base_patch16_224", "--img", "384"],
    "vit_base_patch32_224": ["--model", "vit_base_patch16_224", "--patch", "32"],
}


def info(sv, *args):
    r = subprocess.run([sv, "info", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def shapes_of(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(\S+)\s+\(([\d, ]+)\)\s+\d+", line)
        if m:
            out[m.group(1)] = tuple(int(x) for x in m.group(2).split(","))
    return out


def timm_shapes(name):
    try:
        m = timm.create_model(name, pretrained=False, num_classes=1000, device="meta")
    except TypeError:  # a timm without device=: build it for real
        m = timm.create_model(name, pretrained=False, num_classes=1000)
    return {k: tuple(v.shape) for k, v in m.state_dict().items()}


def main():
    sv = sys.argv[1]
    rc, listing, err = info(sv, "--models")
    assert rc == 0, err
    aliases, presets = {}, []
    for line in listing.splitlines():
        preset, names = line.split()[0], line.split("timm:")[1].split()
        presets.append(preset)
        for n in names:
            if n != "-":
                aliases[n] = preset
    print(f"timm {timm.__version__}: {len(aliases)} aliases listed by shardvit info --models")
    bad = 0
    preset_shapes = {p: shapes_of(info(sv, "--model", p)[1]) for p in presets}
    for name, preset in aliases.items():
        rc, text, err = info(sv, "--model", name)
        if rc != 0 or text != info(sv, "--model", preset)[1]:
            print(f"FAIL: info --model {name} (exit {rc}) differs from info --model {preset}: {err}")
            bad += 1
            continue
        want = timm_shapes(name)
        ok = shapes_of(text) == want
        print(f"{'ok' if ok else 'FAIL'}: {name} = {preset} ({len(want)} tensors)")
        bad += not ok
    for name, flags in NOT_ALIASES.items():
        rc, _, err = info(sv, "--model", name)
        want = timm_shapes(name)
        matches = [p for p, s in preset_shapes.items() if s == want]
        same = flags is not None and shapes_of(info(sv, *flags)[1]) == want
        ok = rc == 2 and not matches and (flags is None or same)
        how = "no shardvit equivalent" if flags is None else " ".join(flags) + (" gives its shapes" if same else
                                                                             " does NOT give its shapes")
        print(f"{'ok' if ok else 'FAIL'}: {name} refused (exit {rc}), matches no preset; {how}")
        bad += not ok
    # the data config train takes from a timm name: timm's pretrained_cfg of the name's default tag
    rc, listing, err = info(sv, "--timm-data")
    assert rc == 0, err
    listed = {}
    for line in listing.splitlines():
        f = line.split()
        listed[f[0]] = dict(mean=tuple(map(float, f[2].split(","))), std=tuple(map(float, f[4].split(","))),
                            interpolation=f[6], crop_pct=float(f[8]))
    if sorted(listed) != sorted(aliases):
        print(f"FAIL: info --timm-data lists {sorted(listed)}, the aliases are {sorted(aliases)}")
        bad += 1
    for name, got in listed.items():
        c = timm.models.get_pretrained_cfg(name)
        want = dict(mean=tuple(c.mean), std=tuple(c.std), interpolation=c.interpolation, crop_pct=c.crop_pct)
        ok = all(abs(a - b) < 1e-12 for a, b in zip(got["mean"] + got["std"], want["mean"] + want["std"])) and \
            got["interpolation"] == want["interpolation"] and abs(got["crop_pct"] - want["crop_pct"]) < 1e-12
        print(f"{'ok' if ok else 'FAIL'}: {name} data config {got} (timm: {want})")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
