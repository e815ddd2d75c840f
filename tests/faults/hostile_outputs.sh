#!/usr/bin/env bash
# Outputs that must not destroy data, models that carry their class names, messages that stay
# one escaped line, inconsistencies that become errors, and a hostile pos_embed shape, through the
# real CLI with real files (docs/reliability.md, docs/checkpoints.md "Outputs"). Every command
# runs under `timeout`; a failing command must exit 1 or 2 (never a signal); the files it must
# not touch are compared by sha256 (contents, names and file types) before and after.
#   1. reshard: an existing OUT.tmp (not shardvit's) survives; OUT inside IN (the step directory
#      or the run directory given) is refused; a failed reshard leaves no temporary behind;
#   2. export: OUT = a shard file / index.json of the checkpoint / its root's `latest`, a new file
#      in the checkpoint root (CKPT the root, the run directory or the step directory), a FIFO, a
#      directory, a symbolic link, a file that is not safetensors, config.json beside OUT being a
#      directory, a user's config.json or a lone classes.txt beside OUT: each refused, nothing
#      changed; an existing OUT.tmp survives a good export; an index.json with a damaged tensor
#      name or model field is refused by export and reshard, which write nothing; train
#      --dump-logits on a model's safetensors file or notes is refused (an earlier dump is replaced);
#   3. export writes classes.txt (the recorded label names) beside the weights; predict prints
#      names, also from a directory with only model.safetensors + classes.txt (no config.json);
#   4. predict's error for an undecodable image is not garbled; a class name with an ANSI escape
#      and a tensor name with ESC + newline are printed escaped on one line (import, eval);
#   5. eval --out inside the checkpoint (its step directory, its root), resume with another
#      --heads, eval on a folder whose class names differ from the model's
#      label names (and --ignore-class-names), NaN / -Inf inside imported weights (import,
#      train --init-from on 2 ranks, eval --weights, the resampled pos_embed path): clear errors;
#      the same --out then takes a good --init-from file (a refused file wrote nothing there); half
#      a classifier head, or a head.weight and head.bias of different class counts: refused by
#      import and --init-from; a head of another class count or none: fresh, and logged;
#   6. --init-from / import / eval --weights of a file whose pos_embed claims a 65536 x 65536
#      grid (a sparse file; before the fix the grid product overflowed int: SIGSEGV);
#   7. training and evaluation data that name their classes differently;
#   8. a user's file at train --save-params / --trace and bench --json, on 2 ranks: refused by
#      every rank at start-up and kept; an earlier parameter dump is replaced;
#   9. a --trace merge of train, bench and plan that fails part-way (disk full) keeps the earlier
#      trace byte for byte and leaves no temporary and no part.
# Usage: hostile_outputs.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
SV=("timeout" "120" "$SHARDVIT")
ESC=$(printf '\033')
MODEL="--model vit-28 --img 28 --in-chans 3 --dim 36 --depth 2 --heads 3 --num-classes 3"
ARGS="$MODEL --batch-size 4 --log-every 1 --seed 5 --workers 1 --threads 1 --comm-timeout 30"

# ---- set-up: an ImageFolder whose class names include an ANSI escape; a 2-step run -------------
expect_ok prep "${SV[@]}" prep synthetic --out "$WORK/set" --classes 3 --per-class 4 --test-per-class 2 \
    --width 32 --height 32
for s in train test; do mv "$WORK/set/$s/class_001" "$WORK/set/$s/evil${ESC}[31mred"; done
expect_ok train "${SV[@]}" train $ARGS --steps 2 --data "$WORK/set/train" --out "$WORK/run"
[ -f "$WORK/run/checkpoints/step_00000002/index.json" ] || fail "no checkpoint after training"
# sections 1-2 aim at a copy, so that a build which destroys it does not break the later sections
cp -r "$WORK/run" "$WORK/victim"
CK=$WORK/victim/checkpoints/step_00000002
CK_SUM=$(tree_sum "$WORK/victim/checkpoints")
ck_intact() { [ "$(tree_sum "$WORK/victim/checkpoints")" = "$CK_SUM" ] || fail "$1: the checkpoint was modified"; }

# ---- 1. reshard ---------------------------------------------------------------------------------
mkdir -p "$WORK/rs/out.tmp" && echo "someone else's data" >"$WORK/rs/out.tmp/keep"
echo "also not shardvit's" >"$WORK/rs/out.tmp-00000000"
S=$(tree_sum "$WORK/rs/out.tmp" "$WORK/rs/out.tmp-00000000")
expect_ok reshard "${SV[@]}" reshard "$WORK/victim" "$WORK/rs/out" --world 2
[ -f "$WORK/rs/out/index.json" ] && [ -f "$WORK/rs/out/shard_00001-of-00002.bin" ] || fail "reshard wrote no OUT"
[ "$(tree_sum "$WORK/rs/out.tmp" "$WORK/rs/out.tmp-00000000")" = "$S" ] || fail "reshard removed or changed OUT.tmp"
echo "ok reshard_keeps_foreign_tmp: an existing OUT.tmp and OUT.tmp-00000000 are untouched"
no_tmp_left "$WORK/rs" reshard
expect_fail reshard_inside "reshard output .*/sub is inside the checkpoint" \
    "${SV[@]}" reshard "$WORK/victim" "$CK/sub" --world 2
