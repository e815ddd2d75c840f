#!/usr/bin/env bash
# The evaluation transform travels with the model: a short run (2 ranks) trained with
# --crop-pct 1.0 --interp bilinear --mean half --std half records it (and its class names) in
# the checkpoint index; export writes it into config.json's pretrained_cfg (timm's keys) with
# label_names; eval --weights / --ckpt with no transform flags reproduces the run's own final
# evaluation exactly (top-1 count and loss) and says the values came from the model; an explicit
# --crop-pct 0.875 is used and named as a flag (and changes the loss); predict prints the
# recorded class names, and a class list (beside the weights, in the run directory, --classes of
# predict and eval) that contradicts them, is short or holds a NUL byte is an error naming the
# files; a recorded crop_pct below the --crop-pct range (1e-30 in index.json, 1e-5 in
# config.json) is refused naming the file; an index without the new keys still loads, with the
# defaults and a line saying so. When a Python with timm is found ($SHARDVIT_TEST_PYTHON, else <repo>/.venv-test),
# timm's resolve_data_config on the exported pretrained_cfg gives the same values.
SV=$1
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
XF="--crop-pct 1.0 --interp bilinear --mean half --std half"
run "$WORK/train.log" "$MPIEXEC" -n 2 "$SV" train $MODEL $COMMON --data "$WORK/data/train" \
    --val-data "$WORK/data/test" --steps 6 --batch-size 8 --warmup 2 --lr 3e-3 $XF --out "$WORK/run" \
    --dump-logits "$WORK/dump.safetensors"
# --dump-logits forwards the run's evaluation transform: at --crop-pct 1.0 a 40x32 image is only
# center-cropped (no resampling), so every dumped image is a training image's decoded pixels (the
# dump used the default 0.875 whatever the flag said). Needs numpy and PIL: the test venv's Python
# (scripts/test_venv.sh; Debian's python3-numpy / python3-pil through its system site packages)
NPY=${SHARDVIT_TEST_PYTHON:-$(dirname "$0")/../../.venv-test/bin/python}
[ -x "$NPY" ] && "$NPY" -c "import numpy, PIL" 2>/dev/null || NPY=/usr/bin/python3
"$NPY" - "$WORK/dump.safetensors" "$WORK/data/train" <<'PYEOF' || fail "--dump-logits did not use --crop-pct"
import json, os, struct, sys
import numpy as np
from PIL import Image
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
e = h["images"]
a, b = e["data_offsets"]
imgs = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(e["shape"])
crops = []
for c in sorted(os.listdir(sys.argv[2])):
    d = os.path.join(sys.argv[2], c)
    for f in sorted(os.listdir(d)):
        px = np.asarray(Image.open(os.path.join(d, f)).convert("RGB"), dtype=np.float64)  # (32, 40, 3)
        crops.append(px[:, 4:36, :].transpose(2, 0, 1))
for k, im in enumerate(imgs):
    v = (im.astype(np.float64) * 0.5 + 0.5) * 255.0
    best = min(float(np.abs(v - c).max()) for c in crops)
    assert best < 1e-3, (k, best)
print(f"ok: {len(imgs)} dumped images are center crops of training images, pixel for pixel")
PYEOF
step=$(cat "$WORK/run/checkpoints/latest")
idx="$WORK/run/checkpoints/$step/index.json"
mkdir -p "$WORK/x"
run "$WORK/export.log" "$SV" export "$WORK/run" "$WORK/x/model.safetensors"
"$PY" - "$idx" "$WORK/x/config.json" "$WORK/data/classes.txt" <<'PYEOF' || fail "recorded transform"
import json, sys
idx, cfg = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
names = open(sys.argv[3]).read().split("\n")[:-1]
t = idx["eval_transform"]
assert (t["img"], t["channels"], t["crop_pct"], t["interpolation"]) == (32, 3, 1.0, "bilinear"), t
assert t["mean"] == [0.5] * 3 and t["std"] == [0.5] * 3, t
assert idx["label_names"] == names, idx["label_names"]
p = cfg["pretrained_cfg"]
assert p["input_size"] == [3, 32, 32] and p["crop_pct"] == 1.0 and p["interpolation"] == "bilinear", p
assert p["crop_mode"] == "center" and p["mean"] == [0.5] * 3 and p["std"] == [0.5] * 3, p
assert p["num_classes"] == 4 and p["label_names"] == names and cfg["label_names"] == names, cfg
for k in ("architecture", "num_classes", "num_features", "global_pool", "img_size", "patch_size", "embed_dim",
          "depth", "num_heads", "mlp_ratio", "in_chans", "model_args"):
    assert k in cfg, k
