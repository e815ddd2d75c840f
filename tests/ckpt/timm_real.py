#!/usr/bin/python3
"""shardvit's export read by timm itself (PyPI's timm in the test venv, scripts/test_venv.sh;
tests/ckpt/timm_real.sh).

  timm_real.py EXPORT.safetensors LOGITS.safetensors

config.json beside EXPORT gives the model; timm.create_model(config's architecture,
pretrained=False, num_classes, img_size, patch_size, in_chans, embed_dim, depth, num_heads,
mlp_ratio, plus config's qkv_bias/class_token/global_pool/fc_norm/init_values/reg_tokens/no_embed_class) must accept
safetensors.torch.load_file(EXPORT) with strict=True, and its fp32 logits on the images shardvit
dumped (train --dump-logits: tensors images, labels, logits) must equal shardvit's within fp32
tolerance (max |diff| <= 1e-5 * max |logit|, and the same top-1 class). Then the model is built
again with config.json's pretrained_cfg as timm's pretrained_cfg_overlay and timm's
resolve_data_config / resolve_model_data_config resolve it; the result is printed and only
input_size (chans, img, img) is asserted. Exit 0: pass, 1: mismatch, 77: timm not importable."""
import json
import os
import sys

try:
    import safetensors.torch
    import timm
    import torch
    from timm.data import resolve_data_config
except ImportError as e:
    print("SKIP: %s cannot import timm + safetensors + torch (%s; scripts/test_venv.sh installs them)"
          % (sys.executable, e))
    sys.exit(77)


def main():
    export, logits = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(os.path.dirname(os.path.abspath(export)), "config.json")))
    ma = cfg["model_args"]
    kw = dict(num_classes=cfg["num_classes"], img_size=cfg["img_size"], patch_size=cfg["patch_size"],
              in_chans=cfg["in_chans"], embed_dim=cfg["embed_dim"], depth=cfg["depth"],
              num_heads=cfg["num_heads"], mlp_ratio=cfg["mlp_ratio"])
    for k in ("qkv_bias", "class_token", "global_pool", "fc_norm", "init_values", "reg_tokens", "no_embed_class"):
        if k in ma:
            kw[k] = ma[k]
    print("timm %s, torch %s: create_model(%r, pretrained=False, %s)"
          % (timm.__version__, torch.__version__, cfg["architecture"],
             ", ".join("%s=%r" % kv for kv in kw.items())))
    model = timm.create_model(cfg["architecture"], pretrained=False, **kw)
    sd = safetensors.torch.load_file(export)
    res = model.load_state_dict(sd, strict=True)
    print("load_state_dict(strict=True): %d tensors, %s" % (len(sd), res))
    model.eval()
    dump = safetensors.torch.load_file(logits)
    images, want = dump["images"].float(), dump["logits"].float()
    with torch.no_grad():
        got = model(images)
    bad = 0
    if got.shape != want.shape:
        print("FAIL: timm logits %s, shardvit %s" % (tuple(got.shape), tuple(want.shape)))
        return 1
    diff = (got - want).abs().max().item()
    scale = max(want.abs().max().item(), 1e-30)
    same_top1 = bool((got.argmax(1) == want.argmax(1)).all())
    print("logits: %d images x %d classes, max |timm - shardvit| %.3e, relative %.3e (tol 1e-5), top-1 %s"
          % (want.shape[0], want.shape[1], diff, diff / scale, "identical" if same_top1 else "DIFFERS"))
    if not diff <= 1e-5 * scale or not same_top1:
        bad += 1
    # the exported preprocessing, as timm resolves it (values printed, not asserted)
    pc = cfg.get("pretrained_cfg")
    if pc is None:
        print("note: config.json has no pretrained_cfg")
    else:
        m2 = timm.create_model(cfg["architecture"], pretrained=False, pretrained_cfg_overlay=pc, **kw)
        dc = resolve_data_config({}, model=m2)
        print("resolve_data_config(model with config.json's pretrained_cfg): %s" % dc)
        try:
            dc2 = timm.data.resolve_model_data_config(m2)
            print("resolve_model_data_config: %s" % dc2)
        except AttributeError:
            pass
        print("model.pretrained_cfg: %s" % {k: v for k, v in m2.pretrained_cfg.items() if v is not None})
        want_in = (cfg["in_chans"], cfg["img_size"], cfg["img_size"])
        if tuple(dc["input_size"]) != want_in:
            print("FAIL: resolved input_size %s, config %s" % (dc["input_size"], want_in))
            bad += 1
    print("timm_real: %s" % ("FAILED" if bad else "timm reproduces shardvit's export"))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main())