[ ! -e "$CK/sub" ] || fail "reshard created its output inside the checkpoint"
expect_fail reshard_inside_dotdot "is inside the checkpoint" \
    "${SV[@]}" reshard "$CK" "$WORK/victim/checkpoints/x/../step_00000002/deeper/o" --world 1
# IN given as the run directory: OUT beside the step directories (inside IN) is refused too
expect_fail reshard_inside_run "reshard output .*checkpoints/step_new is inside the checkpoint .*victim" \
    "${SV[@]}" reshard "$WORK/victim" "$WORK/victim/checkpoints/step_new" --world 2
[ ! -e "$WORK/victim/checkpoints/step_new" ] || fail "reshard created its output inside the run directory"
ck_intact reshard_inside
# a failed reshard (damaged input) leaves neither OUT nor a temporary, and still not OUT.tmp's data
cp -r "$CK" "$WORK/rs/bad"
printf '\xff' | dd of="$WORK/rs/bad/shard_00000-of-00001.bin" bs=1 seek=300 conv=notrunc status=none
expect_fail reshard_damaged "CRC32C mismatch" "${SV[@]}" reshard "$WORK/rs/bad" "$WORK/rs/out2" --world 3
[ ! -e "$WORK/rs/out2" ] || fail "a failed reshard left its output"
no_tmp_left "$WORK/rs" reshard_damaged
[ "$(tree_sum "$WORK/rs/out.tmp" "$WORK/rs/out.tmp-00000000")" = "$S" ] || fail "failed reshard touched OUT.tmp"

# ---- 2. export outputs --------------------------------------------------------------------------
expect_fail export_shard "export output .*shard_00000-of-00001.bin is inside the checkpoint" \
    "${SV[@]}" export "$WORK/victim" "$CK/shard_00000-of-00001.bin"
expect_fail export_index "export output .*index.json is inside the checkpoint" \
    "${SV[@]}" export "$WORK/victim" "$CK/index.json"
ln -s "$CK" "$WORK/cklink"
expect_fail export_index_via_link "is inside the checkpoint" "${SV[@]}" export "$WORK/victim" "$WORK/cklink/index.json"
expect_fail export_latest "is the .latest. file of the checkpoint root" \
    "${SV[@]}" export "$WORK/victim" "$WORK/victim/checkpoints/latest"
ck_intact export_into_checkpoint
# outputs inside the checkpoint root (the directory with the step_* directories and `latest`),
# whether CKPT names the root, the run directory or a step directory in it: refused with a message
# naming the root, the root's entries as they were. A run directory outside its root is not
# protected (RUN/model.safetensors is where scripts/main_job.sh exports).
ROOT=$WORK/victim/checkpoints
ROOT_LS=$(ls -A "$ROOT")
root_intact() {
    [ "$(ls -A "$ROOT")" = "$ROOT_LS" ] || fail "$1: the checkpoint root now holds: $(ls -A "$ROOT" | tr '\n' ' ')"
    ck_intact "$1"
}
IN_ROOT="is inside the checkpoint root .*victim/checkpoints that this command reads .*choose a path outside it"
expect_fail export_root_into_root "export output .*checkpoints/w.safetensors $IN_ROOT" \
    "${SV[@]}" export "$ROOT" "$ROOT/w.safetensors"
root_intact export_root_into_root
expect_fail export_run_into_root "export output .*checkpoints/z.safetensors $IN_ROOT" \
    "${SV[@]}" export "$WORK/victim" "$ROOT/z.safetensors"
root_intact export_run_into_root
expect_fail export_step_into_root "export output .*checkpoints/y.safetensors $IN_ROOT" \
    "${SV[@]}" export "$CK" "$ROOT/y.safetensors"
root_intact export_step_into_root
expect_fail export_run_into_root_dotdot "export output .*/sub/z.safetensors $IN_ROOT" \
    "${SV[@]}" export "$WORK/victim" "$CK/../sub/z.safetensors"
