#!/usr/bin/env bash
# config.json beside safetensors weights must describe the model the tensors hold (timm builds
# its model from config.json): every architecture key that contradicts the weights (width, depth,
# patch, channels, classes, image size, register tokens, class token, fc_norm, pooling, MLP ratio,
# LayerScale, a head count that does not divide the width), at the top level or under
# "model_args", makes predict and eval fail with an error naming the key, before any image is
# read; the unchanged config.json predicts. A key stated at the top level and under model_args
# with two values, or a size given as an empty array, is refused the same way. pretrained_cfg
# without crop_mode (older timm) gives the transform with timm's default crop_mode, except beside
# a shardvit export. Without config.json the head count (in no tensor shape) is not guessed:
# predict asks for --heads, and with it gives the same answer.
SV=$1
source "$(dirname "$0")/lib.sh"
run "$WORK/train.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 --warmup 1 \
    --out "$WORK/run"
mkdir -p "$WORK/w"
run "$WORK/export.log" "$SV" export "$WORK/run" "$WORK/w/model.safetensors"
IMG=$(find "$WORK/data/test" -name '*.jpg' | sort | head -1)
run "$WORK/base.log" "$SV" predict --threads 1 --topk 2 --weights "$WORK/w/model.safetensors" "$IMG"
top2() { grep -A2 "$(basename "$IMG")" "$1" | tail -2 | awk '{print $1, $2}'; } # rank, probability
top2 "$WORK/base.log" >"$WORK/base.top"
[ -s "$WORK/base.top" ] || { echo "FAIL: no prediction in"; cat "$WORK/base.log"; exit 1; }
n=0
# mutate KEY VALUE EXPECTED [MODE]: KEY "a" (top level) or "model_args.a"; VALUE as JSON. MODE once
# (default): the key is removed from the other place, so config.json states VALUE only there;
# keep: the other place keeps its value (config.json contradicting itself); both: VALUE in both.
mutate() {
    local key=$1 value=$2 want=$3 mode=${4:-once} d="$WORK/m$n"
    n=$((n + 1))
    mkdir -p "$d" && cp "$WORK/w/model.safetensors" "$d/"
    "$PY" - "$WORK/w/config.json" "$d/config.json" "$key" "$value" "$mode" <<'P'
import json, sys
src, dst, key, value, mode = sys.argv[1:]
c = json.load(open(src))
name = key.split(".")[-1]
mine, other = (c["model_args"], c) if key.startswith("model_args.") else (c, c["model_args"])
mine[name] = json.loads(value)
if mode == "both":
    other[name] = json.loads(value)
elif mode == "once":
    other.pop(name, None)
json.dump(c, open(dst, "w"), indent=2)
P
    for cmd in predict eval; do
        local rc=0 extra=("$IMG")
        [ $cmd = eval ] && extra=(--data "$WORK/data/test" --out "$d/ev")
        timeout 60 "$SV" $cmd --threads 1 --weights "$d/model.safetensors" "${extra[@]}" >"$d/$cmd.log" 2>&1 || rc=$?
        if [ $rc != 1 ] || ! grep -qF "$want" "$d/$cmd.log" || ! grep -qF "${key##*.} = " "$d/$cmd.log" ||
            ! grep -qF "$d/config.json" "$d/$cmd.log"; then
            echo "FAIL: $cmd with config.json $key = $value ($mode): exit $rc, expected an error naming it ($want)"
            cat "$d/$cmd.log"
            exit 1
        fi
    done
    [ ! -e "$d/ev" ] || { echo "FAIL: eval wrote outputs for contradicting $key"; exit 1; }
}
D="config.json and weights disagree"
mutate model_args.embed_dim 48 "$D"
mutate model_args.depth 3 "$D"
mutate depth 5 "$D"
mutate model_args.patch_size 4 "$D"
mutate model_args.in_chans 1 "$D"
mutate num_classes 10 "$D"
mutate model_args.img_size "[32, 64]" "$D"
mutate model_args.reg_tokens 4 "$D"
mutate model_args.class_token false "$D"
mutate model_args.fc_norm true "$D"
mutate global_pool '"avg"' "$D"
mutate model_args.global_pool '"map"' "$D"
mutate model_args.mlp_ratio 3 "$D"
mutate model_args.init_values 1e-5 "$D"
mutate model_args.num_heads 3 "does not divide"
# model arguments shardvit computes only at timm's default (an activation, a pooling variant, a
# norm or size option that changes no tensor): another value is another model, refused (they
# were ignored before: other probabilities, no warning); an argument it does not know likewise
A="only at timm's default"
mutate model_args.act_layer '"relu"' "$A"
mutate model_args.act_layer '"quick_gelu"' "$A"
mutate model_args.pool_include_prefix true "$A"
mutate model_args.dynamic_img_size true "$A"
mutate model_args.qk_norm true "$A"
mutate model_args.norm_layer '"rmsnorm"' "$A"
mutate model_args.final_norm false "$A"
mutate model_args.a_future_arg 1 "a model argument shardvit does not know"
# ... while timm's defaults stated explicitly and the training-only arguments change nothing
mkdir -p "$WORK/dflt" && cp "$WORK/w/model.safetensors" "$WORK/dflt/"
"$PY" - "$WORK/w/config.json" "$WORK/dflt/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c["model_args"].update(act_layer="gelu", qkv_bias=True, qk_norm=False, pre_norm=False, final_norm=True,
                       dynamic_img_size=False, norm_layer=None, drop_rate=0.1, drop_path_rate=0.2,
                       attn_drop_rate=0.1, weight_init="jax", fix_init=True)