print("recorded: eval_transform", t, "label_names", names)
PYEOF
same() {  # same EVAL_DIR: top-1 count and loss equal to the run's own final evaluation
    "$PY" - "$WORK/run/eval.json" "$1/eval.json" <<'PYEOF'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("train eval top1 %d/%d loss %.9g | eval top1 %d/%d loss %.9g" % (a["top1_correct"], a["num_samples"],
      a["loss"], b["top1_correct"], b["num_samples"], b["loss"]))
sys.exit(0 if (a["top1_correct"], a["num_samples"], a["loss"]) == (b["top1_correct"], b["num_samples"], b["loss"]) else 1)
PYEOF
}
EV=("$MPIEXEC" -n 2 "$SV" eval --data "$WORK/data/test" --batch-size 8 $COMMON)
run "$WORK/e1.log" "${EV[@]}" --weights "$WORK/x/model.safetensors" --out "$WORK/e1"
grep "eval transform:" "$WORK/e1.log"
grep -q "crop_pct 1 (model), interpolation bilinear (model), mean 0.5,0.5,0.5 (model), std 0.5,0.5,0.5 (model)" \
    "$WORK/e1.log" || fail "eval --weights did not name the model's transform"
same "$WORK/e1" || fail "eval --weights differs from the training run's evaluation"
# --crop-pct -1, which --help names as the unset value, is the model's (it was refused), and a value
# outside [0.05, 1] is a usage error
run "$WORK/e1u.log" "${EV[@]}" --weights "$WORK/x/model.safetensors" --crop-pct -1 --out "$WORK/e1u"
grep -q "crop_pct 1 (model)" "$WORK/e1u.log" || fail "--crop-pct -1 did not leave the model's crop_pct"
same "$WORK/e1u" || fail "eval --crop-pct -1 differs from the training run's evaluation"
rc=0
"$SV" eval --weights "$WORK/x/model.safetensors" --data "$WORK/data/test" --crop-pct -0.5 >"$WORK/cpbad.log" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "crop-pct: invalid value '-0.5' (expected a number in \[0.05, 1\], or -1: unset)" \
    "$WORK/cpbad.log" || { cat "$WORK/cpbad.log"; fail "--crop-pct -0.5: exit $rc"; }
run "$WORK/e2.log" "${EV[@]}" --ckpt "$WORK/run" --out "$WORK/e2"
grep -q "crop_pct 1 (model)" "$WORK/e2.log" || fail "eval --ckpt did not use the index's transform"
same "$WORK/e2" || fail "eval --ckpt differs from the training run's evaluation"
run "$WORK/e3.log" "${EV[@]}" --weights "$WORK/x/model.safetensors" --crop-pct 0.875 --out "$WORK/e3"
grep "eval transform:" "$WORK/e3.log"
grep -q "crop_pct 0.875 (flag), interpolation bilinear (model)" "$WORK/e3.log" || fail "--crop-pct not named a flag"
same "$WORK/e3" >/dev/null && fail "--crop-pct 0.875 gave the same loss: the test does not discriminate"
# --crop-pct 0.8 at img 32: the shorter side (32) goes to floor(32 / 0.8) = 40, as timm's Python
# arithmetic gives; eval and train took crop_pct as a float (0.800000011...), which gave 39 where
# predict (double) gave 40. eval's loss equals the cross-entropy of predict's probabilities on the
# same images (predict is a separate path: one image at a time, its own box).
run "$WORK/e08.log" "${EV[@]}" --weights "$WORK/x/model.safetensors" --crop-pct 0.8 --out "$WORK/e08"
mapfile -t test_imgs < <(find "$WORK/data/test" -name '*.jpg' | sort)
run "$WORK/p08.log" "$SV" predict --weights "$WORK/x/model.safetensors" --crop-pct 0.8 --json --topk 0 --threads 1 \
    "${test_imgs[@]}"
