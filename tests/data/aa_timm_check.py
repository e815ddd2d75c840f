"""--aa against timm itself: the strings timm's rand_augment_transform accepts parse to the same
(m, n, mstd, mmax, inc, p) here, the strings timm rejects are rejected here, and the
level -> argument table (every op of both op sets, several magnitudes, both signs) equals
timm's LEVEL_TO_ARG. Usage: aa_timm_check.py AA_DUMP. Exit 77 when timm is missing."""
import math
import subprocess
import sys

try:
    import timm.data.auto_augment as aa
except Exception as e:  # noqa: BLE001
    print(f"SKIP: timm not importable ({e})")
    sys.exit(77)

good = ["rand-m9-mstd0.5-inc1", "rand-m9-mstd0.5", "rand-m7-n3", "rand-n1-m15-mmax20", "rand",
        "rand-m10-n2-p1.0", "rand-mstd101-m8", "rand-inc0-m5-p0.3", "rand-m6-n4-mstd1-inc1"]
timm_bad = ["augmix-m5", "rand-x3", "rand-m9.5", "rand-n2.5", "rand-mmax7.5"]
ours_stricter = ["rand-m9-foo", "rand-incx", "rand-", "rand-m9-", "rand-tweights"]  # timm ignores or looks up a table

for s in timm_bad:
    try:
        aa.rand_augment_transform(s, {})
        print(f"note: timm accepts {s!r}")
    except Exception:  # noqa: BLE001
        pass

out = subprocess.run([sys.argv[1]] + good + timm_bad + ours_stricter, check=True, capture_output=True,
                     text=True).stdout.splitlines()
fail = 0
for s, line in zip(good, out):
    ra = aa.rand_augment_transform(s, {})
    op = ra.ops[0]
    mstd = op.magnitude_std if op.magnitude_std != float("inf") else 1e9
    inc = int(any("Increasing" in o.name for o in ra.ops))
    want = [float(op.magnitude), ra.num_layers, float(mstd), float(op.magnitude_max or 0), inc, float(op.prob)]
    got = line.split()
    if got[0] != "ok" or [float(got[1]), int(got[2]), float(got[3]), float(got[4]), int(got[5]),
                          float(got[6])] != want:
        print(f"FAIL parse {s!r}: ours {line!r}, timm {want}")
        fail = 1
for s, line in zip(timm_bad + ours_stricter, out[len(good):]):
    if line != "error":
        print(f"FAIL: {s!r} accepted ({line})")
        fail = 1

hp = dict(aa._HPARAMS_DEFAULT)
names = {0: aa._RAND_TRANSFORMS, 1: aa._RAND_INCREASING_TRANSFORMS}
orig_random = aa.random.random
checked = 0
for line in out:
    if not line.startswith("arg "):
        continue
    _, inc, i, mag, neg, val = line.split()
    name = names[int(inc)][int(i)]
    fn = aa.LEVEL_TO_ARG[name]
    if fn is None:
        want = 0.0
    else:
        aa.random.random = (lambda: 1.0) if neg == "1" else (lambda: 0.0)  # _randomly_negate: > 0.5 negates
        want = float(fn(float(mag), hp)[0])
        aa.random.random = orig_random
        if name.startswith("Translate"):  # timm returns the fraction; the op multiplies by the width
            want *= 100
    if not math.isclose(float(val), want, rel_tol=1e-12, abs_tol=1e-12):
        print(f"FAIL {name} m={mag} neg={neg}: ours {val}, timm {want}")
        fail = 1
    checked += 1
print(f"{'ok' if not fail else 'FAIL'}: {len(good)} strings parse as timm, {len(timm_bad + ours_stricter)} rejected, "
      f"{checked} level->arg values equal timm's")
sys.exit(fail)
