#!/usr/bin/env bash
# Hostile files under every reader of the real CLI: no input may hang, crash or corrupt the run.
# Every command runs under `timeout` (a hang fails as exit status 124/137) and, where a regression
# could blow up memory, under a virtual-memory ulimit. Asserted:
#   1. FIFOs and devices where a file is read: --config (FIFO, /dev/zero, a directory, a 2 MiB
#      file), a WebDataset shard, classes.txt beside a shard, prep's IDX and CIFAR inputs and
#      CIFAR's class-name list, a checkpoint's `latest` pointer: each is refused at once with a
#      message naming the file (exit 1 or 2), never opened blocking;
#   2. an ImageFolder with a FIFO and a dangling link named .jpg: training fails naming each
#      (it never opens them and never trains on a set that silently lacks entries);
#   3. ImageFolder directory links: `self -> .`, three self links, a mutual loop a/to_b -> ../b,
#      b/to_a -> ../a: each image is indexed exactly once (one epoch of 8 images at batch 4 is
#      2 steps) and the scan finishes in seconds with bounded memory;
#   4. a valid progressive JPEG with 704 scans (the decode-cost attack) in an ImageFolder: it is
#      refused by the scan limit ("more than 100 scans"), logged once, substituted and counted;
#      training completes;
#   5. a checkpoint whose index.json has skipped_steps > step, or a tensor shape whose product
#      wraps modulo 2^64 onto its stated numel: `train --resume` refuses it with a message naming
#      index.json (it used to resume with NaN parameters and exit 0, or accept the shape); the
#      hostile indexes of the ckpt_index fuzz corpus (also a unit whose shard x shard_world
#      wraps) are refused by `reshard`;
#   6. safetensors weights: config.json beside them as a dangling link or a link loop is an
#      error naming it for predict and train --init-from (it used to count as absent), and so is
#      a classes.txt beside them that is a dangling link (it was passed over); a 1.5 MiB
#      config.json is read (one size limit); a header with 300000 zero-size blocks.N entries is
#      refused in seconds ("more than 256 blocks"; the depth count was quadratic in the header);
#      a blocks.0.mlp.fc1.weight of 2^40 rows is refused naming it (its int conversion was UB).
# Usage: hostile_readers.sh SHARDVIT MPIEXEC MAKE_SCAN_JPEG
# HOSTILE_READERS_ALL=1: report every failing case instead of stopping at the first (to check
# that each case fails on a build without the fixes), then exit 1 if any failed.
SHARDVIT=$1 MPIEXEC=$2 MAKE_SCAN_JPEG=$3
source "$(dirname "$0")/lib.sh"
FAILED=0 F0=0
if [ -n "${HOSTILE_READERS_ALL:-}" ]; then
    fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); return 1; }
fi
# begin: a case starts; ok MSG: report it passed (only if nothing failed since begin)
begin() { F0=$FAILED; }
ok() { [ $FAILED -eq $F0 ] && echo "ok $*"; return 0; }
export LC_ALL=C
[ -x "$MAKE_SCAN_JPEG" ] || fail "make_scan_jpeg not built: $MAKE_SCAN_JPEG"
ARGS="--model vit-28 --img 28 --in-chans 3 --dim 36 --depth 2 --heads 3 --batch-size 4 --log-every 1 \
 --seed 5 --workers 1 --comm-timeout 30"
VMEM_KB=4000000 # a scan that regressed into exponential recursion dies here instead of the machine

# run NAME SECONDS CMD...: run CMD (output in $WORK/NAME.log) under a timeout and a memory cap;
# sets RC
run() {
    local name=$1 secs=$2
    shift 2
    FAIL_LOGS=("$WORK/$name.log")
    # -k: shardvit handles SIGTERM (finish the step, then exit), so a blocked open needs SIGKILL
    (ulimit -v $VMEM_KB; timeout -k 5 "$secs" "$@") >"$WORK/$name.log" 2>&1
    RC=$?
    [ $RC -ne 124 ] && [ $RC -ne 137 ] || fail "$name: still running after ${secs} s (hang; exit status $RC)"
    return 0
}