"$PY" - "$WORK/e08/eval.json" "$WORK/p08.log" "$WORK/data/classes.txt" <<'PYEOF' || fail "--crop-pct 0.8: eval and predict disagree"
import json, math, os, sys
ev = json.load(open(sys.argv[1]))
names = open(sys.argv[3]).read().split("\n")[:-1]
nll, n = 0.0, 0
for line in open(sys.argv[2]):
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    label = os.path.basename(os.path.dirname(r["image"]))
    p = {t["class"]: t["prob"] for t in r["top"]}
    nll -= math.log(p[label])
    n += 1
assert n == ev["num_samples"] == 28, (n, ev["num_samples"])
print("crop_pct 0.8: eval loss %.9g, predict cross-entropy %.9g" % (ev["loss"], nll / n))
assert abs(ev["loss"] - nll / n) <= 1e-5 * max(1.0, ev["loss"]), (ev["loss"], nll / n)
PYEOF
# eval.json records the transform each evaluation computed with (training's own and a flag's)
"$PY" - "$WORK/run/eval.json" "$WORK/e3/eval.json" <<'PYEOF' || fail "eval.json eval_transform"
import json, sys
a, b = (json.load(open(p))["eval_transform"] for p in sys.argv[1:])
assert (a["crop_pct"], a["interpolation"], a["mean"], a["img"]) == (1.0, "bilinear", [0.5] * 3, 32), a
assert b["crop_pct"] == 0.875 and b["mean"] == [0.5] * 3, b
print("eval.json eval_transform:", a, "/", b)
PYEOF
# predict: export wrote classes.txt beside the weights (the recorded label names) and predict uses
# it; without it, the label names in config.json
img=$(find "$WORK/data/test" -name '*.jpg' | sort | head -1)
cmp -s "$WORK/x/classes.txt" "$WORK/data/classes.txt" || fail "export's classes.txt differs from the data's class list"
run "$WORK/p0.log" "$SV" predict --weights "$WORK/x/model.safetensors" --topk 1 --threads 1 "$img"
grep -q "class names from $WORK/x/classes.txt" "$WORK/p0.log" || fail "predict did not use classes.txt beside the weights"
rm "$WORK/x/classes.txt"
run "$WORK/p.log" "$SV" predict --weights "$WORK/x/model.safetensors" --topk 1 --threads 1 "$img"
grep -q "label names the model recorded" "$WORK/p.log" || fail "predict did not use the recorded label names"
top=$(grep -E '^ +1\. ' "$WORK/p.log" | sed -E 's/^ +1\. +[0-9.]+% +//; s/ \([0-9]+\)$//')
grep -qxF "$top" "$WORK/data/classes.txt" || fail "predict printed '$top', not a class name"
echo "predict: top-1 '$top'"
# a class list never contradicts the names the model recorded (config.json label_names, the
# checkpoint's index.json): a reversed list beside the weights, in the run directory or given with
# --classes (predict and eval), a short list and a list with a NUL byte are errors naming the files
tac "$WORK/data/classes.txt" >"$WORK/rev.txt"
first=$(head -1 "$WORK/data/classes.txt")
last=$(tail -1 "$WORK/data/classes.txt")
PR=("$SV" predict --topk 1 --threads 1)
contradicts="contradicts the label names the model recorded in"
cp "$WORK/rev.txt" "$WORK/x/classes.txt"
expect_fail pr_near 60 "${PR[@]}" --weights "$WORK/x/model.safetensors" "$img"
error_says pr_near "class list $WORK/x/classes.txt $contradicts $WORK/x/config.json: class 0 is \"$first\" there but \"$last\""
expect_fail pr_flag 60 "${PR[@]}" --weights "$WORK/x/model.safetensors" --classes "$WORK/rev.txt" "$img"
error_says pr_flag "class list $WORK/rev.txt $contradicts $WORK/x/config.json: class 0"
head -3 "$WORK/data/classes.txt" >"$WORK/x/classes.txt"
expect_fail pr_short 60 "${PR[@]}" --weights "$WORK/x/model.safetensors" "$img"
error_says pr_short "class list $WORK/x/classes.txt lists 3 class names but $WORK/x/config.json records 4"
{ printf '%s\0x\n' "$first"; tail -n +2 "$WORK/data/classes.txt"; } >"$WORK/x/classes.txt"
expect_fail pr_nul 60 "${PR[@]}" --weights "$WORK/x/model.safetensors" "$img"
error_says pr_nul "class list $WORK/x/classes.txt: line 1 holds a NUL byte"
rm "$WORK/x/classes.txt"
cp "$WORK/run/classes.txt" "$WORK/run_classes.txt"
cp "$WORK/rev.txt" "$WORK/run/classes.txt"
expect_fail pr_ckpt 60 "${PR[@]}" --ckpt "$WORK/run" "$img"
error_says pr_ckpt "class list $WORK/run/classes.txt $contradicts"
error_says pr_ckpt "/$step/index.json: class 0 is \"$first\""
cp "$WORK/run_classes.txt" "$WORK/run/classes.txt"
run "$WORK/p1.log" "${PR[@]}" --ckpt "$WORK/run" "$img"
grep -q "class names from $WORK/run/classes.txt" "$WORK/p1.log" || fail "predict --ckpt did not use the run's classes.txt"
expect_fail ev_rev 120 "${EV[@]}" --weights "$WORK/x/model.safetensors" --classes "$WORK/rev.txt" --out "$WORK/e5"
error_says ev_rev "class list $WORK/rev.txt $contradicts $WORK/x/config.json: class 0"
[ ! -e "$WORK/e5/eval.json" ] || fail "eval --classes (reversed): eval.json written"
expect_fail ev_rev_ckpt 120 "${EV[@]}" --ckpt "$WORK/run" --classes "$WORK/rev.txt" --out "$WORK/e6"
error_says ev_rev_ckpt "/$step/index.json: class 0"
run "$WORK/e7.log" "${EV[@]}" --weights "$WORK/x/model.safetensors" --classes "$WORK/data/classes.txt" --out "$WORK/e7"
same "$WORK/e7" || fail "eval --classes (the recorded names) differs from the training run's evaluation"
# a model that recorded fewer label names than it has classes (trained with --num-classes above
# its data's classes): eval --classes names every class, the recorded names first
few="$WORK/few/step_few"
mkdir -p "$WORK/few"
cp -r "$WORK/run/checkpoints/$step" "$few"
"$PY" - "$few/index.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["label_names"] = j["label_names"][:3]
json.dump(j, open(sys.argv[1], "w"), indent=1)
PYEOF
run "$WORK/e8.log" "${EV[@]}" --ckpt "$few" --classes "$WORK/data/classes.txt" --out "$WORK/e8"
expect_fail ev_few_rev 120 "${EV[@]}" --ckpt "$few" --classes "$WORK/rev.txt" --out "$WORK/e9"
echo "class lists: contradicting, short and binary lists refused; the recorded names accepted"
# an index written before eval_transform/label_names existed still loads: defaults, and a line
old="$WORK/old/step_old"
mkdir -p "$WORK/old"
cp -r "$WORK/run/checkpoints/$step" "$old"
"$PY" - "$old/index.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
del j["eval_transform"], j["label_names"]
json.dump(j, open(sys.argv[1], "w"), indent=1)
PYEOF
run "$WORK/e4.log" "${EV[@]}" --ckpt "$old" --out "$WORK/e4"
grep "records none" "$WORK/e4.log"
grep -q "crop_pct 0.875 (default), interpolation bilinear (default), mean 0.485,0.456,0.406 (default)" "$WORK/e4.log" ||
    fail "old index: defaults not used/named"