root_intact export_run_into_root_dotdot
mkdir -p "$WORK/victim/sub"
expect_ok export_run_sub "${SV[@]}" export "$WORK/victim" "$WORK/victim/sub/z.safetensors"
[ -s "$WORK/victim/sub/z.safetensors" ] || fail "export into a run directory outside its checkpoint root wrote nothing"
root_intact export_run_sub
mkdir -p "$WORK/ex"
mkfifo "$WORK/ex/fifo.safetensors"
mkdir "$WORK/ex/dir.safetensors" && echo keep >"$WORK/ex/dir.safetensors/inner"
echo "my notes" >"$WORK/ex/notes.txt" && ln -s notes.txt "$WORK/ex/link.safetensors"
S=$(tree_sum "$WORK/ex")
expect_fail export_fifo "fifo.safetensors is a FIFO: refusing to replace it" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/fifo.safetensors"
expect_fail export_dir "dir.safetensors is a directory: refusing to replace it" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/dir.safetensors"
expect_fail export_symlink "link.safetensors is a symbolic link: refusing to replace it" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/link.safetensors"
expect_fail export_not_st "notes.txt exists and is not an earlier shardvit export" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/notes.txt"
expect_fail export_sidecar_name "config.json is the name of a file export writes beside the weights" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/config.json"
# a new OUT not named *.safetensors: timm would not read it as safetensors, and the next export into
# the directory could replace the config.json these weights load with
expect_fail export_suffix "the name must end in .safetensors" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/weights.bin"
expect_fail export_suffix_only "the name must end in .safetensors" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex/.safetensors"
[ "$(tree_sum "$WORK/ex")" = "$S" ] || fail "a refused export changed its output directory"
mkdir -p "$WORK/ex2/config.json" && echo keep >"$WORK/ex2/config.json/inner"
S=$(tree_sum "$WORK/ex2")
expect_fail export_config_dir "config.json is a directory: refusing to replace it" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex2/model.safetensors"
[ "$(tree_sum "$WORK/ex2")" = "$S" ] || fail "export wrote something although config.json could not be written"
# a user's config.json / classes.txt where export would write its own: never replaced (an existing
# config.json must be a model config, an existing classes.txt must sit beside one)
mkdir -p "$WORK/ex3" "$WORK/ex4"
echo "my precious config" >"$WORK/ex3/config.json" && echo "mine" >"$WORK/ex3/classes.txt"
echo "mine" >"$WORK/ex4/classes.txt"
S=$(tree_sum "$WORK/ex3" "$WORK/ex4")
expect_fail export_user_config "ex3/config.json exists and is not a model config.json" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex3/model.safetensors"
expect_fail export_user_classes "ex4/classes.txt exists, is not the label names this checkpoint records" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex4/model.safetensors"
[ "$(tree_sum "$WORK/ex3" "$WORK/ex4")" = "$S" ] || fail "export replaced a user's config.json or classes.txt"
# export into the run directory, as scripts/main_job.sh does: train's own RUN/classes.txt holds the
# names export writes, so it is no obstacle (and stays as it was)
cp -r "$WORK/run" "$WORK/runx"
S=$(tree_sum "$WORK/runx/classes.txt")
expect_ok export_into_run "${SV[@]}" export "$WORK/runx" "$WORK/runx/model.safetensors"
# a step directory copied into a working directory: that directory is no checkpoint root (it has
# no `latest`), so export may write beside the copy
mkdir -p "$WORK/wd" && cp -r "$WORK/runx/checkpoints/$(cat "$WORK/runx/checkpoints/latest")" "$WORK/wd/"
expect_ok export_beside_step_copy "${SV[@]}" export "$WORK/wd/$(cat "$WORK/runx/checkpoints/latest")" \
    "$WORK/wd/model.safetensors"
[ -s "$WORK/runx/model.safetensors" ] && [ "$(tree_sum "$WORK/runx/classes.txt")" = "$S" ] ||
    fail "export into the run directory did not write its weights or changed classes.txt"
# config.json / classes.txt describe the one model of their directory (eval takes the head count
# and the transform from config.json): a second model exported beside the first, or an export
# beside a downloaded model's weights, would silently change how those load; refused. An existing
# OUT is replaced only when it is an earlier shardvit export (any safetensors file was before).
expect_ok train_h2 "${SV[@]}" train $ARGS --heads 2 --steps 1 --data "$WORK/set/train" --out "$WORK/run_h2"
mkdir -p "$WORK/ex5" "$WORK/ex6"
expect_ok export_first "${SV[@]}" export "$WORK/victim" "$WORK/ex5/a.safetensors"
expect_ok export_again_same "${SV[@]}" export "$WORK/victim" "$WORK/ex5/a.safetensors"
S=$(tree_sum "$WORK/ex5")
expect_fail export_second_model "ex5/config.json describes other weights in that directory \\(a.safetensors\\)" \
    "${SV[@]}" export "$WORK/run_h2" "$WORK/ex5/b.safetensors"