# expect_fail NAME PATTERN CMD...: CMD must exit 1 or 2 within 30 s and print PATTERN
expect_fail() {
    local name=$1 pat=$2
    shift 2
    run "$name" 30 "$@"
    [ $RC -eq 1 ] || [ $RC -eq 2 ] || { fail "$name: exit status $RC (want 1 or 2)"; return; }
    grep -Eq -- "$pat" "$WORK/$name.log" || { fail "$name: no message matching '$pat'"; return; }
    echo "ok $name: $(grep -Em1 -- "$pat" "$WORK/$name.log" | cut -c1-220)"
}

# expect_train NAME STEPS CMD...: CMD must complete within 120 s and run exactly STEPS steps
expect_train() {
    local name=$1 steps=$2
    shift 2
    run "$name" 120 "$@"
    [ $RC -eq 0 ] || { fail "$name: exit status $RC"; return 1; }
    grep -q "step 1/$steps " "$WORK/$name.log" ||
        { fail "$name: not a run of $steps steps: $(grep -m1 'step 1/' "$WORK/$name.log")"; return 1; }
    grep -q "done: final loss" "$WORK/$name.log" || { fail "$name: no final summary"; return 1; }
}

"$SHARDVIT" prep synthetic --out "$WORK/set" --classes 2 --per-class 4 --test-per-class 1 --width 40 --height 36 \
    >"$WORK/prep.log" 2>&1 || { FAIL_LOGS=("$WORK/prep.log"); fail "prep failed"; }

# ---- 1. FIFOs and devices where a file is read ---------------------------------------------
mkfifo "$WORK/config.fifo"
expect_fail config_fifo "config.fifo is not a regular file" \
    "$SHARDVIT" train $ARGS --steps 1 --data synthetic --config "$WORK/config.fifo" --out "$WORK/c1"
expect_fail config_dev_zero "/dev/zero is not a regular file" \
    "$SHARDVIT" train $ARGS --steps 1 --data synthetic --config /dev/zero --out "$WORK/c2"
expect_fail config_dir "is a directory" \
    "$SHARDVIT" train $ARGS --steps 1 --data synthetic --config "$WORK/set" --out "$WORK/c3"
head -c $((2 << 20)) /dev/zero | tr '\0' '#' >"$WORK/big.toml"
expect_fail config_big "big.toml is 2097152 bytes, more than the limit of 1048576 bytes" \
    "$SHARDVIT" train $ARGS --steps 1 --data synthetic --config "$WORK/big.toml" --out "$WORK/c4"
printf 'steps = 1\ndata = "synthetic"\n' >"$WORK/ok.toml"
begin
run config_ok 60 "$SHARDVIT" train $ARGS --config "$WORK/ok.toml" --out "$WORK/c5"
[ $RC -eq 0 ] && grep -q "step 1/1 " "$WORK/config_ok.log" || fail "config_ok: a regular config file no longer works"
ok "config_ok: a regular --config file still applies"

mkdir -p "$WORK/tars"
mkfifo "$WORK/tars/shard.tar"
expect_fail tar_fifo "shard.tar is not a regular file" \
    "$SHARDVIT" train $ARGS --steps 1 --data "$WORK/tars/shard.tar" --out "$WORK/t1"
"$SHARDVIT" prep synthetic --format tar --out "$WORK/wds" --classes 2 --per-class 4 --test-per-class 1 --width 40 \
    --height 36 >"$WORK/prep_tar.log" 2>&1 || { FAIL_LOGS=("$WORK/prep_tar.log"); fail "prep --format tar failed"; }
shard=$(ls "$WORK/wds/"train-*.tar | head -1)
[ -f "$WORK/wds/classes.txt" ] || fail "prep --format tar wrote no classes.txt beside the shards"
rm "$WORK/wds/classes.txt"
mkfifo "$WORK/wds/classes.txt"
expect_fail tar_classes_fifo "classes.txt is not a regular file" \
    "$SHARDVIT" train $ARGS --steps 1 --data "$shard" --out "$WORK/t2"

