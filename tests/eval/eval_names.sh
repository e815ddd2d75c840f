#!/usr/bin/env bash
# An evaluation computes the model it was given on data whose labels mean the model's classes, or
# fails saying why (docs/evaluation.md "Class names"):
#   - a data set with a class beyond the model's recorded label names (the preset head often has
#     more outputs than the data had classes) is refused, not scored against an unnamed output;
#   - without recorded names, the data is checked against the --classes list: a missing class
#     folder shifts every later label, which is refused;
#   - --heads other than config.json's num_heads, and --model naming another model than --ckpt's,
#     are refused (each computed another model than the one trained, silently);
#   - --crop-pct / --interp with --data synthetic (which has no resize or crop) are refused.
#   - a tar data set's own classes.txt is checked against --classes (not replaced by it), and one
#     that is a dangling link is an error;
#   - predict --ckpt takes classes.txt from the run directory only, never from above the path;
# --ignore-class-names still evaluates, with a warning.
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
# usage_error NAME TEXT CMD...: CMD refuses its flags (exit 2) before any work, saying TEXT
usage_error() {
    local name=$1 text=$2 rc=0
    shift 2
    timeout 120 "$@" >"$WORK/$name.log" 2>&1 </dev/null || rc=$?
    [ $rc -eq 2 ] || { tail -5 "$WORK/$name.log"; fail "$name: exit $rc, expected 2"; }
    grep -qF -- "$text" "$WORK/$name.log" || { cat "$WORK/$name.log"; fail "$name: no message '$text'"; }
    echo "ok: $name refused (exit 2)"
}
# a head of 6 classes trained on the 4 of the data: 4 recorded label names
run "$WORK/train.log" "$SV" train ${MODEL/--num-classes 4/--num-classes 6} $COMMON --data "$WORK/data/train" --steps 2 \
    --batch-size 6 --warmup 1 --out "$WORK/run"
run "$WORK/train4.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 --warmup 1 \
    --out "$WORK/run4"
mkdir -p "$WORK/w" "$WORK/bare"
run "$WORK/export.log" "$SV" export "$WORK/run4" "$WORK/w/model.safetensors"
cp "$WORK/w/model.safetensors" "$WORK/w/classes.txt" "$WORK/bare/" # no config.json: no recorded names
EV=(eval $COMMON --batch-size 6)