json.dump(c, open(sys.argv[2], "w"))
P
run "$WORK/dflt.log" "$SV" predict --threads 1 --topk 2 --weights "$WORK/dflt/model.safetensors" "$IMG"
top2 "$WORK/dflt.log" | cmp -s - "$WORK/base.top" ||
    { echo "FAIL: timm's defaults / training-only model_args changed the prediction"; cat "$WORK/dflt.log"; exit 1; }
# an empty array for a size (a SIGSEGV before): an error naming config.json and the key
E="is an empty array"
mutate model_args.img_size "[]" "$E"
mutate img_size "[]" "$E"
mutate img_size "[]" "$E" both
mutate model_args.depth "[]" "$E"
mutate model_args.embed_dim "[]" "$E"
mutate num_heads "[]" "$E"
mutate model_args.reg_tokens "[]" "$E"
# the top level and model_args stating different values: refused naming both (the top level's
# silently won before; timm builds from model_args), for every key read from both places
C="config.json contradicts itself"
first=$n
mutate num_heads 4 "$C" keep
mutate model_args.num_heads 4 "$C" keep
mutate img_size "[]" "$C" keep
mutate model_args.mlp_ratio 4.5 "$C" keep
mutate model_args.global_pool '"avg"' "$C" keep
grep -qF "num_heads = 4 but model_args.num_heads = 2" "$WORK/m$first/predict.log" ||
    { echo "FAIL: the contradiction does not name both values"; cat "$WORK/m$first/predict.log"; exit 1; }
# the same value stated both ways (img_size 32 and [32, 32]) is no contradiction: the same answer
mkdir -p "$WORK/same" && cp "$WORK/w/model.safetensors" "$WORK/same/"
"$PY" - "$WORK/w/config.json" "$WORK/same/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c["model_args"]["img_size"] = [c["img_size"], c["img_size"]]
json.dump(c, open(sys.argv[2], "w"))
P
run "$WORK/same.log" "$SV" predict --threads 1 --topk 2 --weights "$WORK/same/model.safetensors" "$IMG"
top2 "$WORK/same.log" | cmp -s - "$WORK/base.top" ||
    { echo "FAIL: img_size N and [N, N] predict differently"; cat "$WORK/same.log"; exit 1; }