mkdir -p "$WORK/idx"
mkfifo "$WORK/idx/train-images-idx3-ubyte.gz"
expect_fail prep_idx_fifo "train-images-idx3-ubyte.gz is not a regular file" \
    "$SHARDVIT" prep fashion-mnist --src "$WORK/idx" --out "$WORK/p1"
mkdir -p "$WORK/cifar"
"$PY" - "$WORK/cifar" <<'PYEOF'
import sys
d = sys.argv[1]
rec = bytes([1]) + bytes(range(256)) * 12
for b in (1, 2, 4, 5):
    open(f"{d}/data_batch_{b}.bin", "wb").write(rec)
open(f"{d}/test_batch.bin", "wb").write(rec)
PYEOF
mkfifo "$WORK/cifar/data_batch_3.bin"
expect_fail prep_cifar_batch_fifo "data_batch_3.bin is not a regular file" \
    "$SHARDVIT" prep cifar10 --src "$WORK/cifar" --out "$WORK/p2"
rm "$WORK/cifar/data_batch_3.bin"
cp "$WORK/cifar/data_batch_1.bin" "$WORK/cifar/data_batch_3.bin"
mkfifo "$WORK/cifar/batches.meta.txt"
expect_fail prep_cifar_names_fifo "batches.meta.txt is not a regular file" \
    "$SHARDVIT" prep cifar10 --src "$WORK/cifar" --out "$WORK/p3"

# ---- 2. special files named .jpg in an ImageFolder ----------------------------------------
cp -r "$WORK/set/train" "$WORK/special"
mkfifo "$WORK/special/class_000/fifo.jpg"
ln -s /nonexistent/x.jpg "$WORK/special/class_001/dangling.jpg"
begin
expect_fail special_fifo "special/class_000/fifo\.jpg is a FIFO, not a regular file: it cannot be a sample" \
    "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/special" --out "$WORK/o_special"
rm "$WORK/special/class_000/fifo.jpg"
expect_fail special_dangling "special/class_001/dangling\.jpg is a dangling symbolic link" \
    "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/special" --out "$WORK/o_special"
ok "special: a FIFO and a dangling link named .jpg fail training naming them (never opened)"
rm "$WORK/special/class_001/dangling.jpg"
# a class directory that is a dangling link (unmounted storage): an error naming it (it was left
# out, renumbering every class after it)
ln -s /nonexistent/cls "$WORK/special/class_002"
begin
expect_fail special_class_dangling "entry 'class_002' cannot be examined .*a dangling symbolic link" \
    "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/special" --out "$WORK/o_special"
rm "$WORK/special/class_002"
# image files of a format ImageFolder does not read (PNG) and a class left without images: the
# run goes on (the class keeps its index) but says so (both were silent)
mkdir "$WORK/special/class_002"
cp "$(ls "$WORK/special/class_000/"*.jpg | head -1)" "$WORK/special/class_002/x.png"
expect_train special_png 2 "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/special" --out "$WORK/o_png" &&
    grep -q "WARN dataset .*special: 1 of 3 classes have no .jpg/.jpeg image (the first: 'class_002')" \
        "$WORK/special_png.log" ||
    fail "special_png: no warning for the class without images"
grep -q "WARN dataset .*special: 1 image files of formats other than JPEG are not read (the first: class_002/x.png)" \
    "$WORK/special_png.log" || fail "special_png: no warning for the PNG file"
ok "special: a dangling class link is refused; a PNG-only class trains with warnings"
# a tar shard with data after its end-of-archive marker, read by two ranks: every rank scans the
# shard, the warning is printed once (it was printed by each rank)
mkdir "$WORK/eoa"
i=0
eoa_imgs=("$WORK/set/train/class_000/"*.jpg)
for f in "${eoa_imgs[@]:0:4}"; do
    cp "$f" "$WORK/eoa/$i.jpg" && echo 0 >"$WORK/eoa/$i.cls"
    i=$((i + 1))
done
(cd "$WORK/eoa" && tar cf ../eoa.tar $(ls | sort)) || fail "could not write eoa.tar"
for i in $(seq 64); do printf 'junk'; done >>"$WORK/eoa.tar"
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $ARGS --steps 1 --data "$WORK/eoa.tar" >"$WORK/eoa.log" 2>&1 ||
    fail "a tar shard with data after its end of archive, 2 ranks: training failed"
