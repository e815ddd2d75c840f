"""torchvision + PIL reference for bench_data, one core, the same pipelines on the same files:
decode + RandomResizedCrop(224) + flip + ToTensor + Normalize (bilinear, bicubic, + RandAugment
(2, 9)), and Resize(256) + CenterCrop(224) (eval). Best of REPS passes over N images, process CPU
time. Usage: /usr/bin/python3 bench_torchvision.py DIR [N [REPS]]"""
import glob, io, os, sys, time
import torch
from PIL import Image
from torchvision import transforms as T

torch.set_num_threads(1)
d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/shardvit_bench_jpeg"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 400
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
files = sorted(glob.glob(os.path.join(d, "train", "*", "*.jpg")))[:n]
data = [open(f, "rb").read() for f in files]
norm = [T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]
bl, bc = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC
pipes = [
    ("RRC224 + flip + normalize (bilinear)", T.Compose([T.RandomResizedCrop(224, interpolation=bl), T.RandomHorizontalFlip()] + norm)),
    ("RRC224 + flip + normalize (bicubic)", T.Compose([T.RandomResizedCrop(224, interpolation=bc), T.RandomHorizontalFlip()] + norm)),
    # torchvision's magnitude 9 of 31 bins is weaker than timm's 9 of 10; the cost is what matters here
    ("RRC224 + flip + RandAugment(2, 9) + normalize", T.Compose([T.RandomResizedCrop(224, interpolation=bl), T.RandomHorizontalFlip(),
                                                                 T.RandAugment(2, 9)] + norm)),
    ("resize 256 + center crop 224 + normalize (eval)", T.Compose([T.Resize(256, interpolation=bl), T.CenterCrop(224)] + norm)),
]
best = [0.0] * len(pipes)
for rep in range(reps):
    for k, (_, tf) in enumerate(pipes):
        t0 = time.process_time()
        for b in data:
            tf(Image.open(io.BytesIO(b)).convert("RGB"))
        best[k] = max(best[k], len(data) / (time.process_time() - t0))
print(f"torchvision+PIL, {len(data)} images, best of {reps} (process CPU time)")
for (name, _), r in zip(pipes, best):
    print(f"decode + {name:48s}: {r:8.1f} img/s/core")
