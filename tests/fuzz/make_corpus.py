#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Seeds are small valid inputs (so the fuzzer starts deep inside each format) plus hand-made
hostile ones (path traversal, absurd sizes, giant image dimensions). Inputs that once crashed a
parser are added by hand as crash-<what> files and are never regenerated here; so are the
jpeg/restart-* seeds (JPEGs with restart markers, which Debian's Pillow cannot write: written by
`shardvit prep synthetic|fashion-mnist --restart-mcus N`, plus the transform byte). Needs Pillow
(Debian's python3-pil) for the JPEG seeds. Usage: /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import gzip
import io
import json
import os
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def jpeg(w, h, mode="RGB", progressive=False, quality=75):
    from PIL import Image
    img = Image.new(mode, (w, h))
    px = img.load()
    for y in range(h):
        for x in range(w):
            v = (x * 37 + y * 11) & 255
            px[x, y] = v if mode == "L" else (v, (v * 3) & 255, 255 - v)
    b = io.BytesIO()
    img.save(b, "JPEG", quality=quality, progressive=progressive)
    return b.getvalue()


def giant_jpeg_header(src, w, h):
    """A real JPEG whose SOF0 frame header claims w x h (the data stays small)."""
    b = bytearray(src)
    i = 2
    while i < len(b):
        marker = b[i + 1]
        seglen = struct.unpack(">H", b[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC2):
            struct.pack_into(">HH", b, i + 5, h, w)
            return bytes(b)
        i += 2 + seglen
    raise ValueError("no SOF")


# ---- crc32c (Castagnoli) for TFRecords -----------------------------------------------------
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(c):
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(crc32c(n))) + data + struct.pack("<I", masked(crc32c(data)))


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    return varint(num << 3 | wt) + payload


def ld(num, payload):
    return field(num, 2, varint(len(payload)) + payload)


def tb_events():
    recs = [field(1, 1, struct.pack("<d", 1.7e9)) + ld(3, b"brain.Event:2")]
    for step in range(3):
        val = ld(1, b"loss") + field(2, 5, struct.pack("<f", 2.5 - step * 0.1))
        ev = field(1, 1, struct.pack("<d", 1.7e9 + step)) + field(2, 0, varint(step)) + ld(5, ld(1, val))
        recs.append(ev)
    return b"".join(tfrecord(r) for r in recs)


# ---- safetensors ---------------------------------------------------------------------------
def safetensors(tensors, meta=None, pad=True):
    header = {}
    if meta is not None:
        header["__metadata__"] = meta
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


# ---- tar -----------------------------------------------------------------------------------
def tar(members, fmt=tarfile.USTAR_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 0
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()


def tar_header(name, size_field, typeflag=b"0"):
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = size_field
    h[136:148] = b"00000000000\0"
    h[156:157] = typeflag
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[148:156] = b" " * 8
    s = sum(h)
    h[148:156] = b"%06o\0 " % s
    return bytes(h)


def main():
    small = jpeg(8, 6)
    gray = jpeg(5, 7, "L")
    prog = jpeg(40, 30, progressive=True)

    # safetensors
    f32 = struct.pack("<4f", 1, -2, 3.5, 0)
    put("safetensors", "valid-f32", safetensors([("w", "F32", [2, 2], f32)], {"format": "pt"}))
    put("safetensors", "valid-mixed", safetensors([
        ("a.bias", "BF16", [3], struct.pack("<3H", 0x3F80, 0xC000, 0x7FC0)),
        ("b.weight", "F16", [2, 1], struct.pack("<2H", 0x3C00, 0x7C00)),
        ("c", "I64", [1], struct.pack("<q", -5)),
        ("empty", "F32", [0, 3], b"")]))
    put("safetensors", "empty-header", safetensors([]))
    put("safetensors", "overlap", struct.pack("<Q", 96) + json.dumps(
        {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
         "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode().ljust(96) + b"\0" * 4)
    put("safetensors", "huge-length", struct.pack("<Q", 2 ** 63) + b"{}")
    put("safetensors", "shape-overflow", safetensors(
        [("x", "F32", [2 ** 62, 2 ** 62, 16], b"")]))

    # json
    put("json", "object", '{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\\u00e9\\n"}}')
    put("json", "index", json.dumps({"format_version": 1, "world_size": 2, "step": 10,
                                     "units": [{"name": "blocks.0", "tensors": [
                                         {"name": "blocks.0.attn.qkv.weight", "shape": [192, 64],
                                          "offset": 0, "numel": 12288}]}],
                                     "files": [{"name": "shard_00000-of-00002.bin", "bytes": 1024,
                                                "crc32c": "0x1234abcd"}]}, indent=1))
    put("json", "big-int", "[9223372036854775807, -9223372036854775808, 9007199254740993, 1e308]")
    put("json", "surrogates", '"\\ud83d\\ude00 \\u0000 \xc3\xa9"')
    put("json", "deep", "[" * 130 + "]" * 130)
    put("json", "limits", "L" + "[" * 9 + "]" * 9)
    put("json", "dup-key", '{"a":1,"a":2}')

    # tensorboard
    ev = tb_events()
    put("tensorboard", "events", ev)
    put("tensorboard", "truncated", ev[:-7])
    put("tensorboard", "bad-crc", ev[:20] + bytes([ev[20] ^ 1]) + ev[21:])

    # tar (WebDataset)
    put("tar", "ustar", tar([("000001.jpg", small), ("000001.cls", b"3"), ("000002.jpg", gray),
                             ("000002.cls", b"0\n")]))
    put("tar", "pax-longname", tar([("d/" + "k" * 120 + ".jpg", small), ("d/" + "k" * 120 + ".cls", b"1")],
                                   tarfile.PAX_FORMAT))
    put("tar", "gnu-longname", tar([("e/" + "q" * 150 + ".jpeg", small), ("e/" + "q" * 150 + ".cls", b"2")],
                                   tarfile.GNU_FORMAT))
    put("tar", "traversal", tar([("../../evil.jpg", small), ("../../evil.cls", b"0")]))
    put("tar", "absolute", tar([("/etc/evil.jpg", small), ("/etc/evil.cls", b"0")]))
    put("tar", "absurd-size", tar_header(b"a.jpg", b"77777777777\0") + b"\0" * 1024)
    put("tar", "base256-size", tar_header(b"a.jpg", b"\x80" + b"\xff" * 11) + b"\0" * 1024)
    put("tar", "missing-cls", tar([("x.jpg", small)]))
    put("tar", "bad-cls", tar([("x.jpg", small), ("x.cls", b"-4")]))
    put("tar", "pax-negative-length", tar_header(b"h", b"00000000020\0", b"x") +
        b"-1 path=aaaa\n".ljust(512, b"\0") + b"\0" * 1024)

    # jpeg (last byte = transform mode)
    put("jpeg", "rgb-train", small + b"\x01")
    put("jpeg", "rgb-eval-decode", prog + b"\x04")
    put("jpeg", "gray-1ch", gray + b"\x02")
    put("jpeg", "gray-3ch-scaled", jpeg(200, 100, "L") + b"\x1d")
    put("jpeg", "giant-60000x60000", giant_jpeg_header(small, 60000, 60000) + b"\x05")
    put("jpeg", "truncated", prog[: len(prog) // 2] + b"\x00")
    put("jpeg", "cmyk", b"\xff\xd8\xff\xee" + small[4:] + b"\x00")

    # IDX: flag byte, u16 image-file length, image file, label file
    def idx(n, rows, cols, labels):
        img = struct.pack(">IIII", 0x803, n, rows, cols) + bytes((i * 7) & 255 for i in range(n * rows * cols))
        lab = struct.pack(">II", 0x801, n) + bytes(labels)
        return img, lab
    for fl, name in ((0, "folder-digits"), (1, "tar-digits"), (2, "folder-fashion")):
        img, lab = idx(2, 4, 3, [1, 9])
        put("idx", name, bytes([fl]) + struct.pack("<H", len(img)) + img + lab)
    img, lab = idx(3, 2, 2, [0, 10, 1])
    put("idx", "label-out-of-range", b"\0" + struct.pack("<H", len(img)) + img + lab)
    img, lab = idx(5, 4097, 1, [0] * 5)
    put("idx", "too-tall", b"\0" + struct.pack("<H", len(img)) + img + lab)
    img = struct.pack(">IIII", 0x803, 1000000, 28, 28) + bytes(100)
    lab = struct.pack(">II", 0x801, 1000000) + bytes([1, 2])
    put("idx", "truncated", b"\1" + struct.pack("<H", len(img)) + img + lab)
    # gzip files (recognised by their magic, whatever the name): one member each; the labels as
    # two members; the labels with bytes after the gzip stream
    img, lab = idx(2, 4, 3, [1, 9])
    gimg, glab = gzip.compress(img, mtime=0), gzip.compress(lab, mtime=0)
    put("idx", "gzip-digits", b"\0" + struct.pack("<H", len(gimg)) + gimg + glab)
    two = gzip.compress(lab[:5], mtime=0) + gzip.compress(lab[5:], mtime=0)
    put("idx", "gzip-two-members", b"\1" + struct.pack("<H", len(gimg)) + gimg + two)
    put("idx", "gzip-trailing", b"\0" + struct.pack("<H", len(gimg)) + gimg + glab + b"junk")

    # CIFAR: flag byte (1: cifar100, 2: tar), u16 names length (0xffff: none), names, batch
    rec10 = bytes([3]) + bytes(i & 255 for i in range(3072))
    rec100 = bytes([1, 42]) + bytes((i * 3) & 255 for i in range(3072))
    put("cifar", "cifar10", b"\0" + struct.pack("<H", 0xFFFF) + rec10 * 2)
    put("cifar", "cifar10-tar", b"\2" + struct.pack("<H", 0xFFFF) + rec10)
    put("cifar", "cifar100", b"\1" + struct.pack("<H", 0xFFFF) + rec100 * 2)
    names = "\n".join("c%d" % k for k in range(10)).encode() + b"\n"
    put("cifar", "cifar10-names", b"\0" + struct.pack("<H", len(names)) + names + rec10)
    put("cifar", "cifar10-truncated", b"\0" + struct.pack("<H", 0xFFFF) + rec10[:1000])
    put("cifar", "cifar10-bad-label", b"\0" + struct.pack("<H", 0xFFFF) + bytes([10]) + rec10[1:])
    evil = ("../../evil\n" + "\n".join("c%d" % k for k in range(1, 10)) + "\n").encode()
    put("cifar", "names-traversal", b"\0" + struct.pack("<H", len(evil)) + evil + rec10)
    odd = ("with space\n-leading-dash\nüñí\n.\n..\nc5\nc6\nc7\nc8\nc9\n").encode()
    put("cifar", "names-odd", b"\0" + struct.pack("<H", len(odd)) + odd + rec10)

    # class lists
    put("classes", "plain", "cat\ndog\nbird\n")
    put("classes", "crlf-no-final-newline", "cat\r\ndog\r\nbird")
    put("classes", "empty-line", "a\n\nb\n")
    put("classes", "embedded-nul", b"a\0b\nc\n")
    put("classes", "unicode", "caf\xc3\xa9\n\xe6\x97\xa5\n")
    put("classes", "empty", "")

    # flags: u16 config length, config, NUL-separated argv words
    def flags(cfg, *args):
        c = cfg.encode()
        return struct.pack("<H", len(c)) + c + b"\0".join(a.encode() for a in args)
    put("flags", "config-and-flags", flags('steps = 5\nlr = "0.01"\n# c\n[table]\nmodel = \'vit-s16\'\n',
                                           "--seed", "-3", "--recompute", "pos1"))
    put("flags", "eq-form", flags("", "--lr=0.5", "--recompute=false", "--out=/tmp/x", "--steps=7"))
    put("flags", "bad-value", flags("batch_size = 0\n"))
    put("flags", "unknown-key", flags("nope = 1\n"))
    put("flags", "missing-value", flags("", "--model"))
    put("flags", "help", flags("", "--help"))
    put("flags", "range", flags("", "--steps", "99999999999999999999", "--lr", "nan"))
    put("flags", "long-line", flags("model = " + "x" * 5000 + "\n"))
    put("flags", "nested-config", flags("", "--config", "/nonexistent", "--config=/dev/null"))


if __name__ == "__main__":
    main()