# pretrained_cfg without crop_mode, as older timm wrote it: timm's default crop_mode "center" with
# the file's crop_pct, interpolation, mean and std (they were dropped for ImageNet defaults
# before); beside a shardvit export (metadata shardvit_*) such a pretrained_cfg is one of an
# export made before the transform was recorded and is not used; a key it lacks takes timm's
# default (resolve_data_config: bicubic, crop_pct 0.875, ImageNet's mean / std); no input_size
# is refused
mkdir -p "$WORK/timm_old" "$WORK/sv_old" "$WORK/timm_noint"
"$PY" - "$WORK/w" "$WORK" <<'P'
import json, struct, sys
src, work = sys.argv[1:]
b = open(src + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
assert "shardvit_model" in h.pop("__metadata__")
hb = json.dumps(h).encode()
hb += b" " * (-len(hb) % 8)
open(work + "/timm_old/model.safetensors", "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
open(work + "/timm_noint/model.safetensors", "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
open(work + "/sv_old/model.safetensors", "wb").write(b)
c = json.load(open(src + "/config.json"))
p = c["pretrained_cfg"]
del p["crop_mode"]
p.update(crop_pct=1.0, interpolation="bicubic", mean=[0.5] * 3, std=[0.25] * 3)
json.dump(c, open(work + "/timm_old/config.json", "w"))
json.dump(c, open(work + "/sv_old/config.json", "w"))
p.update(interpolation="bilinear")
del p["interpolation"], p["mean"], p["crop_pct"]
json.dump(c, open(work + "/timm_noint/config.json", "w"))
del p["input_size"]
import os
os.makedirs(work + "/timm_nosize", exist_ok=True)
open(work + "/timm_nosize/model.safetensors", "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
json.dump(c, open(work + "/timm_nosize/config.json", "w"))
P
run "$WORK/timm_old.log" "$SV" predict --threads 1 --weights "$WORK/timm_old/model.safetensors" "$IMG"
grep -qF "crop_pct 1 (model), interpolation bicubic (model), mean 0.5,0.5,0.5 (model), std 0.25,0.25,0.25 (model)" \
    "$WORK/timm_old.log" ||
    { echo "FAIL: a timm pretrained_cfg without crop_mode was not used"; grep transform "$WORK/timm_old.log"; exit 1; }
run "$WORK/sv_old.log" "$SV" predict --threads 1 --weights "$WORK/sv_old/model.safetensors" "$IMG"
grep -q "records none" "$WORK/sv_old.log" && grep -qF "crop_pct 0.875 (default)" "$WORK/sv_old.log" ||
    { echo "FAIL: an old shardvit export's pretrained_cfg was used"; grep transform "$WORK/sv_old.log"; exit 1; }
run "$WORK/timm_noint.log" "$SV" predict --threads 1 --weights "$WORK/timm_noint/model.safetensors" "$IMG"
grep -qF "crop_pct 0.875 (model), interpolation bicubic (model), mean 0.485,0.456,0.406 (model), std 0.25,0.25,0.25 (model)" \
    "$WORK/timm_noint.log" || {
    echo "FAIL: a pretrained_cfg without interpolation, crop_pct and mean did not take timm's defaults for them"
    grep transform "$WORK/timm_noint.log"
    exit 1
}
rc=0
timeout 60 "$SV" predict --threads 1 --weights "$WORK/timm_nosize/model.safetensors" "$IMG" >"$WORK/timm_nosize.log" 2>&1 ||
    rc=$?
if [ $rc != 1 ] || ! grep -q "timm_nosize/config.json.*input_size" "$WORK/timm_nosize.log"; then
    echo "FAIL: a pretrained_cfg without input_size was not refused (exit $rc)"
    cat "$WORK/timm_nosize.log"
    exit 1
fi
# no config.json: the head count is asked for, not guessed
mkdir -p "$WORK/bare" && cp "$WORK/w/model.safetensors" "$WORK/bare/"
rc=0
timeout 60 "$SV" predict --threads 1 --weights "$WORK/bare/model.safetensors" "$IMG" >"$WORK/bare.log" 2>&1 || rc=$?
if [ $rc = 0 ] || ! grep -q "pass --heads" "$WORK/bare.log"; then
    echo "FAIL: weights without config.json predicted with a guessed head count (exit $rc)"
    cat "$WORK/bare.log"
    exit 1
fi
run "$WORK/bare2.log" "$SV" predict --threads 1 --topk 2 --heads 2 --weights "$WORK/bare/model.safetensors" "$IMG"
top2 "$WORK/bare2.log" | cmp -s - "$WORK/base.top" ||
    { echo "FAIL: --heads 2 without config.json predicts differently"; cat "$WORK/bare2.log" "$WORK/base.top"; exit 1; }
echo "weights_config: ok ($n contradicting config.json files refused)"
