#!/usr/bin/python3
"""A timm model with register tokens and no_embed_class, made by timm, read by shardvit
(tests/ckpt/timm_reg_import.sh).

  timm_reg_import.py make OUT.safetensors   timm.create_model of the vit_*_reg4_gap_* layout
                                            (no class token, 4 registers, pos_embed for the
                                            patches only, LayerScale, average pooling) at a tiny
                                            size, every tensor perturbed so that the registers,
                                            pos_embed and both blocks matter; saved without a
                                            config.json
  timm_reg_import.py check OUT.safetensors LOGITS.safetensors
                                            the same timm model loads the file (strict) and its
                                            fp32 logits on the images shardvit dumped (train
                                            --dump-logits) equal shardvit's within 1e-5 relative
Exit 0: pass, 1: mismatch, 77: timm not importable."""
import sys

try:
    import safetensors.torch
    import timm
    import torch
except ImportError as e:
    print("SKIP: %s cannot import timm + safetensors + torch (%s)" % (sys.executable, e))
    sys.exit(77)

KW = dict(pretrained=False, img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=10,
          in_chans=3, init_values=1e-5)
ARCH = "vit_base_patch16_reg4_gap_256"


def main():
    torch.manual_seed(0)
    model = timm.create_model(ARCH, **KW)
    if not (model.no_embed_class and model.num_prefix_tokens == 4 and model.cls_token is None):
        print("FAIL: %s is not the layout this test expects (no class token, 4 registers, no_embed_class)" % ARCH)
        return 1
    if sys.argv[1] == "make":
        sd = {}
        for k, v in model.state_dict().items():
            v = v.detach().clone()
            if k.endswith("gamma"):
                v = 1.0 + 0.2 * torch.randn_like(v)  # LayerScale 1e-5 would hide the blocks
            else:
                v = v + 0.3 * torch.randn_like(v) * (1.0 if v.dim() < 2 else v.shape[-1] ** -0.5)
            sd[k] = v.contiguous()
        safetensors.torch.save_file(sd, sys.argv[2])
        print("made %s: %d tensors, reg_token %s, pos_embed %s" % (sys.argv[2], len(sd), tuple(sd["reg_token"].shape),
                                                                  tuple(sd["pos_embed"].shape)))
        return 0
    sd = safetensors.torch.load_file(sys.argv[2])
    print("load_state_dict(strict=True): %s" % (model.load_state_dict(sd, strict=True),))
    model.eval()
    dump = safetensors.torch.load_file(sys.argv[3])
    with torch.no_grad():
        got = model(dump["images"].float())
    want = dump["logits"].float()
    diff = (got - want).abs().max().item()
    scale = max(want.abs().max().item(), 1e-30)
    same = bool((got.argmax(1) == want.argmax(1)).all())
    print("logits: %d images, max |timm - shardvit| %.3e, relative %.3e (tol 1e-5), top-1 %s"
          % (want.shape[0], diff, diff / scale, "identical" if same else "DIFFERS"))
    # the registers matter: the same model with zeroed registers gives other logits
    sd["reg_token"] = torch.zeros_like(sd["reg_token"])
    model.load_state_dict(sd, strict=True)
    with torch.no_grad():
        moved = (model(dump["images"].float()) - got).abs().max().item()
    print("zeroing the registers moves timm's logits by %.3e" % moved)
    return 0 if diff <= 1e-5 * scale and same and moved > 100 * diff + 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