# a recorded crop_pct outside the --crop-pct range [0.05, 1] makes the model file bad: refused
# before any image is read, naming the file and the field (--skip-unreadable or not)
bad="$WORK/badcrop/step_bad"
mkdir -p "$WORK/badcrop" "$WORK/badcfg"
cp -r "$WORK/run/checkpoints/$step" "$bad"
cp "$WORK/x/model.safetensors" "$WORK/x/config.json" "$WORK/badcfg/"
"$PY" - "$bad/index.json" "$WORK/badcfg/config.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["eval_transform"]["crop_pct"] = 1e-30
json.dump(j, open(sys.argv[1], "w"), indent=1)
c = json.load(open(sys.argv[2]))
c["pretrained_cfg"]["crop_pct"] = 1e-5
json.dump(c, open(sys.argv[2], "w"), indent=1)
PYEOF
expect_fail crop_idx 120 "${EV[@]}" --ckpt "$bad" --out "$WORK/e8" --skip-unreadable
error_says crop_idx "$bad/index.json: eval_transform: crop_pct 1e-30 not in [0.05, 1]"
expect_fail crop_cfg 120 "${EV[@]}" --weights "$WORK/badcfg/model.safetensors" --out "$WORK/e9" --skip-unreadable
error_says crop_cfg "$WORK/badcfg/config.json: pretrained_cfg: crop_pct 1e-05 not in [0.05, 1]"
expect_fail crop_pr 60 "${PR[@]}" --weights "$WORK/badcfg/model.safetensors" "$img"
error_says crop_pr "$WORK/badcfg/config.json: pretrained_cfg: crop_pct 1e-05 not in [0.05, 1]"
echo "recorded crop_pct 1e-30 / 1e-5: refused naming the file"
mkdir -p "$WORK/xo"
run "$WORK/export_old.log" "$SV" export "$old" "$WORK/xo/model.safetensors"
grep -q "records no eval transform" "$WORK/export_old.log" || fail "export of an old index did not say so"
# a FIFO named config.json next to the weights: a clear error, no hang
mkdir -p "$WORK/fifo"
cp "$WORK/x/model.safetensors" "$WORK/fifo/model.safetensors"
mkfifo "$WORK/fifo/config.json"
rc=0
timeout 60 "$SV" eval --weights "$WORK/fifo/model.safetensors" --data "$WORK/data/test" --out "$WORK/fifo_out" \
    >"$WORK/fifo.log" 2>&1 || rc=$?
{ [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && grep -q "config.json is not a regular file" "$WORK/fifo.log" ||
    { cat "$WORK/fifo.log"; fail "config.json FIFO: exit $rc, expected a clear error (124 = hang)"; }
echo "config.json FIFO: refused without blocking"
# timm reads the exported pretrained_cfg as written
TPY=${SHARDVIT_TEST_PYTHON:-$HERE/../../.venv-test/bin/python}
if [ -x "$TPY" ] && "$TPY" -c "import timm, torch" 2>/dev/null; then
    "$TPY" - "$WORK/x/config.json" <<'PYEOF' || fail "timm resolve_data_config"
import json, sys
import timm
from timm.data import resolve_data_config, create_transform
cfg = json.load(open(sys.argv[1]))
ma = dict(cfg["model_args"])
m = timm.create_model(cfg["architecture"], pretrained=False, pretrained_cfg_overlay=cfg["pretrained_cfg"], **ma)
d = resolve_data_config({}, model=m)
print("timm resolve_data_config:", d)
p = cfg["pretrained_cfg"]
assert tuple(d["input_size"]) == tuple(p["input_size"]) and d["crop_pct"] == p["crop_pct"], d
assert d["interpolation"] == p["interpolation"] and d["crop_mode"] == "center", d
assert tuple(d["mean"]) == tuple(p["mean"]) and tuple(d["std"]) == tuple(p["std"]), d
assert list(m.pretrained_cfg.get("label_names") or []) == cfg["label_names"], m.pretrained_cfg
print("timm create_transform:", create_transform(**d))
PYEOF
else
    echo "timm cross-check skipped: no Python with timm at $TPY"
fi
# --init-from a file whose config.json records a normalisation (0.5 here, where the default for 3
# channels is ImageNet's) trains and records with it; a flag still wins, field by field
init_norm() { # init_norm NAME [flags]: the recorded mean and std of a 1-step run from the export
    local name=$1
    shift
    run "$WORK/$name.log" "$MPIEXEC" -n 2 "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 1 \
        --batch-size 8 --init-from "$WORK/x/model.safetensors" --out "$WORK/$name" "$@"
    "$PY" -c "import json,sys; t=json.load(open(sys.argv[1]))['eval_transform']; print(t['mean'][0], t['std'][0])" \
        "$WORK/$name/checkpoints/step_00000001/index.json"
}
got=$(init_norm init0)
test "$got" = "0.5 0.5" || fail "--init-from: recorded mean/std $got, expected the file's 0.5 0.5"
grep -q "normalisation: mean 0.5,0.5,0.5 (--init-from .*config.json), std 0.5,0.5,0.5 (--init-from" "$WORK/init0.log" ||
    fail "--init-from: no line naming the normalisation's source"
got=$(init_norm init1 --mean imagenet)
test "$got" = "0.485 0.5" || fail "--init-from with --mean imagenet: recorded $got"
echo "--init-from: normalisation taken from the file's pretrained_cfg (flags override)"
echo "eval_transform: all passed"