[ "$(tree_sum "$WORK/ex5")" = "$S" ] || fail "a refused export changed the other model's directory"
# replacing the one model of the directory replaces its description with it
expect_ok export_other_model_over "${SV[@]}" export "$WORK/run_h2" "$WORK/ex5/a.safetensors"
grep -q '"num_heads": 2' "$WORK/ex5/config.json" || fail "config.json does not describe the replaced weights"
cp "$WORK/ex5/a.safetensors" "$WORK/ex6/model.safetensors"
python3 - "$WORK/ex6/model.safetensors" <<'PYEOF' || fail "could not strip the metadata"
import json, struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"] = {"format": "pt"}
t = json.dumps(h).encode()
t += b" " * (-len(t) % 8)
open(p, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PYEOF
S=$(tree_sum "$WORK/ex6")
expect_fail export_foreign_st "ex6/model.safetensors exists and is not an earlier shardvit export" \
    "${SV[@]}" export "$WORK/victim" "$WORK/ex6/model.safetensors"
[ "$(tree_sum "$WORK/ex6")" = "$S" ] || fail "export replaced a safetensors file it did not write"
# index.json whose tensor names or model fields were damaged (one bit each): refused by export
# and reshard as by resume, never a file with a wrong tensor name or a config.json that does not
# fit its weights
for dmg in "s/blocks.0.mlp.fc1.weight/blocks.0.mlp.fc1\/weight/" 's/"img": *\([0-9]*\)/"img": 20/'; do
    rm -rf "$WORK/dmg" && cp -r "$WORK/run" "$WORK/dmg"
    sed -i "$dmg" "$WORK/dmg/checkpoints/step_00000002/index.json"
    cmp -s "$WORK/dmg/checkpoints/step_00000002/index.json" "$WORK/run/checkpoints/step_00000002/index.json" &&
        fail "the damage '$dmg' changed nothing (test set-up)"
    expect_fail export_damaged_index "index.json: the model it records .* has tensor .*, which the checkpoint" \
        "${SV[@]}" export "$WORK/dmg" "$WORK/dmg.safetensors"
    [ ! -e "$WORK/dmg.safetensors" ] || fail "export of a damaged index wrote its output"
    expect_fail reshard_damaged_index "index.json: the model it records" \
        "${SV[@]}" reshard "$WORK/dmg" "$WORK/dmg_rs" --world 2
    [ ! -e "$WORK/dmg_rs" ] || fail "reshard of a damaged index wrote its output"
done
# a good export next to someone's model.safetensors.tmp: that file survives; nothing temporary left
mkdir -p "$WORK/w" && echo "precious" >"$WORK/w/model.safetensors.tmp"
S=$(tree_sum "$WORK/w/model.safetensors.tmp")
expect_ok export "${SV[@]}" export "$WORK/run" "$WORK/w/model.safetensors"
expect_ok export_again "${SV[@]}" export "$WORK/run" "$WORK/w/model.safetensors" --dtype bf16
[ "$(tree_sum "$WORK/w/model.safetensors.tmp")" = "$S" ] || fail "export destroyed an existing model.safetensors.tmp"
no_tmp_left "$WORK/w" export
ck_intact export
# the same for train --dump-logits (the safetensors writer's own temporary): a foreign
# logits.safetensors.tmp survives
mkdir -p "$WORK/dl" && echo "precious" >"$WORK/dl/logits.safetensors.tmp"
S=$(tree_sum "$WORK/dl/logits.safetensors.tmp")
expect_ok dump_logits "${SV[@]}" train $ARGS --steps 0 --data synthetic --synth-samples 8 \
    --dump-logits "$WORK/dl/logits.safetensors"
[ -s "$WORK/dl/logits.safetensors" ] || fail "train --dump-logits wrote no file"
[ "$(tree_sum "$WORK/dl/logits.safetensors.tmp")" = "$S" ] ||
    fail "train --dump-logits destroyed an existing logits.safetensors.tmp"
no_tmp_left "$WORK/dl" dump_logits
# --dump-logits replaces only an earlier logits dump: a model's weights (a safetensors file of other
# tensors) or notes at that path are refused at start-up and kept byte for byte; the earlier dump
# is replaced (a new file renamed over it)
cp "$WORK/w/model.safetensors" "$WORK/dl/model.safetensors" && echo "my notes" >"$WORK/dl/notes.txt"
S=$(tree_sum "$WORK/dl/model.safetensors" "$WORK/dl/notes.txt")
for f in model.safetensors notes.txt; do
    expect_fail "dump_logits_user_${f%.*}" \
        "--dump-logits $WORK/dl/$f exists and is not an earlier logits dump .*: refusing to replace it" \
        "${SV[@]}" train $ARGS --steps 0 --data synthetic --synth-samples 8 --dump-logits "$WORK/dl/$f"
done
[ "$(tree_sum "$WORK/dl/model.safetensors" "$WORK/dl/notes.txt")" = "$S" ] ||
    fail "train --dump-logits changed a user's file at its path"
ino=$(stat -c %i "$WORK/dl/logits.safetensors")
expect_ok dump_logits_again "${SV[@]}" train $ARGS --steps 0 --data synthetic --synth-samples 8 \
    --dump-logits "$WORK/dl/logits.safetensors"
[ "$(stat -c %i "$WORK/dl/logits.safetensors")" != "$ino" ] || fail "train --dump-logits: the earlier dump was not replaced"
no_tmp_left "$WORK/dl" dump_logits_again
echo "ok export_outputs: refused outputs changed nothing; a foreign OUT.tmp survives; no temporaries left"

# ---- 3. classes.txt beside the weights; predict prints names ------------------------------------
"$PY" - "$WORK/run/checkpoints/step_00000002/index.json" "$WORK/w/classes.txt" <<'PYEOF' || fail "classes.txt does not list the label names"
import json, sys
want = json.load(open(sys.argv[1]))["label_names"]
got = open(sys.argv[2], encoding="utf-8").read().split("\n")
assert got[-1] == "" and got[:-1] == want, (got, want)
print("ok classes_file: classes.txt =", [n.encode("unicode_escape").decode() for n in want])
PYEOF
img=$(find "$WORK/set/test/class_000" -name '*.jpg' | sort | head -1)
expect_ok predict "${SV[@]}" predict --weights "$WORK/w/model.safetensors" --topk 3 --threads 1 "$img"
grep -q "class_000 (0)" "$WORK/predict.log" && grep -q 'evil\\x1B\[31mred (2)' "$WORK/predict.log" ||
    { FAIL_LOGS=("$WORK/predict.log"); fail "predict did not print the class names (escaped)"; }
grep -q "$ESC" "$WORK/predict.log" && { FAIL_LOGS=("$WORK/predict.log"); fail "predict printed a raw ESC"; }
mkdir -p "$WORK/only" && cp "$WORK/w/model.safetensors" "$WORK/w/classes.txt" "$WORK/only/"
expect_ok predict_classes_only "${SV[@]}" predict --weights "$WORK/only/model.safetensors" --heads 3 --topk 3 \
    --threads 1 "$img"
grep -q "class names from .*only/classes.txt" "$WORK/predict_classes_only.log" &&
    grep -q "class_002 (1)" "$WORK/predict_classes_only.log" ||
    { FAIL_LOGS=("$WORK/predict_classes_only.log"); fail "predict without config.json did not use classes.txt"; }
echo "ok predict_names: names from config.json and from a lone classes.txt, escaped"

# ---- 4. messages ---------------------------------------------------------------------------------
echo "not a jpeg" >"$WORK/bad.jpg"
expect_fail predict_bad_image "bad.jpg: not a JPEG" \
    "${SV[@]}" predict --weights "$WORK/w/model.safetensors" --threads 1 "$WORK/bad.jpg"
[ "$(grep -o 'bad.jpg: ' "$WORK/predict_bad_image.log" | wc -l)" -eq 1 ] || fail "predict's message is garbled"
# st_tool.py SRC DST OP...: rewrite a safetensors file (F32 tensors of an export)
cat >"$WORK/st_tool.py" <<'PYEOF'
import json, struct, sys
src, dst, op = sys.argv[1], sys.argv[2], sys.argv[3]
b = open(src, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
meta = h.pop("__metadata__", None)
items = [[k, v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]] for k, v in
         sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0])]