[ "$(grep -c "the data after the end-of-archive marker at byte" "$WORK/eoa.log")" = 1 ] ||
    fail "a tar shard with data after its end of archive, 2 ranks: the warning not printed exactly once"
ok "eoa: data after a tar shard's end of archive is warned about once at 2 ranks"

# ---- 3. directory link loops ----------------------------------------------------------------
cp -r "$WORK/set/train" "$WORK/loops"
ln -s . "$WORK/loops/class_000/self"
begin
expect_train loop_self 2 "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/loops" --out "$WORK/o_l1"
ok "loop_self: self -> . indexes each image once (2 steps)"
ln -s . "$WORK/loops/class_000/again"
ln -s . "$WORK/loops/class_000/more"
mkdir "$WORK/loops/class_001/a" "$WORK/loops/class_001/b"
mv "$WORK/loops/class_001/"$(ls "$WORK/loops/class_001" | grep jpg | head -1) "$WORK/loops/class_001/a/"
ln -s ../b "$WORK/loops/class_001/a/to_b"
ln -s ../a "$WORK/loops/class_001/b/to_a"
start=$(date +%s)
begin
expect_train loop_many 2 "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/loops" --out "$WORK/o_l2"
ok "loop_many: three self links and a mutual loop: still 8 images, $(($(date +%s) - start)) s"

# ---- 4. a progressive JPEG with 704 scans --------------------------------------------------
cp -r "$WORK/set/train" "$WORK/scans"
victim=$(ls "$WORK/scans/class_001/" | head -1)
"$MAKE_SCAN_JPEG" "$WORK/scans/class_001/$victim" 512 512 704 >"$WORK/make_scan.log" 2>&1 ||
    { FAIL_LOGS=("$WORK/make_scan.log"); fail "make_scan_jpeg failed"; }
grep -q "704 scans" "$WORK/make_scan.log" || { FAIL_LOGS=("$WORK/make_scan.log"); fail "the image does not have 704 scans"; }
start=$(date +%s)
begin
expect_train scans 2 "$SHARDVIT" train $ARGS --epochs 1 --data "$WORK/scans" --out "$WORK/o_scans"
[ "$(grep -c "skipping unreadable image" "$WORK/scans.log")" -eq 1 ] || fail "scans: the image was not logged once"
grep "skipping unreadable image" "$WORK/scans.log" | grep -q "$victim.*more than 100 scans" ||
    fail "scans: the log does not name the file and the scan limit"
subst=$(grep -o "substituted samples [0-9]*" "$WORK/scans.log" | grep -o "[0-9]*$")
[ "${subst:-0}" -ge 1 ] || fail "scans: not counted as a substituted sample"
ok "scans: $(cat "$WORK/make_scan.log" | cut -d: -f2) refused by the scan limit, substituted ($subst), $(($(date +%s) - start)) s"

# ---- 5. checkpoint train state and shapes --------------------------------------------------
run ckpt_base 120 "$SHARDVIT" train $ARGS --steps 2 --ckpt-every 2 --data synthetic --synth-samples 64 --out "$WORK/run"
[ $RC -eq 0 ] || fail "ckpt_base: exit status $RC"
step_dir="$WORK/run/checkpoints/step_00000002"
[ -f "$step_dir/index.json" ] || fail "ckpt_base: no checkpoint"
# edit COPY EXPR: a copy of the checkpoint with index.json changed by the Python expression
edit() {
    cp -r "$WORK/run/checkpoints" "$WORK/$1"
    "$PY" - "$WORK/$1/step_00000002/index.json" "$2" <<'PYEOF'
import json, sys
p, expr = sys.argv[1], sys.argv[2]
d = json.load(open(p))
exec(expr)
json.dump(d, open(p, "w"), indent=1)
PYEOF
}
edit skipped 'd["skipped_steps"] = d["step"] + 3'
expect_fail ckpt_skipped "index.json: skipped_steps 5 exceeds step 2" \
    "$SHARDVIT" train $ARGS --steps 4 --data synthetic --synth-samples 64 --resume "$WORK/skipped/step_00000002" \
    --out "$WORK/r1"
