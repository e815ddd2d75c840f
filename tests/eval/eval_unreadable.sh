#!/usr/bin/env bash
# Unreadable images in evaluation data (docs/evaluation.md "Unreadable images"): evaluation never
# substitutes another sample for one. The ImageFolder test set of lib.sh (4 classes x 7 images)
# gets five unreadable extras: an empty file and a PNG renamed .jpg in class 0, a truncated JPEG in
# class 1, none in class 2, and in class 3 a JPEG whose SOF says 65535x65535 and one whose SOF
# says 20000x20000 (over the decompression-bomb pixel limit). The weights have head.weight = 0,
# so every prediction is the class with the largest bias and the per-class counts follow from the
# labels alone (a substituted sample would move a count to the substitute's class).
# - eval (world 1 and 2) fails by default: exit 1, an error naming every bad file, no eval.json /
#   confusion.csv, well within the timeout (no rank left waiting); a single bad file that only
#   rank 1 reads is reported by rank 0 too (the ranks agree on it);
# - eval --skip-unreadable (world 1 and 2): exit 0, eval.json "skipped" = 5 and "skipped_files"
#   the five names, per-class totals = the readable files per class, every count equal to the
#   clean set's eval; over a folder where no image is readable it fails (exit 1, no eval.json):
#   zero samples is no result;
# - an ImageFolder dangling link and FIFO named .jpg fail eval and train naming the entry; with
#   --skip-unreadable (world 1 and 2) they are left out, eval.json "skipped" = 2 and "skipped_files"
#   names them; a JPEG 40 directories deep is evaluated;
# - eval of the clean set still works; predict of an unreadable file fails naming it; training's
#   periodic evaluation (--val-data) follows the same rule.
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
BIAS="0.25 2.0 -1.5 0.75"
mkdir -p "$WORK/w"
"$EVAL_TOOL" write init "$WORK/w/model.safetensors" 32 2 2 32 8 3 4 $BIAS
W=(--weights "$WORK/w/model.safetensors")

# the clean set evaluates (reference for the counts below)
for n in 1 2; do
    run "$WORK/clean$n.log" "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$WORK/data/test" --batch-size 6 \
        --out "$WORK/clean$n" $COMMON
    test -s "$WORK/clean$n/eval.json" || fail "clean eval at world $n wrote no eval.json"
done