if op == "set":       # set TENSOR INDEX VALUE (F32)
    for it in items:
        if it[0] == sys.argv[4]:
            i = int(sys.argv[5]); it[3] = it[3][:4 * i] + struct.pack("<f", float(sys.argv[6])) + it[3][4 * i + 4:]
elif op == "extra":   # extra NAME (Python escapes): a copy of norm.bias under that name
    items.append([sys.argv[4].encode().decode("unicode_escape"), "F32", [36], [x for x in items if x[0] == "norm.bias"][0][3]])
elif op == "drop":    # drop NAME...: remove tensors
    items = [x for x in items if x[0] not in sys.argv[4:]]
elif op == "rows":    # rows K NAME...: F32 tensors cut or repeated to K rows (first dimension)
    k = int(sys.argv[4])
    for it in items:
        if it[0] in sys.argv[5:]:
            row = len(it[3]) // it[2][0]
            it[2] = [k] + it[2][1:]; it[3] = (it[3] * k)[:k * row]
elif op == "posgrid": # posgrid G: pos_embed (1, 1 + G*G, D) BF16 whose data is a hole in a sparse file
    g = int(sys.argv[4]); pe = [x for x in items if x[0] == "pos_embed"][0]
    items = [x for x in items if x[0] != "pos_embed"] + [["pos_embed", "BF16", [1, 1 + g * g, pe[2][2]], (1 + g * g) * pe[2][2] * 2]]
hdr, off = ({"__metadata__": meta} if meta else {}), 0
for k, dt, s, d in items:
    size = d if isinstance(d, int) else len(d); hdr[k] = {"dtype": dt, "shape": s, "data_offsets": [off, off + size]}; off += size
hb = json.dumps(hdr).encode(); hb += b" " * (-len(hb) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(hb)) + hb)
    for _, _, _, d in items:
        if isinstance(d, int): f.seek(d, 1)
        else: f.write(d)
    f.truncate()
PYEOF
ST() { timeout 120 "$PY" "$WORK/st_tool.py" "$@" || fail "st_tool $*"; }
mkdir -p "$WORK/x" "$WORK/nan" "$WORK/inf" "$WORK/hostile"
expect_ok export_f32 "${SV[@]}" export "$WORK/run" "$WORK/w/model.safetensors"
ST "$WORK/w/model.safetensors" "$WORK/x/model.safetensors" extra 'evil\x1b[2J\nFAKE: all good'
for c in import eval; do
    if [ $c = import ]; then cmd=("${SV[@]}" import "$WORK/x/model.safetensors" $MODEL)
    else cmd=("${SV[@]}" eval --weights "$WORK/x/model.safetensors" --heads 3 --data "$WORK/set/test" --threads 1 --out "$WORK/x/e"); fi
    expect_fail escaped_tensor_name_$c 'tensor evil\\x1B\[2J\\nFAKE: all good is not' "${cmd[@]}"
    grep -q "$ESC" "$WORK/escaped_tensor_name_$c.log" && fail "$c printed a raw ESC from a tensor name"
    grep -q '^FAKE' "$WORK/escaped_tensor_name_$c.log" && fail "$c let a newline in a tensor name start a line"