# norm.weight has 36 elements; 2522 x 1994 x 25873 x 141775993 = 2^64 + 36
edit wrapped '[t.update(shape=[2522, 1994, 25873, 141775993]) for u in d["units"] for t in u["tensors"] if t["name"] == "norm.weight"]'
grep -q 141775993 "$WORK/wrapped/step_00000002/index.json" || fail "wrapped: edit did not apply"
expect_fail ckpt_shape_wraps "index.json: units\[[0-9]+\].tensors\[[0-9]+\].shape: the product of the shape overflows 64 bits" \
    "$SHARDVIT" train $ARGS --steps 4 --data synthetic --synth-samples 64 --resume "$WORK/wrapped/step_00000002" \
    --out "$WORK/r2"
# the fuzz corpus's hostile indexes through `reshard` (each used to be accepted: the command got
# as far as opening the shard files)
CORPUS="$HERE/../fuzz/corpus/ckpt_index"
for c in "shape-product-wraps-to-numel|the product of the shape overflows 64 bits" \
         "unit-shard-times-world-wraps|units\[0\]: padded must equal shard x shard_world" \
         "skipped-steps-exceed-step|skipped_steps 5 exceeds step 1"; do
    name=${c%%|*}
    mkdir -p "$WORK/corpus/$name/step_00000001"
    cp "$CORPUS/$name.json" "$WORK/corpus/$name/step_00000001/index.json"
    expect_fail "corpus_$name" "index.json: .*${c#*|}" \
        "$SHARDVIT" reshard "$WORK/corpus/$name/step_00000001" "$WORK/corpus/$name/out" --world 1
done
# the `latest` pointer as a FIFO (read through the guarded reader of core/fileio)
cp -r "$WORK/run/checkpoints" "$WORK/latest_fifo"
rm "$WORK/latest_fifo/latest"
mkfifo "$WORK/latest_fifo/latest"
expect_fail ckpt_latest_fifo "latest is not a regular file" \
    "$SHARDVIT" train $ARGS --steps 4 --data synthetic --synth-samples 64 --resume "$WORK/latest_fifo" --out "$WORK/r3"
# and the unmodified checkpoint resumes
begin
run ckpt_resume 120 "$SHARDVIT" train $ARGS --steps 3 --data synthetic --synth-samples 64 --resume "$step_dir" \
    --out "$WORK/r4"
[ $RC -eq 0 ] && grep -q "resume: step 2" "$WORK/ckpt_resume.log" || fail "ckpt_resume: the good checkpoint does not resume"
ok "ckpt_resume: the unmodified checkpoint resumes"

# ---- 6. safetensors weights: config.json beside them, a header of many blocks --------------
mkdir -p "$WORK/w"
run export 60 "$SHARDVIT" export "$WORK/run" "$WORK/w/model.safetensors"
[ $RC -eq 0 ] || fail "export: exit status $RC"
img=$(find "$WORK/set/test" -name '*.jpg' | sort | head -1)
# config.json a dangling link or a link loop: an error naming it (it counted as absent, so with
# --heads the transform and label names were silently dropped; --init-from trained on defaults)
mkdir -p "$WORK/wd" "$WORK/wl"
cp "$WORK/w/model.safetensors" "$WORK/wd/" && ln -s gone.json "$WORK/wd/config.json"
cp "$WORK/w/model.safetensors" "$WORK/wl/" && ln -s loop "$WORK/wl/config.json" && ln -s config.json "$WORK/wl/loop"
expect_fail weights_config_dangling "wd/config.json is a symbolic link to a file that does not exist" \
    "$SHARDVIT" predict --threads 1 --heads 3 --weights "$WORK/wd/model.safetensors" "$img"
expect_fail weights_config_loop "wl/config.json: Too many levels of symbolic links" \
    "$SHARDVIT" predict --threads 1 --heads 3 --weights "$WORK/wl/model.safetensors" "$img"
