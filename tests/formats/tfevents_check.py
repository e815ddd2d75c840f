#!/usr/bin/python3
"""Independent readers for an event file written by test_tfevents_python.

  tfevents_check.py stdlib FILE       own TFRecord + CRC32C + protobuf decoding (standard
                                      library only), compared with the expected scalars
  tfevents_check.py tensorboard FILE  TensorBoard's own EventAccumulator (PyPI's tensorboard,
                                      installed in the test venv by scripts/test_venv.sh); exit
                                      77 when the `tensorboard` package is not importable

Expected content (kept in step with test_tfevents_python.c): for step s in 0..24,
  "train/loss" = 1/(s+1), "train/lr" = s * 1e-4, each at wall time 1700000000 + s,
  written as float32; the first event carries file_version "brain.Event:2"."""
import struct
import sys

STEPS = 25


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


EXPECTED = {
    "train/loss": [(s, f32(1.0 / (s + 1)), 1700000000.0 + s) for s in range(STEPS)],
    "train/lr": [(s, f32(s * 1e-4), 1700000000.0 + s) for s in range(STEPS)],
}


def fail(msg):
    print("tfevents_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def crc32c(data):
    table = crc32c.table
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ table[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def _table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


crc32c.table = _table()


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            fail("unexpected wire type %d" % wt)
        yield num, wt, v


def read_stdlib(path):
    blob = open(path, "rb").read()
    pos, events = 0, []
    while pos < len(blob):
        (n,) = struct.unpack_from("<Q", blob, pos)
        (lcrc,) = struct.unpack_from("<I", blob, pos + 8)
        if masked(crc32c(blob[pos:pos + 8])) != lcrc:
            fail("length crc at %d" % pos)
        data = blob[pos + 12:pos + 12 + n]
        (dcrc,) = struct.unpack_from("<I", blob, pos + 12 + n)
        if masked(crc32c(data)) != dcrc:
            fail("data crc at %d" % pos)
        events.append(data)
        pos += 12 + n + 4
    version, got = None, {}
    for data in events:
        wall, step, values = 0.0, 0, []
        for num, wt, v in fields(data):
            if num == 1 and wt == 1:
                (wall,) = struct.unpack("<d", v)
            elif num == 2 and wt == 0:
                step = v - (1 << 64) if v >> 63 else v
            elif num == 3 and wt == 2:
                version = v.decode()
            elif num == 5 and wt == 2:
                for vn, vwt, val in fields(v):
                    if vn != 1 or vwt != 2:
                        continue
                    tag, simple = None, None
                    for fn, fwt, fv in fields(val):
                        if fn == 1 and fwt == 2:
                            tag = fv.decode()
                        elif fn == 2 and fwt == 5:
                            (simple,) = struct.unpack("<f", fv)
                    values.append((tag, simple))
        for tag, simple in values:
            got.setdefault(tag, []).append((step, simple, wall))
    if version != "brain.Event:2":
        fail("file_version %r" % version)
    return got


def read_tensorboard(path):
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        print("tensorboard package not importable by %s (scripts/test_venv.sh installs it)"
              % sys.executable, file=sys.stderr)
        sys.exit(77)
    acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got = {}
    for tag in acc.Tags()["scalars"]:
        got[tag] = [(e.step, f32(e.value), e.wall_time) for e in acc.Scalars(tag)]
    return got


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("stdlib", "tensorboard"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    got = (read_stdlib if sys.argv[1] == "stdlib" else read_tensorboard)(sys.argv[2])
    if got != EXPECTED:
        fail("scalars differ:\n got %r\nwant %r" % (got, EXPECTED))
    extra = ""
    if sys.argv[1] == "tensorboard":
        import tensorboard
        extra = " (tensorboard %s)" % tensorboard.__version__
    print("tfevents_check (%s): %d tags ok%s" % (sys.argv[1], len(got), extra))
