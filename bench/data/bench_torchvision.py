"""torchvision + PIL reference for bench_data: decode + RandomResizedCrop(224) + flip +
ToTensor + Normalize on one core. Usage: /usr/bin/python3 bench_torchvision.py DIR [N]"""
import glob, io, os, sys, time
import torch
from PIL import Image
from torchvision import transforms as T

torch.set_num_threads(1)
d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/shardvit_bench_jpeg"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 400
files = sorted(glob.glob(os.path.join(d, "train", "*", "*.jpg")))[:n]
data = [open(f, "rb").read() for f in files]
tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
best = 0
for rep in range(3):
    t0 = time.perf_counter()
    for b in data:
        tf(Image.open(io.BytesIO(b)).convert("RGB"))
    best = max(best, len(data) / (time.perf_counter() - t0))
print(f"torchvision+PIL decode+RRC224+flip+normalize: {best:8.1f} img/s/core ({len(data)} images)")