# the bad set: the clean one plus five unreadable files
cp -r "$WORK/data/test" "$WORK/bad"
T=$WORK/bad
good=$(ls "$T/class_001"/*.jpg | head -1)
: >"$T/class_000/zero.jpg"
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x08\0\0\0\x08\x08\x02\0\0\0' >"$T/class_000/zz_png.jpg"
head -c 100 "$good" >"$T/class_001/trunc.jpg"
"$PY" - "$good" "$T/class_003/huge.jpg" "$T/class_003/bomb.jpg" <<'PYEOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
i = next(i for i in range(len(d) - 1) if d[i] == 0xFF and d[i + 1] in (0xC0, 0xC1, 0xC2))
for path, side in ((sys.argv[2], 65535), (sys.argv[3], 20000)):
    b = bytearray(d)
    b[i + 5:i + 9] = struct.pack(">HH", side, side)  # SOF: height, width
    open(path, "wb").write(bytes(b))
PYEOF
BAD="class_000/zero.jpg class_000/zz_png.jpg class_001/trunc.jpg class_003/huge.jpg class_003/bomb.jpg"
test "$(find "$T" -name '*.jpg' | wc -l)" -eq 33 || fail "bad set has $(find "$T" -name '*.jpg' | wc -l) files, not 33"

# names_in NAME FILE...: the log's error line names every FILE
names_in() {
    local name=$1 err
    shift
    err=$(grep 'error:' "$WORK/$name.log" | head -1)
    [ -n "$err" ] || fail "$name: no error line"
    for f in "$@"; do
        [[ "$err" == *"$f"* ]] || fail "$name: the error does not name $f: $err"
    done
    [[ "$err" == *unreadable* ]] || fail "$name: the error does not say unreadable: $err"
}

# 1. default: fail, every rank, naming the files, no outputs
for n in 1 2; do
    expect_fail strict$n 90 "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$T" --batch-size 6 --out "$WORK/strict$n" $COMMON
    names_in strict$n $BAD
    grep -q -- '--skip-unreadable' "$WORK/strict$n.log" || fail "strict$n: the error does not name --skip-unreadable"
    [ ! -e "$WORK/strict$n/eval.json" ] && [ ! -e "$WORK/strict$n/confusion.csv" ] ||
        fail "strict$n: eval wrote outputs despite unreadable images"
done

# 2. one bad file that only rank 1 reads (samples 3..5 of the first global batch of 6 at 2 ranks:
#    class_000's 4th file in name order): rank 0 reports it too, nobody hangs
cp -r "$WORK/data/test" "$WORK/one"
: >"$WORK/one/class_000/$(ls "$WORK/one/class_000" | sed -n 3p | sed 's/\.jpg$/a.jpg/')"
one=$(cd "$WORK/one" && ls class_000/*a.jpg)
[ "$(cd "$WORK/one" && ls class_000 | sed -n 4p)" = "${one#class_000/}" ] || fail "test set-up: $one is not 4th"
rlog() { # run one rank with its output in $WORK/one.rRANK.log
    local r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-x}}}
    exec "$@" >"$WORK/one.r$r.log" 2>&1
}
export -f rlog
export WORK
expect_fail one 90 "$MPIEXEC" -n 2 bash -c 'rlog "$@"' rlog "$SV" eval "${W[@]}" --data "$WORK/one" --batch-size 6 \
    --out "$WORK/one_out" $COMMON
if [ -f "$WORK/one.r0.log" ] && [ -f "$WORK/one.r1.log" ]; then
    grep -q "WARN data: unreadable image .*$one" "$WORK/one.r1.log" || fail "one: rank 1 did not read $one"
    grep -q "unreadable image .*$one" "$WORK/one.r0.log" && ! grep -q "WARN data: unreadable" "$WORK/one.r0.log" ||
        fail "one: rank 0 did not report rank 1's unreadable $one: $(grep error: "$WORK/one.r0.log")"
    echo "ok: rank 1's unreadable file is rank 0's error too"
else
    fail "one: no per-rank logs (rank variable of this MPI not known: ls $(ls "$WORK" | grep one))"
fi
[ ! -e "$WORK/one_out/eval.json" ] || fail "one: eval.json written"

# 3. --skip-unreadable: the readable images only, recorded
for n in 1 2; do
    run "$WORK/skip$n.log" "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$T" --batch-size 6 --out "$WORK/skip$n" \
        --skip-unreadable $COMMON
    grep -q "left out 5 unreadable images" "$WORK/skip$n.log" || fail "skip$n: the log does not say 5 were left out"
done
"$PY" - "$WORK" $BAD <<'PYEOF' || fail "--skip-unreadable counts"
import csv, json, os, sys
w, bad = sys.argv[1], sys.argv[2:]
T = f"{w}/bad"
classes = sorted(os.listdir(T))
files = {c: sorted(f for f in os.listdir(f"{T}/{c}") if f.endswith(".jpg")) for c in classes}
readable = [len([f for f in files[c] if f"{c}/{f}" not in bad]) for c in classes]
assert readable == [7, 7, 7, 7] and [len(files[c]) for c in classes] == [9, 8, 7, 9], (readable, files)
clean = json.load(open(f"{w}/clean1/eval.json"))
for n in (1, 2):
    e = json.load(open(f"{w}/skip{n}/eval.json"))
    assert e["skipped"] == len(bad), (n, e["skipped"])
    got = sorted(os.path.relpath(p, T) for p in e["skipped_files"])
    assert got == sorted(bad), (n, got)
    assert e["num_samples"] == sum(readable), (n, e["num_samples"])
    assert [pc["total"] for pc in e["per_class"]] == readable, (n, e["per_class"])
    for k in ("num_samples", "top1_correct", "top5_correct", "top1", "top5", "per_class"):
        assert e[k] == clean[k], (n, k, e[k], clean[k])
    assert abs(e["loss"] - clean["loss"]) <= 1e-6 * abs(clean["loss"]), (n, e["loss"], clean["loss"])
    rows = list(csv.reader(open(f"{w}/skip{n}/confusion.csv")))[1:]
    assert [sum(int(x) for x in r[1:]) for r in rows] == readable, (n, rows)
for n in (1, 2):
    assert json.load(open(f"{w}/clean{n}/eval.json"))["skipped"] == 0
print(f"ok: --skip-unreadable at world 1 and 2: {sum(readable)} samples, per-class totals {readable} "
      f"(files {[len(files[c]) for c in classes]}), skipped {len(bad)}, counts equal the clean set's")
PYEOF

# the report of a run evaluated that way says what was left out, naming the files (it showed the
# counted samples only)
run "$WORK/rrun.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 --warmup 1 \
    --out "$WORK/rrun"
run "$WORK/rclean.log" "$SV" report "$WORK/rrun" --out "$WORK/rclean.html"
grep -q "Left out" "$WORK/rclean.html" && fail "report: a run without left-out images shows some"
run "$WORK/reval.log" "$SV" eval --ckpt "$WORK/rrun" --data "$T" --batch-size 6 --skip-unreadable --out "$WORK/rrun" \
    $COMMON
run "$WORK/rreport.log" "$SV" report "$WORK/rrun" --out "$WORK/rrun.html"
grep -q "<b>Left out:</b> 5 unreadable images not counted" "$WORK/rrun.html" ||
    fail "report: the 5 images eval left out are not shown"
for b in $BAD; do grep -qF "$(basename "$b")" "$WORK/rrun.html" || fail "report: $b not named"; done
echo "ok: the report shows the left-out images"
# a left-out file whose name is not UTF-8 (a name in another encoding): eval.json stays valid JSON
# (the byte written as the text \xFF; it was written raw, and json.load and report refused the file)
cp -r "$WORK/data/test" "$WORK/u8"
head -c 100 "$good" >"$WORK/u8/class_001/bad$(printf '\xff').jpg"
run "$WORK/u8run.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 --warmup 1 \
    --out "$WORK/u8run"
run "$WORK/u8eval.log" "$SV" eval --ckpt "$WORK/u8run" --data "$WORK/u8" --batch-size 6 --skip-unreadable \
    --out "$WORK/u8run" $COMMON
"$PY" -c 'import json,sys; e=json.load(open(sys.argv[1])); assert [f.split("/")[-1] for f in e["skipped_files"]] == ["bad\\xFF.jpg"], e["skipped_files"]' \
    "$WORK/u8run/eval.json" || fail "eval.json with a non-UTF-8 file name"
run "$WORK/u8report.log" "$SV" report "$WORK/u8run" --out "$WORK/u8run.html"
grep -qF 'bad\xFF.jpg' "$WORK/u8run.html" || fail "report: the non-UTF-8 name is not shown"
echo "ok: a non-UTF-8 file name: eval.json valid JSON, the report reads it"

# 3b. --skip-unreadable over data where nothing is readable: zero samples is an error (exit 1 on
# every rank, no eval.json), not a result of "0 samples" with top-1 nan
mkdir -p "$WORK/none/class_000" "$WORK/none/class_001"
cp "$T/class_000/zero.jpg" "$T/class_000/zz_png.jpg" "$WORK/none/class_000/"
cp "$T/class_001/trunc.jpg" "$WORK/none/class_001/"
for n in 1 2; do
    expect_fail none$n 90 "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$WORK/none" --batch-size 6 --out "$WORK/none$n" \
        --skip-unreadable $COMMON
    grep 'error:' "$WORK/none$n.log" | grep -q 'no sample evaluated (3 of the data.s 3 images unreadable' ||
        fail "none$n: the error does not say no sample was evaluated: $(grep error: "$WORK/none$n.log")"
    [ ! -e "$WORK/none$n/eval.json" ] && [ ! -e "$WORK/none$n/confusion.csv" ] || fail "none$n: outputs written"
done

# 3c. ImageFolder entries named .jpg that cannot be samples (a dangling link, a FIFO): opening the
# data fails naming the entry (eval and train alike); --skip-unreadable leaves them out and records
# them in eval.json. A JPEG 40 directories below its class is indexed (no depth limit).
cp -r "$WORK/data/test" "$WORK/odd"
O=$WORK/odd
ln -s /nonexistent "$O/class_002/dangling.jpg"
mkfifo "$O/class_002/pipe.jpg"
deep=$O/class_002/$(printf 'd/%.0s' $(seq 1 40))
mkdir -p "$deep" && cp "$good" "$deep/deep.jpg"
expect_fail odd_strict 90 "$SV" eval "${W[@]}" --data "$O" --batch-size 6 --out "$WORK/odd_strict" $COMMON
grep 'error:' "$WORK/odd_strict.log" | grep -Eq 'class_002/(dangling|pipe)\.jpg is a (dangling symbolic link|FIFO)' ||
    fail "odd_strict: the error does not name the entry: $(grep error: "$WORK/odd_strict.log")"
[ ! -e "$WORK/odd_strict/eval.json" ] || fail "odd_strict: eval.json written"
expect_fail odd_train 90 "$SV" train $MODEL $COMMON --data "$O" --steps 1 --batch-size 8 --warmup 1 \
    --out "$WORK/odd_run"
grep 'error:' "$WORK/odd_train.log" | grep -Eq 'class_002/(dangling|pipe)\.jpg' ||
    fail "odd_train: the error does not name the entry: $(grep error: "$WORK/odd_train.log")"
for n in 1 2; do
    run "$WORK/odd$n.log" "$MPIEXEC" -n $n "$SV" eval "${W[@]}" --data "$O" --batch-size 6 --out "$WORK/odd$n" \
        --skip-unreadable $COMMON
done
"$PY" - "$WORK" <<'PYEOF' || fail "--skip-unreadable with unusable entries"
import json, sys
w = sys.argv[1]
clean = json.load(open(f"{w}/clean1/eval.json"))
for n in (1, 2):
    e = json.load(open(f"{w}/odd{n}/eval.json"))
    assert e["skipped"] == 2, (n, e["skipped"])
    assert e["skipped_files"] == [f"{w}/odd/class_002/dangling.jpg", f"{w}/odd/class_002/pipe.jpg"], e["skipped_files"]
    assert e["num_samples"] == clean["num_samples"] + 1, (n, e["num_samples"])  # + the deep JPEG
    assert e["per_class"][2]["total"] == clean["per_class"][2]["total"] + 1, (n, e["per_class"])
print("ok: unusable entries fail eval and train naming them; --skip-unreadable records 2, the deep JPEG counts")
PYEOF

# 4. predict of an unreadable file fails naming it (world 1 and 2)
for n in 1 2; do
    expect_fail predict$n 90 "$MPIEXEC" -n $n "$SV" predict "${W[@]}" --threads 1 "$good" "$T/class_001/trunc.jpg"
    grep 'error:' "$WORK/predict$n.log" | grep -q 'class_001/trunc.jpg' || fail "predict$n: error does not name it"
done

# 5. training's periodic evaluation follows the rule (2 ranks)
expect_fail train 120 "$MPIEXEC" -n 2 "$SV" train $MODEL $COMMON --data "$WORK/data/train" --val-data "$T" \
    --eval-every 1 --steps 2 --batch-size 8 --warmup 1 --lr 1e-3 --out "$WORK/run"
names_in train $BAD
echo "eval_unreadable: all passed"