done

# ---- 5. inconsistencies ---------------------------------------------------------------------------
cp -r "$WORK/run" "$WORK/run_h"
S=$(tree_sum "$WORK/run_h/checkpoints")
expect_fail resume_heads "the checkpoint's model has heads 3 but this run has --heads 6" \
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train ${ARGS/--heads 3/--heads 6} --steps 4 --data "$WORK/set/train" \
    --out "$WORK/run_h" --resume auto
[ "$(tree_sum "$WORK/run_h/checkpoints")" = "$S" ] || fail "a resume with another --heads changed the checkpoints"
expect_fail eval_ckpt_heads "has heads 3 but this run has --heads 6" \
    "${SV[@]}" eval --ckpt "$WORK/run" --heads 6 --data "$WORK/set/test" --threads 1 --out "$WORK/e0"
cp -r "$WORK/set/test" "$WORK/other" && mv "$WORK/other/class_002" "$WORK/other/class_001"
expect_ok eval_same_names "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/set/test" --threads 1 --out "$WORK/e1"
grep -q "$ESC" "$WORK/eval_same_names.log" && fail "eval printed a raw ESC from a class name"
expect_fail eval_names_ckpt 'class 1 of the data is "class_001" but the model.s class 1 is "class_002"' \
    "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/other" --threads 1 --out "$WORK/e2"
expect_fail eval_names_weights 'class 1 of the data is "class_001" but the model.s class 1 is' \
    "${SV[@]}" eval --weights "$WORK/w/model.safetensors" --data "$WORK/other" --threads 1 --out "$WORK/e3"
expect_ok eval_names_ignored "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/other" --threads 1 --out "$WORK/e4" \
    --ignore-class-names
[ -f "$WORK/e4/eval.json" ] || fail "--ignore-class-names did not evaluate"
RUN_SUM=$(tree_sum "$WORK/run/checkpoints")
expect_fail eval_out_in_ckpt "eval output .*eval.json is inside the checkpoint" \
    "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/set/test" --threads 1 --out "$WORK/run/checkpoints/step_00000002"
[ "$(tree_sum "$WORK/run/checkpoints")" = "$RUN_SUM" ] || fail "eval wrote into the checkpoint"
# --out the checkpoint root itself (CKPT the root or the run directory): refused, the root unchanged
RUN_LS=$(ls -A "$WORK/run/checkpoints")
for ck in "$WORK/run/checkpoints" "$WORK/run"; do
    expect_fail eval_out_in_root "eval output .*checkpoints/eval.json is inside the checkpoint root .*run/checkpoints that this command reads .*choose a path outside it" \
        "${SV[@]}" eval --ckpt "$ck" --data "$WORK/set/test" --threads 1 --out "$WORK/run/checkpoints"
    [ "$(ls -A "$WORK/run/checkpoints")" = "$RUN_LS" ] ||
        fail "eval --ckpt $ck wrote into the checkpoint root: $(ls -A "$WORK/run/checkpoints" | tr '\n' ' ')"
done
[ "$(tree_sum "$WORK/run/checkpoints")" = "$RUN_SUM" ] || fail "eval changed the checkpoint root"
mkdir -p "$WORK/e5" && mkfifo "$WORK/e5/eval.json"
expect_fail eval_out_fifo "eval.json is a FIFO: refusing to replace it" \
    "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/set/test" --threads 1 --out "$WORK/e5"
[ -p "$WORK/e5/eval.json" ] || fail "eval replaced a FIFO"
# a user's eval.json / confusion.csv in --out (eval's default --out is the working directory) are
# not replaced; an earlier evaluation's are (e4 holds one)
mkdir -p "$WORK/e8" "$WORK/e9"
echo '{"my": "notes"}' >"$WORK/e8/eval.json" && echo "a,b" >"$WORK/e9/confusion.csv"
S=$(tree_sum "$WORK/e8" "$WORK/e9")
expect_fail eval_out_user_json "e8/eval.json exists and is not an earlier evaluation's eval.json" \
    "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/set/test" --threads 1 --ignore-class-names --out "$WORK/e8"
expect_fail eval_out_user_csv "e9/confusion.csv exists and is not an earlier evaluation's confusion.csv" \
    "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/set/test" --threads 1 --ignore-class-names --out "$WORK/e9"
[ "$(tree_sum "$WORK/e8" "$WORK/e9")" = "$S" ] || fail "eval replaced a user's eval.json or confusion.csv"
expect_ok eval_out_again "${SV[@]}" eval --ckpt "$WORK/run" --data "$WORK/set/test" --threads 1 \
    --ignore-class-names --out "$WORK/e4"