# a data class beyond the recorded names
mkdir -p "$WORK/extra"
cp -r "$WORK/data/test"/* "$WORK/extra/"
cp -r "$WORK/data/test/class_000" "$WORK/extra/class_004"
expect_fail extra 120 "$SV" "${EV[@]}" --ckpt "$WORK/run" --data "$WORK/extra" --out "$WORK/o1"
error_says extra 'the data has 5 classes but the model'"'"'s class names'
[ ! -e "$WORK/o1/eval.json" ] || fail "a refused evaluation wrote eval.json"

# a missing class folder against --classes (bare weights: no recorded names)
mkdir -p "$WORK/miss"
cp -r "$WORK/data/test/class_000" "$WORK/data/test/class_002" "$WORK/data/test/class_003" "$WORK/miss/"
expect_fail list 120 "$SV" "${EV[@]}" --weights "$WORK/bare/model.safetensors" --heads 2 --data "$WORK/miss" \
    --classes "$WORK/w/classes.txt" --out "$WORK/o2"
error_says list 'class 1 of the data is "class_002"'
run "$WORK/ignore.log" "$SV" "${EV[@]}" --weights "$WORK/bare/model.safetensors" --heads 2 --data "$WORK/miss" \
    --classes "$WORK/w/classes.txt" --ignore-class-names --out "$WORK/o3"
grep -q "WARN --ignore-class-names: evaluating anyway, although" "$WORK/ignore.log" ||
    fail "--ignore-class-names: no warning"
grep -q "WARN --ignore-class-names.*pass --ignore-class-names" "$WORK/ignore.log" &&
    fail "--ignore-class-names: the warning asks for the flag given"
[ -s "$WORK/o3/eval.json" ] || fail "--ignore-class-names: no eval.json"

# a tar data set with its own classes.txt: --classes is checked against it, not put in its place
# (the tar's names listed the other way round were replaced by the list and the labels scored as
# the list's classes, silently); a classes.txt there that is a dangling link is an error, not
# a silent fall back to numbered classes
"$SV" prep synthetic --out "$WORK/tdata" --format tar --classes 4 --per-class 2 --test-per-class 7 --width 40 \
    --height 32 >"$WORK/tprep.log" 2>&1 || { cat "$WORK/tprep.log"; fail "prep --format tar"; }
mkdir -p "$WORK/trev" "$WORK/tdang"
cp "$WORK/tdata/test-000000.tar" "$WORK/trev/"
cp "$WORK/tdata/test-000000.tar" "$WORK/tdang/"
tac "$WORK/tdata/classes.txt" >"$WORK/trev/classes.txt"
ln -s "$WORK/nonexistent/classes.txt" "$WORK/tdang/classes.txt"
expect_fail tarlist 120 "$SV" "${EV[@]}" --weights "$WORK/bare/model.safetensors" --heads 2 \
    --data "$WORK/trev/test-000000.tar" --classes "$WORK/w/classes.txt" --out "$WORK/o5"
error_says tarlist 'class 0 of the data is "class_003"'
run "$WORK/tarok.log" "$SV" "${EV[@]}" --weights "$WORK/bare/model.safetensors" --heads 2 \
    --data "$WORK/tdata/test-000000.tar" --classes "$WORK/w/classes.txt" --out "$WORK/o6"
expect_fail tardangling 120 "$SV" "${EV[@]}" --weights "$WORK/bare/model.safetensors" --heads 2 \
    --data "$WORK/tdang/test-000000.tar" --out "$WORK/o7"
error_says tardangling "$WORK/tdang/classes.txt"

# predict --ckpt: classes.txt is looked for in the run directory only, never above the path given
# (a checkpoint root from --ckpt-dir beside an unrelated classes.txt took that file's names)
run "$WORK/train_ck.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 --warmup 1 \
    --out "$WORK/runck" --ckpt-dir "$WORK/cks/runck" --ckpt-every 2
printf 'cat\ndog\nbird\nfish\n' >"$WORK/cks/classes.txt"
img=$(ls "$WORK"/data/test/class_000/*.jpg | head -1)
run "$WORK/predict_ck.log" "$SV" predict --ckpt "$WORK/cks/runck" --threads 1 "$img"
grep -q "class names: the 4 label names the model recorded" "$WORK/predict_ck.log" &&
    ! grep -qE "cat|dog|bird|fish" "$WORK/predict_ck.log" ||
    { cat "$WORK/predict_ck.log"; fail "predict --ckpt ROOT read a classes.txt above the checkpoint"; }
echo "ok: predict --ckpt does not look above the run"

# flags that would compute another model, or do nothing
usage_error heads "--heads 4: the config.json beside $WORK/w/model.safetensors records num_heads 2" \
    "$SV" "${EV[@]}" --weights "$WORK/w/model.safetensors" --heads 4 --data "$WORK/data/test" --out "$WORK/o2"
usage_error model "--model vit-s16: checkpoint" \
    "$SV" "${EV[@]}" --ckpt "$WORK/run" --model vit-s16 --data "$WORK/data/test" --out "$WORK/o2"
usage_error synth_crop "--crop-pct does not apply to --data synthetic" \
    "$SV" "${EV[@]}" --ckpt "$WORK/run" --data synthetic --crop-pct 0.5 --out "$WORK/o2"
run "$WORK/ok.log" "$SV" "${EV[@]}" --ckpt "$WORK/run" --data "$WORK/data/test" --out "$WORK/o4"
echo "eval_names: ok"
