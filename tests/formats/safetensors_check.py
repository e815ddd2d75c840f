#!/usr/bin/python3
"""Independent cross-check of shardvit's safetensors files, using only the standard library and
numpy (no safetensors package).

  safetensors_check.py check FILE   parse a file written by the C writer, validate its layout
                                    and compare every value with the formulas below
  safetensors_check.py write FILE   write a file the C reader must accept (tensors listed in a
                                    different order from their data, Rust-style space padding)

Exit 77 when numpy is missing (the test is skipped)."""
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    print("numpy not available", file=sys.stderr)
    sys.exit(77)


def values(n, mul, mod, shift):
    # Multiples of 1/8 in a small range: exact in F32, BF16 and F16.
    i = np.arange(n, dtype=np.int64)
    return ((i * mul) % mod).astype(np.float64) / 8.0 - shift


# name -> (dtype, shape, formula args); shared with test_safetensors_numpy.c
C_TENSORS = [
    ("patch_embed.proj.weight", "F32", (4, 3, 2, 2), (37, 101, 3.0)),
    ("blocks.0.norm1.weight", "BF16", (5,), (11, 29, 1.0)),
    ("head.weight", "F16", (3, 7), (13, 61, 2.0)),
    ("pos_embed", "F32", (1, 0, 8), (1, 1, 0.0)),
]
PY_TENSORS = [
    ("z.bf16", "BF16", (2, 5), (7, 41, 2.5)),
    ("a.f32", "F32", (3, 4), (5, 23, 1.0)),
    ("m.f16", "F16", (6,), (3, 17, 0.5)),
    ("steps", "I64", (3,), None),
]
NP = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "U8": np.uint8}
SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "U8": 1}


def decode(dtype, raw):
    if dtype == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64)
    return np.frombuffer(raw, dtype=np.dtype(NP[dtype]).newbyteorder("<")).astype(np.float64)


def fail(msg):
    print("safetensors_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    if n % 8 != 0:
        fail("header length %d is not a multiple of 8" % n)
    hdr_text = blob[8:8 + n].decode("utf-8")
    if not hdr_text.rstrip(" ").endswith("}") or len(hdr_text) - len(hdr_text.rstrip(" ")) > 7:
        fail("header is not JSON followed by at most 7 padding spaces")
    hdr = json.loads(hdr_text)
    data = blob[8 + n:]
    if hdr.get("__metadata__") != {"format": "pt", "producer": "shardvit"}:
        fail("metadata %r" % hdr.get("__metadata__"))
    names = [k for k in hdr if k != "__metadata__"]
    if names != [t[0] for t in C_TENSORS]:
        fail("tensor order %r" % names)
    pos = 0
    for name, dtype, shape, f in C_TENSORS:
        info = hdr[name]
        if info["dtype"] != dtype or tuple(info["shape"]) != shape:
            fail("%s: dtype/shape %r" % (name, info))
        b, e = info["data_offsets"]
        numel = int(np.prod(shape))
        if b != pos or e - b != numel * SIZE[dtype]:
            fail("%s: offsets %r (expected begin %d, %d bytes)" % (name, info, pos, numel * SIZE[dtype]))
        pos = e
        got = decode(dtype, data[b:e])
        want = values(numel, *f)
        if not np.array_equal(got, want):
            fail("%s: values differ: %r vs %r" % (name, got[:8], want[:8]))
    if pos != len(data):
        fail("data section has %d bytes, tensors cover %d" % (len(data), pos))
    print("safetensors_check: C-written file ok (%d tensors)" % len(names))


def write(path):
    chunks, header, pos = [], {"__metadata__": {"source": "numpy", "format": "pt"}}, 0
    # Data laid out in reverse of the header order, to exercise the reader's offset sort.
    for name, dtype, shape, f in reversed(PY_TENSORS):
        numel = int(np.prod(shape))
        if f is None:
            raw = np.array([-1, 0, 1 << 40], dtype="<i8").tobytes()
        elif dtype == "BF16":
            v = values(numel, *f).astype(np.float32)
            raw = (v.view(np.uint32) >> 16).astype("<u2").tobytes()
        else:
            raw = values(numel, *f).astype(np.dtype(NP[dtype]).newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + len(raw)]}
        chunks.append(raw)
        pos += len(raw)
    ordered = {"__metadata__": header["__metadata__"]}
    for name, _, _, _ in PY_TENSORS:
        ordered[name] = header[name]
    text = json.dumps(ordered, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    print("safetensors_check: wrote %s" % path)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "write"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    (check if sys.argv[1] == "check" else write)(sys.argv[2])