# non-finite weights: NaN in blocks.0.attn.qkv.weight[17]; -Inf in pos_embed[40] (resampled at --img 32)
ST "$WORK/w/model.safetensors" "$WORK/nan/model.safetensors" set blocks.0.attn.qkv.weight 17 nan
ST "$WORK/w/model.safetensors" "$WORK/inf/model.safetensors" set pos_embed 40 -inf
NF="tensor blocks.0.attn.qkv.weight holds a non-finite value: element 17 \[0, 17\] is NaN"
expect_fail nan_import "$NF" "${SV[@]}" import "$WORK/nan/model.safetensors" $MODEL
expect_fail nan_init_from "$NF" timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $ARGS --steps 2 --data synthetic \
    --synth-samples 16 --init-from "$WORK/nan/model.safetensors" --out "$WORK/nanrun"
[ ! -e "$WORK/nanrun/checkpoints/latest" ] || fail "training from NaN weights saved a checkpoint"
expect_fail nan_eval "$NF" "${SV[@]}" eval --weights "$WORK/nan/model.safetensors" --heads 3 --data "$WORK/set/test" \
    --threads 1 --out "$WORK/e6"
expect_fail inf_resampled "tensor pos_embed holds a non-finite value: element 40 \[0, 1, 4\] is -Inf" \
    "${SV[@]}" train ${ARGS/--img 28/--img 32} --steps 0 --data synthetic --synth-samples 8 \
    --init-from "$WORK/inf/model.safetensors"
# a refused --init-from file leaves --out as it was (it is checked before the run directory is
# written), so the same command with a good file runs (it was refused as "an earlier run")
[ ! -e "$WORK/nanrun/metrics.jsonl" ] || fail "a refused --init-from file left a run behind in --out"
expect_ok init_from_retry timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $ARGS --steps 2 --data synthetic \
    --synth-samples 16 --init-from "$WORK/w/model.safetensors" --out "$WORK/nanrun"
# the classifier head is one unit: half a head (one tensor without the other) or a weight and a bias
# of different class counts is refused by import and --init-from (one was loaded, the other kept
# fresh, exit 0); a head of another class count, or none, leaves both fresh and the log says so
mkdir -p "$WORK/hw" "$WORK/hb" "$WORK/hr" "$WORK/h5" "$WORK/h0"
ST "$WORK/w/model.safetensors" "$WORK/hw/model.safetensors" drop head.bias
ST "$WORK/w/model.safetensors" "$WORK/hb/model.safetensors" drop head.weight
ST "$WORK/w/model.safetensors" "$WORK/hr/model.safetensors" rows 5 head.bias
ST "$WORK/w/model.safetensors" "$WORK/h5/model.safetensors" rows 5 head.weight head.bias
ST "$WORK/w/model.safetensors" "$WORK/h0/model.safetensors" drop head.weight head.bias
for c in "hw|the file holds head.weight but no head.bias" "hb|the file holds head.bias but no head.weight" \
    "hr|head.weight \(3, 36\) has 3 rows \(classes\) but head.bias \(5\) has 5"; do
    d=${c%%|*}
    expect_fail "head_${d}_import" "$d/model.safetensors: ${c#*|}" "${SV[@]}" import "$WORK/$d/model.safetensors" $MODEL
    expect_fail "head_${d}_init_from" "$d/model.safetensors: ${c#*|}" "${SV[@]}" train $ARGS --steps 0 --data synthetic \
        --synth-samples 8 --init-from "$WORK/$d/model.safetensors"
done
expect_fail head_hr_classes5 "head.weight \(3, 36\) has 3 rows \(classes\) but head.bias \(5\) has 5" \
    "${SV[@]}" import "$WORK/hr/model.safetensors" ${MODEL/--num-classes 3/--num-classes 5}
expect_ok head_other_classes "${SV[@]}" import "$WORK/h5/model.safetensors" $MODEL
grep -q "head.weight is (5, 36) in .* but (3, 36) here (--num-classes 3): the head is initialised fresh" \
    "$WORK/head_other_classes.log" && grep -q "30 of 32 tensors from the file" "$WORK/head_other_classes.log" ||
    { FAIL_LOGS=("$WORK/head_other_classes.log"); fail "a head of another class count was not left fresh"; }
expect_ok head_none "${SV[@]}" import "$WORK/h0/model.safetensors" $MODEL
grep -q "holds no head (head.weight, head.bias): the head (3 classes) is initialised fresh" "$WORK/head_none.log" ||
    { FAIL_LOGS=("$WORK/head_none.log"); fail "a file without a head: no line says the head is fresh"; }

