#!/usr/bin/env bash
# An earlier evaluation's eval.json and confusion.csv in eval's --out (docs/evaluation.md
# "Outputs") never outlive a later evaluation into the same directory that fails: once every
# check has passed, just before the evaluation starts, eval removes them (an info line names
# each), so a failing run (here: an unreadable image in the data) leaves no result that reads as
# its own, at world 1 and 2. Files eval did not write are never removed: a user's notes in --out
# stay byte-identical, and a user's eval.json there is refused before anything happens (as
# before). A run refused at its argument or input checks (a --data that does not exist, on every
# rank or on one rank only) removes nothing. A successful evaluation writes its outputs again.
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
mkdir -p "$WORK/w"
"$EVAL_TOOL" write init "$WORK/w/model.safetensors" 32 2 2 32 8 3 4 0.25 2.0 -1.5 0.75
W=(--weights "$WORK/w/model.safetensors")
# the test set plus one truncated JPEG: eval fails on it once the evaluation has started
cp -r "$WORK/data/test" "$WORK/bad"
good=$(ls "$WORK/bad/class_001"/*.jpg | head -1)
head -c 100 "$good" >"$WORK/bad/class_001/trunc.jpg"

for n in 1 2; do
    O=$WORK/out$n
    run "$WORK/ok$n.log" "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$WORK/data/test" --batch-size 6 --out "$O" $COMMON
    [ -s "$O/eval.json" ] && [ -s "$O/confusion.csv" ] || fail "world $n: the first evaluation wrote no outputs"
    echo "the user's notes" >"$O/notes.txt"
    cp "$O/notes.txt" "$WORK/notes.copy"
    # refused at its input checks: nothing removed
    expect_fail nodata$n 90 "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$WORK/missing" --batch-size 6 --out "$O" $COMMON
    [ -s "$O/eval.json" ] && [ -s "$O/confusion.csv" ] ||
        fail "world $n: an eval refused at its input checks removed the earlier outputs"
    # fails during the evaluation: the earlier outputs are gone, the user's file is not
    expect_fail bad$n 90 "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$WORK/bad" --batch-size 6 --out "$O" $COMMON
    error_says bad$n "unreadable"
    [ ! -e "$O/eval.json" ] && [ ! -e "$O/confusion.csv" ] ||
        fail "world $n: a failed evaluation left the earlier eval.json / confusion.csv in --out"
    for f in eval.json confusion.csv; do
        grep -q "removed the earlier evaluation's $O/$f" "$WORK/bad$n.log" || fail "world $n: no info line for $f"
    done
    cmp -s "$O/notes.txt" "$WORK/notes.copy" || fail "world $n: the user's notes.txt changed"
    [ "$(ls "$O")" = notes.txt ] || fail "world $n: --out holds $(ls "$O" | tr '\n' ' ')"
    # a successful evaluation writes them again
    run "$WORK/again$n.log" "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$WORK/data/test" --batch-size 6 --out "$O" $COMMON
    [ -s "$O/eval.json" ] && [ -s "$O/confusion.csv" ] || fail "world $n: no outputs after a successful evaluation"
    echo "ok: world $n"
done
cmp -s "$WORK/out1/confusion.csv" "$WORK/out2/confusion.csv" || fail "world 2's confusion.csv differs from world 1's"
# the data on one rank's storage only (node-local disks; simulated by the two ranks in different
# working directories, mpiexec -wdir, with a relative --data that exists beside rank 0 only): the
# ranks agree before removing anything, so both stop promptly and the earlier outputs stay
mkdir -p "$WORK/n0" "$WORK/n1"
ln -s "$WORK/data/test" "$WORK/n0/local"
O=$WORK/out2
SVABS=$(cd "$(dirname "$SV")" && pwd)/$(basename "$SV")
expect_fail node_local 40 "$MPIEXEC" -n 1 -wdir "$WORK/n0" "$SVABS" eval "${W[@]}" --data local --batch-size 6 --out "$O" \
    $COMMON : -n 1 -wdir "$WORK/n1" "$SVABS" eval "${W[@]}" --data local --batch-size 6 --out "$O" $COMMON
[ -s "$O/eval.json" ] && [ -s "$O/confusion.csv" ] ||
    fail "a check failed on rank 1 only and rank 0 removed the earlier outputs"
! grep -q "removed the earlier evaluation" "$WORK/node_local.log" || fail "node_local: a rank removed outputs"
# a user's eval.json in --out is never removed: refused before the evaluation, byte-identical
mkdir -p "$WORK/user"
echo '{"my": "notes"}' >"$WORK/user/eval.json"
cp "$WORK/user/eval.json" "$WORK/user.copy"
expect_fail user 90 "$SV" eval "${W[@]}" --data "$WORK/bad" --batch-size 6 --out "$WORK/user" $COMMON
error_says user "is not an earlier evaluation's eval.json"
cmp -s "$WORK/user/eval.json" "$WORK/user.copy" || fail "a user's eval.json changed"
echo "eval_earlier_outputs: ok"
