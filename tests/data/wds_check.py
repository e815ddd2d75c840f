#!/usr/bin/python3
"""WebDataset tar shards of `shardvit prep --format tar` read by the real `webdataset` package
(PyPI, in the test venv: scripts/test_venv.sh), compared with the ImageFolder tree `shardvit prep`
writes from the same source (tests/data/wds.sh).

  wds_check.py TAR_DIR FOLDER_DIR SHARD_SIZE

For each split (train, test): the shards TAR_DIR/SPLIT-000000.tar ... are opened through one
brace spec (`SPLIT-{000000..00000N}.tar`, expanded by webdataset as shardvit expands it), shard
sizes are SHARD_SIZE except the last; every sample has exactly the members `jpg` and `cls`;
its key is the source index; `cls` is a decimal label naming TAR_DIR/classes.txt's class; the
JPEG bytes equal FOLDER_DIR/SPLIT/<class name>/<key>.jpg byte for byte; every folder image
appears once; keys come in source order; webdataset's own decoder ("pil") yields a decodable
image of the same pixels and the same integer label. Exit 0: pass, 1: mismatch, 77: webdataset
not importable."""
import glob
import io
import os
import sys

try:
    import webdataset as wds
except ImportError as e:
    print("SKIP: webdataset not importable by %s (%s; scripts/test_venv.sh installs it)" % (sys.executable, e))
    sys.exit(77)
import numpy as np
from PIL import Image

bad = 0


def fail(msg):
    global bad
    bad += 1
    print("FAIL: " + msg)


def check_split(tar_dir, folder_dir, split, shard_size, classes):
    shards = sorted(glob.glob(os.path.join(tar_dir, split + "-*.tar")))
    if not shards:
        fail("%s: no %s-*.tar shards" % (tar_dir, split))
        return
    spec = os.path.join(tar_dir, "%s-{000000..%06d}.tar" % (split, len(shards) - 1))
    want = {}  # key -> (class name, bytes)
    for name in os.listdir(os.path.join(folder_dir, split)):
        for f in os.listdir(os.path.join(folder_dir, split, name)):
            key = f.rsplit(".", 1)[0]
            if key in want:
                fail("%s: key %s twice in the folder tree" % (split, key))
            want[key] = (name, open(os.path.join(folder_dir, split, name, f), "rb").read())
    seen, per_url, counts, labels = [], {}, {}, {}
    for s in wds.WebDataset(spec, shardshuffle=False):
        key = s["__key__"]
        per_url[s["__url__"]] = per_url.get(s["__url__"], 0) + 1
        members = sorted(k for k in s if not k.startswith("__"))
        if members != ["cls", "jpg"]:
            fail("%s: sample %s has members %s" % (split, key, members))
            continue
        label = int(s["cls"].decode())
        if s["cls"].decode() != str(label) or not 0 <= label < len(classes):
            fail("%s: sample %s: cls %r" % (split, key, s["cls"]))
            continue
        name = classes[label]
        seen.append(key)
        labels[key] = label
        counts[name] = counts.get(name, 0) + 1
        if key not in want:
            fail("%s: sample %s not in the folder tree" % (split, key))
            continue
        if want[key][0] != name:
            fail("%s: sample %s is class %s in the tar, %s in the folder tree" % (split, key, name, want[key][0]))
        if s["jpg"] != want[key][1]:
            fail("%s: sample %s: JPEG bytes differ from the folder tree's" % (split, key))
        im = Image.open(io.BytesIO(s["jpg"]))
        if im.format != "JPEG":
            fail("%s: sample %s is %s, not JPEG" % (split, key, im.format))
        im.load()
    if sorted(seen) != sorted(want):
        fail("%s: keys differ: tar-only %s, folder-only %s"
             % (split, sorted(set(seen) - set(want))[:5], sorted(set(want) - set(seen))[:5]))
    if seen != sorted(seen, key=int):
        fail("%s: keys not in source order" % split)
    sizes = [per_url.get(u, 0) for u in shards]
    if sizes[:-1] != [shard_size] * (len(shards) - 1) or not 0 < sizes[-1] <= shard_size:
        fail("%s: samples per shard %s (shard size %d)" % (split, sizes, shard_size))
    # webdataset's own decoders: the image and the label as a training pipeline would see them
    n, mode, size = 0, None, None
    for key, img, cls in wds.WebDataset(spec, shardshuffle=False).decode("pil").to_tuple("__key__", "jpg", "cls"):
        ref = Image.open(io.BytesIO(want[key][1]))
        if cls != labels[key]:
            fail("%s: sample %s: decoded cls %r, raw %d" % (split, key, cls, labels[key]))
        if not np.array_equal(np.asarray(img.convert(ref.mode)), np.asarray(ref)):
            fail("%s: sample %s: decoded pixels differ" % (split, key))
        n, mode, size = n + 1, ref.mode, ref.size
    if n != len(want):
        fail("%s: decoded pipeline yielded %d samples, want %d" % (split, n, len(want)))
    print("%s: %d samples in %d shards %s via %s, JPEG %s %dx%d; per class %s"
          % (split, len(seen), len(shards), sizes, os.path.basename(spec), mode, size[0], size[1],
             ", ".join("%s=%d" % (c, counts.get(c, 0)) for c in classes)))


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    tar_dir, folder_dir, shard_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    classes = open(os.path.join(tar_dir, "classes.txt")).read().split("\n")
    classes = [c for c in classes if c]
    for split in ("train", "test"):
        check_split(tar_dir, folder_dir, split, shard_size, classes)
    print("webdataset %s: %s" % (getattr(wds, "__version__", "?"), "FAILED" if bad else "all samples match"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
