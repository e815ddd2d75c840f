#!/usr/bin/env bash
# Every rank must index the same data set (docs/data.md "Every rank the same data"): each rank
# opens --data (train's --val-data too) on its own, so a relative path given from other working
# directories, or a node that does not see the files yet, would train or evaluate other samples on
# each rank. Each rank is given another ImageFolder here (mpiexec's MPMD form), which is what such
# ranks amount to:
# - eval over two copies of the test set, rank 1's with one extra image: refused on every rank,
#   naming both ranks' counts, exit 1, no eval.json / confusion.csv; one image renamed (the same
#   counts) is refused too;
# - train --data and train --val-data likewise: refused on every rank, no run outputs;
# - two identical copies at different paths evaluate and train (the root is no part of the data).
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
"$EVAL_TOOL" write init "$WORK/model.safetensors" 32 2 2 32 8 3 4 0.25 2.0 -1.5 0.75
W=(--weights "$WORK/model.safetensors")
D=$WORK/data
# copies of the test and training sets: identical, one image more, one image renamed (same counts)
cp -r "$D/test" "$WORK/same"
cp -r "$D/test" "$WORK/extra"
cp "$(ls "$D"/train/class_000/*.jpg | head -1)" "$WORK/extra/class_000/zz_extra.jpg"
cp -r "$D/test" "$WORK/renamed"
f=$(ls "$WORK"/renamed/class_001/*.jpg | head -1)
mv "$f" "$WORK/renamed/class_001/zz_renamed.jpg"
cp -r "$D/train" "$WORK/train_same"
cp -r "$D/train" "$WORK/train_extra"
cp "$(ls "$D"/test/class_002/*.jpg | head -1)" "$WORK/train_extra/class_002/zz_extra.jpg"
MSG="the ranks indexed different data sets"

# refused NAME TEXT: both ranks' error lines in $WORK/NAME.log ("shardvit CMD: [error: ]...") say TEXT
refused() {
    test "$(grep '^shardvit [a-z]*: ' "$WORK/$1.log" | grep -cF -- "$2")" -eq 2 || {
        grep '^shardvit [a-z]*: ' "$WORK/$1.log"
        fail "$1: not every rank's error says '$2'"
    }
}
# ev NAME DATA0 DATA1: mpiexec eval with rank 0 on DATA0 and rank 1 on DATA1, outputs in $WORK/NAME
ev() {
    mkdir -p "$WORK/$1"
    # shellcheck disable=SC2206 # $COMMON: a flag list, split on purpose
    local e=(eval "${W[@]}" --batch-size 6 $COMMON --out "$WORK/$1")
    EV=("$MPIEXEC" -n 1 "$SV" "${e[@]}" --data "$2" : -n 1 "$SV" "${e[@]}" --data "$3")
}

ev ev_extra "$D/test" "$WORK/extra"
expect_fail ev_extra 120 "${EV[@]}"
refused ev_extra "--data $D/test: $MSG (rank 0: 28 samples in 4 classes, rank 1: 29 samples in 4 classes)"
test ! -e "$WORK/ev_extra/eval.json" && test ! -e "$WORK/ev_extra/confusion.csv" ||
    fail "a refused evaluation wrote its outputs"
ev ev_renamed "$D/test" "$WORK/renamed"
expect_fail ev_renamed 120 "${EV[@]}"
refused ev_renamed "$MSG (rank 0: 28 samples in 4 classes, rank 1: 28 samples in 4 classes (other files or labels))"
test ! -e "$WORK/ev_renamed/eval.json" || fail "a refused evaluation wrote eval.json"
ev ev_same "$D/test" "$WORK/same"
run "$WORK/ev_same.log" "${EV[@]}"
test -s "$WORK/ev_same/eval.json" || fail "eval over two identical copies wrote no eval.json"
echo "ok: eval: ranks on different data refused on every rank; identical copies evaluate"

# tr NAME FLAGS0... -- FLAGS1...: mpiexec train, rank 0 given the data flags FLAGS0, rank 1 FLAGS1
tr() {
    local name=$1 f0=()
    shift
    while [ "$1" != -- ]; do
        f0+=("$1")
        shift
    done
    shift
    # shellcheck disable=SC2206 # $MODEL, $COMMON: flag lists, split on purpose
    local t=(train $MODEL $COMMON --steps 2 --batch-size 8 --out "$WORK/$name")
    TR=("$MPIEXEC" -n 1 "$SV" "${t[@]}" "${f0[@]}" : -n 1 "$SV" "${t[@]}" "$@")
}
# train_refused NAME: "${TR[@]}" exits non-zero (not a timeout) and writes no run outputs
train_refused() {
    local rc=0
    timeout 120 "${TR[@]}" >"$WORK/$1.log" 2>&1 </dev/null || rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || {
        tail -5 "$WORK/$1.log"
        fail "$1: exit $rc, expected a refusal"
    }
    for o in config.toml classes.txt metrics.jsonl checkpoints eval.json; do
        test ! -e "$WORK/$1/$o" || fail "$1: a refused run wrote $o"
    done
    echo "ok: $1 refused (exit $rc)"
}
tr tr_extra --data "$D/train" -- --data "$WORK/train_extra"
train_refused tr_extra
refused tr_extra "--data $D/train: $MSG (rank 0: 48 samples in 4 classes, rank 1: 49 samples in 4 classes)"
tr tr_val --data "$D/train" --val-data "$D/test" -- --data "$D/train" --val-data "$WORK/extra"
train_refused tr_val
refused tr_val "--val-data $D/test: $MSG (rank 0: 28 samples in 4 classes, rank 1: 29 samples in 4 classes)"
tr tr_same --data "$D/train" --val-data "$D/test" -- --data "$WORK/train_same" --val-data "$WORK/same"
run "$WORK/tr_same.log" "${TR[@]}"
test -s "$WORK/tr_same/eval.json" || fail "training over two identical copies wrote no eval.json"
echo "ok: train: --data and --val-data on different data refused on every rank; identical copies train"
echo "eval_same_data: all passed"