# classes.txt beside the weights a dangling link: an error naming it (it was passed over as
# absent, and predict printed class indices or the recorded names without a word)
mkdir -p "$WORK/wc" && cp "$WORK/w/model.safetensors" "$WORK/w/config.json" "$WORK/wc/"
ln -s gone.txt "$WORK/wc/classes.txt"
expect_fail weights_classes_dangling "wc/classes.txt: No such file or directory" \
    "$SHARDVIT" predict --threads 1 --weights "$WORK/wc/model.safetensors" "$img"
expect_fail init_from_config_dangling "wd/config.json is a symbolic link to a file that does not exist" \
    "$SHARDVIT" train $ARGS --steps 0 --data synthetic --synth-samples 8 --init-from "$WORK/wd/model.safetensors"
# a config.json of 1.5 MiB (label names of many classes) is read (the weights reader's limit was
# 1 MiB, the transform reader's 64 MiB: one limit now)
mkdir -p "$WORK/wbig" && cp "$WORK/w/model.safetensors" "$WORK/w/config.json" "$WORK/wbig/"
"$PY" - "$WORK/wbig/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["notes"] = "x" * (3 << 19)
json.dump(c, open(sys.argv[1], "w"))
PYEOF
begin
run weights_config_big 60 "$SHARDVIT" predict --threads 1 --weights "$WORK/wbig/model.safetensors" "$img"
[ $RC -eq 0 ] || fail "weights_config_big: a 1.5 MiB config.json is refused (exit $RC)"
ok "weights_config_big: a 1.5 MiB config.json is read"
# 300000 zero-size blocks.N.norm1.weight entries in the header: the depth count stops past the
# largest depth a model may have, and tensor lookups are binary searches (each block was looked up
# by a linear scan, ~3 min for this file, about an hour for a million)
mkdir -p "$WORK/deep"
"$PY" - "$WORK/w/model.safetensors" "$WORK/deep/model.safetensors" 300000 <<'PYEOF'
import json, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(src, "rb").read()
hl = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + hl])
for i in range(2, n):
    h["blocks.%d.norm1.weight" % i] = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
hb = json.dumps(h, separators=(",", ":")).encode()
hb += b" " * (-len(hb) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + hl:])
PYEOF
start=$(date +%s)
expect_fail weights_many_blocks "deep/model.safetensors: the file holds blocks.256.norm1.weight: more than 256 blocks" \
    "$SHARDVIT" predict --threads 1 --heads 3 --weights "$WORK/deep/model.safetensors" "$img"
echo "   ($(($(date +%s) - start)) s)"
# blocks.0.mlp.fc1.weight claiming 2^40 rows (a zero-size tensor fits any shape in no bytes): the
# MLP width is range-checked before it becomes an int
mkdir -p "$WORK/wide"
"$PY" - "$WORK/w/model.safetensors" "$WORK/wide/model.safetensors" <<'PYEOF'
import json, struct, sys
src, dst = sys.argv[1:]
b = open(src, "rb").read()
hl = struct.unpack("<Q", b[:8])[0]
h, d = json.loads(b[8:8 + hl]), b[8 + hl:]
out, data = {"__metadata__": h.pop("__metadata__")}, b""
for k, v in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    blob = d[v["data_offsets"][0]:v["data_offsets"][1]]
    if k == "blocks.0.mlp.fc1.weight":
        v, blob = dict(v, shape=[1 << 40, 0]), b""
    out[k] = dict(v, data_offsets=[len(data), len(data) + len(blob)])
    data += blob
hb = json.dumps(out).encode()
hb += b" " * (-len(hb) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hb)) + hb + data)
PYEOF
expect_fail weights_wide_mlp "wide/model.safetensors: tensor blocks.0.mlp.fc1.weight dimension 0 is 1099511627776, outside \[1, 1000000\]" \
    "$SHARDVIT" predict --threads 1 --heads 3 --weights "$WORK/wide/model.safetensors" "$img"
[ $FAILED -eq 0 ] || { echo "$FAILED cases failed"; exit 1; }
echo PASS