# ---- 6. a pos_embed claiming a 65536 x 65536 grid (1 + 2^32 positions; sparse, ~300 GB apparent) ----
if timeout 120 "$PY" "$WORK/st_tool.py" "$WORK/w/model.safetensors" "$WORK/hostile/model.safetensors" posgrid 65536 \
    2>"$WORK/sparse.err"; then
    HP="pos_embed has shape \(1, 4294967297, 36\): its 65536x65536 patch grid is larger than"
    expect_fail hostile_init_from "$HP" "${SV[@]}" train $ARGS --steps 0 --data synthetic --synth-samples 8 \
        --init-from "$WORK/hostile/model.safetensors"
    expect_fail hostile_import "$HP" "${SV[@]}" import "$WORK/hostile/model.safetensors" $MODEL
    expect_fail hostile_eval "pos_embed shape \(1, 4294967297, 36\)|--img 262144 out of range" \
        "${SV[@]}" eval --weights "$WORK/hostile/model.safetensors" --heads 3 --data "$WORK/set/test" --threads 1 --out "$WORK/e7"
    rm -f "$WORK/hostile/model.safetensors"
else
    echo "note: this file system cannot hold a ~300 GB sparse file ($(tail -1 "$WORK/sparse.err")): section 6 skipped"
fi
# ---- 7. training and evaluation data that name their classes differently ----
expect_ok prep7 "${SV[@]}" prep synthetic --out "$WORK/set7" --classes 3 --per-class 2 --test-per-class 1 \
    --width 28 --height 28 --seed 3
mv "$WORK/set7/test/class_001" "$WORK/set7/test/zebra"
expect_fail val_names "--val-data $WORK/set7/test names class 1 'class_002' but --data $WORK/set7/train names it 'class_001'" \
    "${SV[@]}" train $ARGS --steps 1 --data "$WORK/set7/train" --val-data "$WORK/set7/test"
# ---- 8. a user's file at train's and bench's output paths, on 2 ranks ----
# refused by every rank before the first step (exit 2, no hang), the file kept byte for byte; an
# earlier parameter dump of the same model is replaced
mkdir -p "$WORK/o8"
cp "$WORK/w/model.safetensors" "$WORK/o8/user.bin"
echo "my notes" >"$WORK/o8/notes.txt"
S=$(tree_sum "$WORK/o8")
R2=(timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT")
NOT="exists and is not an earlier .*: refusing to replace it"
expect_fail user_save_params "--save-params $WORK/o8/user.bin $NOT" "${R2[@]}" train $ARGS --steps 1 \
    --data synthetic --synth-samples 8 --save-params "$WORK/o8/user.bin"
expect_fail user_train_trace "--trace $WORK/o8/notes.txt $NOT" "${R2[@]}" train $ARGS --steps 1 \
    --data synthetic --synth-samples 8 --trace "$WORK/o8/notes.txt"
expect_fail user_bench_json "--json $WORK/o8/user.bin $NOT" "${R2[@]}" bench $MODEL --batch-size 4 --steps 1 \
    --warmup 0 --calib-seconds 0 --threads 1 --json "$WORK/o8/user.bin"
[ "$(tree_sum "$WORK/o8")" = "$S" ] || fail "a user's file at a train or bench output path was changed"
expect_ok dump1 "${R2[@]}" train $ARGS --steps 1 --data synthetic --synth-samples 8 --save-params "$WORK/o8/p.bin"
expect_ok dump2 "${R2[@]}" train $ARGS --steps 1 --data synthetic --synth-samples 8 --save-params "$WORK/o8/p.bin"
# ---- 9. a --trace merge that stops part-way ----
# the disk full after 1000 bytes of the merged trace (SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES; nothing
# else these runs write goes through the injected writer): train, bench and plan fail naming the
# file, and the earlier trace stays byte for byte, with no temporary and no part left behind (the
# merge is staged in a temporary renamed into place; before, it truncated the earlier trace first)
mkdir -p "$WORK/t9"
PLAN=(plan --simulate --device cpu $MODEL --batch-size 4 --world 2 --strategy full_shard --param-dtype fp32)
BENCH=(bench $MODEL --batch-size 4 --steps 1 --warmup 0 --calib-seconds 0 --threads 1)
for cmd in train bench plan; do
    case $cmd in
    train) c=(train $ARGS --steps 2 --data synthetic --synth-samples 8) ;;
    bench) c=("${BENCH[@]}") ;;
    plan) c=("${PLAN[@]}") ;;
    esac
    expect_ok "trace_$cmd" "${SV[@]}" "${c[@]}" --trace "$WORK/t9/$cmd.json"
    S=$(tree_sum "$WORK/t9")
    expect_fail "trace_${cmd}_disk_full" "$WORK/t9/$cmd.json.tmp-.*: No space left on device" \
        env SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES=1000 "${SV[@]}" "${c[@]}" --trace "$WORK/t9/$cmd.json"
    [ "$(tree_sum "$WORK/t9")" = "$S" ] || fail "$cmd --trace: a failed merge changed the earlier trace or left a file"
    expect_ok "trace_${cmd}_again" "${SV[@]}" "${c[@]}" --trace "$WORK/t9/$cmd.json"
    no_tmp_left "$WORK/t9" "trace_${cmd}_again"
done
all_passed hostile_outputs
