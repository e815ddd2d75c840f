"""--aa-interp against Pillow and timm itself (docs/data.md "RandAugment").

Usage: ra_interp_check.py RA_INTERP_DUMP. Exit 77 when timm / Pillow are missing.

1. Geometry: every geometric op (Rotate, ShearX/Y, TranslateX/Y) at several arguments of both
   signs, on noise images of 64x64 and 37x37 RGB and 37x37 L, with bilinear, bicubic and nearest,
   gives exactly the bytes of timm's op function (rotate, shear_x/y, translate_x/y_abs: Pillow's
   rotate / transform) called with that resample and the same fill colour.
2. Random interpolation: timm's RandAugment ("rand-m9-mstd0.5-inc1", "rand-n4-m10-p1.0") with
   --aa-interp random over many keys: the layers shardvit applied (op, argument, drawn filter)
   replayed one by one through timm's own op functions give the same bytes; bilinear and bicubic
   are both drawn, each for 35-65% of the geometric layers; non-geometric layers carry no filter;
   with nearest / bicubic the same keys apply the same ops and arguments (the filter draw is a
   stream of its own) and bicubic draws nothing else.
"""
import random
import subprocess
import sys

try:
    import timm.data.auto_augment as aa
    from PIL import Image
except Exception as e:  # noqa: BLE001
    print(f"SKIP: timm / Pillow not importable ({e})")
    sys.exit(77)

TOOL = sys.argv[1]
FILL3, FILL1 = (124, 116, 104), 124
PIL_F = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC, "nearest": Image.NEAREST}
GEOM = {"Rotate": aa.rotate, "ShearX": aa.shear_x, "ShearY": aa.shear_y, "TranslateX": aa.translate_x_abs,
        "TranslateY": aa.translate_y_abs}
OTHER = {"AutoContrast": lambda im, a: aa.auto_contrast(im), "Equalize": lambda im, a: aa.equalize(im),
         "Invert": lambda im, a: aa.invert(im), "Posterize": lambda im, a: aa.posterize(im, int(a)),
         "Solarize": lambda im, a: aa.solarize(im, int(a)), "SolarizeAdd": lambda im, a: aa.solarize_add(im, int(a)),
         "Color": lambda im, a: aa.color(im, a), "Contrast": lambda im, a: aa.contrast(im, a),
         "Brightness": lambda im, a: aa.brightness(im, a), "Sharpness": lambda im, a: aa.sharpness(im, a)}


def ours(args, img):
    p = subprocess.run([TOOL] + [str(a) for a in args], input=img.tobytes(), capture_output=True, check=True)
    return p.stdout, p.stderr.decode()


def timm_geom(img, op, arg, interp):
    fill = FILL3 if img.mode == "RGB" else FILL1
    return GEOM[op](img, arg, resample=PIL_F[interp], fillcolor=fill)


def noise(side, mode, seed):
    r = random.Random(seed)
    c = 3 if mode == "RGB" else 1
    return Image.frombytes(mode, (side, side), bytes(r.randrange(256) for _ in range(side * side * c)))


def first_diff(a, b):
    return next(i for i in range(len(a)) if a[i] != b[i])


def main():
    fail = 0
    images = [noise(64, "RGB", 1), noise(37, "RGB", 2), noise(37, "L", 3)]
    cases = 0
    for img in images:
        side, c = img.size[0], 3 if img.mode == "RGB" else 1
        args = {"Rotate": [3, 13.5, 27, 30], "ShearX": [0.05, 0.15, 0.3], "ShearY": [0.05, 0.15, 0.3],
                "TranslateX": [1, 3.7, 0.45 * side], "TranslateY": [1, 3.7, 0.45 * side]}
        for op, vals in args.items():
            for v in vals:
                for arg in (v, -v):
                    for interp in ("bilinear", "bicubic", "nearest"):
                        got, _ = ours(["geom", side, c, op, repr(float(arg)), interp], img)
                        want = timm_geom(img, op, float(arg), interp).tobytes()
                        cases += 1
                        if got != want:
                            k = first_diff(got, want)
                            nd = sum(x != y for x, y in zip(got, want))
                            print(f"FAIL {op}({arg}) {interp} {img.mode} {side}: {nd} bytes differ, first at {k}: "
                                  f"ours {got[k]}, Pillow {want[k]}")
                            fail = 1
    print(f"geometry: {cases} op/argument/filter/image cases against timm's op functions")

    counts = {"bilinear": 0, "bicubic": 0}
    replayed = 0
    for spec in ("rand-m9-mstd0.5-inc1", "rand-n4-m10-p1.0"):
        for key in range(60):
            img = noise(37 if key % 2 else 48, "RGB" if key % 3 else "L", 100 + key)
            side, c = img.size[0], 3 if img.mode == "RGB" else 1
            got, log = ours(["run", side, c, key * 7919 + 11, spec, "random"], img)
            layers = [ln.split() for ln in log.splitlines()]
            cur = img
            for op, arg, interp in layers:
                if op in GEOM:
                    if interp not in counts:
                        print(f"FAIL key {key}: geometric {op} with filter {interp}")
                        fail = 1
                        continue
                    counts[interp] += 1
                    cur = timm_geom(cur, op, float(arg), interp)
                else:
                    if interp != "nearest":
                        print(f"FAIL key {key}: {op} carries filter {interp}")
                        fail = 1
                    cur = OTHER[op](cur, float(arg))
            replayed += len(layers)
            if got != cur.tobytes():
                print(f"FAIL {spec} key {key} ({img.mode} {side}): layers {layers} replayed through timm differ")
                fail = 1
            for other in ("nearest", "bicubic"):
                _, log2 = ours(["run", side, c, key * 7919 + 11, spec, other], img)
                l2 = [ln.split() for ln in log2.splitlines()]
                same = [x[:2] for x in l2] == [x[:2] for x in layers]
                want_f = ["bicubic" if x[0] in GEOM else "nearest" for x in l2] if other == "bicubic" else \
                    ["nearest"] * len(l2)
                if not same or [x[2] for x in l2] != want_f:
                    print(f"FAIL {spec} key {key}: --aa-interp {other} changed the layers: {l2} vs {layers}")
                    fail = 1
    geo = counts["bilinear"] + counts["bicubic"]
    frac = counts["bicubic"] / geo if geo else 0
    if geo < 100 or not 0.35 <= frac <= 0.65:
        print(f"FAIL: random interpolation drew {counts} over {geo} geometric layers")
        fail = 1
    print(f"random: {replayed} layers replayed through timm's op functions; filters drawn {counts}")
    print("ok" if not fail else "FAIL")
    return fail


if __name__ == "__main__":
    sys.exit(main())
