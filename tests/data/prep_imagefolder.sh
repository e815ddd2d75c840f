#!/usr/bin/env bash
# `shardvit prep imagefolder --src SRC --out OUT` (data/prep.h sv_prep_imagefolder) on an
# ImageFolder tree made by `shardvit prep synthetic` (3 classes, 4 + 2 images of 96x64 each, its
# test/ renamed val/):
#   1. without --restart-mcus every file of SRC/train and SRC/val is in OUT/train and OUT/test,
#      byte for byte, in the class directory of the same name; classes.txt equals SRC's; the log
#      says which source directory became test; the marker records the dataset, the absolute SRC
#      and the options (no quality: nothing is encoded);
#   2. with --restart-mcus 2 every JPEG holds a DRI segment (FF DD 00 04, interval 2: a divisor
#      of the 6 MCUs of a row) and restart markers (the sources hold neither), and decodes to the
#      same pixels: training on it gives the loss sequence of training on the copy of (1), bit for
#      bit, and so does evaluating its test split (a control set encoded at another quality gives
#      another loss, so the comparison sees the pixels); with Pillow at hand
#      ($SHARDVIT_TEST_PYTHON, else /usr/bin/python3) every file is also compared pixel by pixel;
#   3. the same import again (also with SRC given as an absolute path) is "already prepared"
#      (exit 0, nothing rewritten); another --restart-mcus into that OUT is refused (exit 2);
#   4. a truncated JPEG (train, with and without --restart-mcus) or a text file named .jpg (val)
#      fails the import (exit 1) naming the file, and OUT is not left behind;
#   5. --format tar: the shards hold the files of (1) under the same indices with their labels,
#      and `shardvit train` reads them through a brace pattern;
#   6. SRC/test is the evaluation split when there is no SRC/val; with neither only train is
#      written; a training class missing from the evaluation split is an empty OUT/test/<class>;
#      an evaluation class that is not a training class fails (exit 1) naming it;
#   7. --limit 5 takes 2 + 2 + 1 images per split: the first of each class;
#   8. the synthetic-only flags and --quality are usage errors (exit 2), and so is a missing --src;
#   9. an --out inside --src is refused (exit 2), the source unchanged;
#  10. a progressive JPEG whose scans leave coefficient bits unsent (made by make_scan_jpeg) is
#      copied unchanged with a warning under --restart-mcus, the others rewritten;
#  11. --workers 3 writes the tree --workers 1 writes, byte for byte (marker included, so either
#      is "already prepared" for the other), plain and with --restart-mcus, folders and tar
#      shards, on a source of 3 x 40 + 3 x 9 images (more than the workers' window of 64); a
#      corrupt file in the middle of a class fails naming it (not a later corrupt one) and leaves
#      no OUT; --workers 0 and --workers for another dataset are usage errors (exit 2);
#  12. the marker records what the source held (per split its images, a fingerprint of the file
#      list and labels, one of the files' sizes and times); the same import run again after the
#      source changed is refused (exit 2) naming the change, OUT unchanged: an image added (folder
#      and tar output), one removed from val/, one renamed or moved to another class, one
#      rewritten or only touched, val/ renamed test/ or removed, val/ added to a source without
#      one, train/ gone; the source restored (timestamps kept) is "already prepared" again; a
#      source that no longer exists is "already prepared" with a warning, and so is a marker
#      without a source record (an earlier shardvit's), whatever the source holds.
# Every case runs under `timeout`; all cases run and each failure is reported.
# Usage: prep_imagefolder.sh SHARDVIT MAKE_SCAN_JPEG
set -uo pipefail
SHARDVIT=$1
MAKE_SCAN_JPEG=$2 # tests/data/make_scan_jpeg
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-prep-imagefolder.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export LC_ALL=C
RUN_LIMIT=60
source "$(dirname "$0")/case_lib.sh" # fail, begin, ok, run
# expect NAME WANT_RC PATTERN CMD...: CMD must exit WANT_RC with output matching PATTERN
expect() {
    local name=$1 want=$2 pat=$3
    shift 3
    run "$name" "$@"
    [ $RC -eq "$want" ] || { fail "$name: exit status $RC, want $want"; sed 's/^/    /' "$WORK/$name.log"; }
    grep -Eq -- "$pat" "$WORK/$name.log" || fail "$name: no message matching '$pat'"
}
# digests DIR: "<class dir> <sha256>" of every .jpg below DIR, sorted (file names left out)
digests() {
    (cd "$1" && find . -type f -name '*.jpg' | while read -r f; do
        echo "$(dirname "$f") $(sha256sum <"$f" | cut -c1-64)"
    done | sort)
}
# snap DIR: every entry's type, path, size, mtime and the content of its files
snap() { (cd "$1" && find . -printf '%y %p %s %T@\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }
# bytes FILE: its bytes as " ff d8 ff ... " (one space around each, so a match is byte-aligned)
bytes() { od -An -v -tx1 "$1" | tr -s ' \n' '  '; }
nfiles() { find "$1" -type f -name '*.jpg' 2>/dev/null | wc -l; }

cd "$WORK" || exit 1
run src "$SHARDVIT" prep synthetic --out SRC --classes 3 --per-class 4 --test-per-class 2 --width 96 --height 64
[ $RC -eq 0 ] && mv SRC/test SRC/val || { cat src.log; echo "FAIL: cannot make the source tree"; exit 1; }
rm SRC/.shardvit-prep SRC/classes.txt # a plain ImageFolder tree
ABS=$(cd SRC && pwd -P)

# ---- 1. bytes unchanged -----------------------------------------------------------------------
begin
expect a 0 "SRC/val: 6 images in 3 classes, written as A/test" "$SHARDVIT" prep imagefolder --src SRC --out A
[ "$(digests A/train)" = "$(digests SRC/train)" ] || fail "a: A/train does not hold SRC/train's files byte for byte"
[ "$(digests A/test)" = "$(digests SRC/val)" ] || fail "a: A/test does not hold SRC/val's files byte for byte"
[ "$(nfiles A/train) $(nfiles A/test)" = "12 6" ] || fail "a: $(nfiles A/train) + $(nfiles A/test) files, want 12 + 6"
[ "$(cat A/classes.txt 2>/dev/null)" = $'class_000\nclass_001\nclass_002' ] || fail "a: classes.txt is not SRC's classes"
for line in "dataset imagefolder" "src $ABS" "format folder" "limit 0" "train 12" "test 6"; do
    grep -qxF "$line" A/.shardvit-prep 2>/dev/null || fail "a: the marker has no line '$line'"
done
grep -q "^quality\|^restart-mcus" A/.shardvit-prep 2>/dev/null && fail "a: the marker records quality / restart-mcus"
ok "1: the JPEG bytes are copied unchanged into their classes, classes.txt and marker written"

# ---- 2. restart markers, same pixels --------------------------------------------------------
begin
expect b 0 "restart markers added" "$SHARDVIT" prep imagefolder --src SRC --out B --restart-mcus 2
grep -qxF "restart-mcus 2" B/.shardvit-prep 2>/dev/null || fail "b: the marker does not record restart-mcus 2"
[ "$(cd A && find . -name '*.jpg' | sort)" = "$(cd B 2>/dev/null && find . -name '*.jpg' | sort)" ] ||
    fail "b: B does not hold the file names of A"
bytes SRC/train/class_000/"$(ls SRC/train/class_000 | head -1)" | grep -q " ff dd " &&
    fail "b: the source JPEGs already have a DRI segment (the check below would prove nothing)"
for f in $(cd B && find . -name '*.jpg' | sort); do
    b=$(bytes "B/$f")
    grep -q " ff dd 00 04 00 02 " <<<"$b" || fail "b: B/$f has no DRI segment with interval 2"
    grep -Eq " ff d[0-7] " <<<"$b" || fail "b: B/$f has no restart marker"
    cmp -s "A/$f" "B/$f" && fail "b: B/$f is the unchanged source file"
done
TRAIN="--model vit-28 --img 28 --in-chans 3 --num-classes 3 --dim 36 --depth 2 --heads 3 --batch-size 4 --steps 3
 --log-every 1 --seed 5 --workers 1 --threads 1"
losses() { grep -o '"loss":[^,]*' "$1/metrics.jsonl" 2>/dev/null; }
run train_a "$SHARDVIT" train $TRAIN --data A/train --out runA
run train_b "$SHARDVIT" train $TRAIN --data B/train --out runB
"$SHARDVIT" prep synthetic --out Q --classes 3 --per-class 4 --test-per-class 2 --width 96 --height 64 \
    --quality 94 >q.log 2>&1 || fail "b: cannot make the control set"
run train_q "$SHARDVIT" train $TRAIN --data Q/train --out runQ
[ "$(losses runA | wc -l)" = 3 ] || { fail "b: training on A/train logged no 3 losses"; tail -5 train_a.log; }
[ "$(losses runA)" = "$(losses runB)" ] || fail "b: training on B/train gives other losses: $(losses runB | tr '\n' ' ')"
[ "$(losses runA)" != "$(losses runQ)" ] || fail "b: the control set gives the same losses (the check sees no pixels)"
evloss() { grep -o '"loss": *[^,]*' "$1/eval.json" 2>/dev/null; }
run eval_a "$SHARDVIT" eval --ckpt runA --data A/test --out evA --batch-size 6
run eval_b "$SHARDVIT" eval --ckpt runA --data B/test --out evB --batch-size 6
[ -n "$(evloss evA)" ] && [ "$(evloss evA)" = "$(evloss evB)" ] ||
    fail "b: evaluating B/test gives '$(evloss evB)', A/test '$(evloss evA)'"
PYT=${SHARDVIT_TEST_PYTHON:-/usr/bin/python3}
if "$PYT" -c 'import PIL.Image, numpy' 2>/dev/null; then
    (cd A && find . -name '*.jpg' | sort) >names.txt
    "$PYT" - names.txt <<'EOF' || fail "b: Pillow decodes other pixels from B's files"
import sys, numpy as np
from PIL import Image
for f in open(sys.argv[1]).read().split():
    a, b = (np.asarray(Image.open(d + "/" + f).convert("RGB")) for d in ("A", "B"))
    if a.shape != b.shape or (a != b).any():
        sys.exit("B/%s: pixels differ from the source" % f)
EOF
else
    echo "note: Pillow not importable by $PYT: the pixels are compared through training and evaluation only"
fi
ok "2: --restart-mcus 2 writes DRI + restart markers, the same pixels (train and eval losses bit for bit)"

# ---- 3. the same import again, another one ----------------------------------------------------
begin
before=$(snap B)
sleep 0.05 # a rewrite would show in the mtimes
expect again 0 "already prepared" "$SHARDVIT" prep imagefolder --src SRC --out B --restart-mcus 2
expect again_abs 0 "already prepared" "$SHARDVIT" prep imagefolder --src "$WORK/SRC/" --out B --restart-mcus 2
expect other 2 "B holds another prep .*'restart-mcus 2'.*'restart-mcus 3'" "$SHARDVIT" prep imagefolder --src SRC \
    --out B --restart-mcus 3
expect other0 2 "B holds another prep" "$SHARDVIT" prep imagefolder --src SRC --out B
[ "$(snap B)" = "$before" ] || fail "again: B was changed"
ok "3: the same import again is a no-op, another --restart-mcus is refused, B unchanged"

# ---- 4. a file that does not decode -------------------------------------------------------------
begin
cp -r SRC BAD
victim=BAD/train/class_001/$(ls BAD/train/class_001 | sed -n 2p)
head -c $(($(stat -c %s "$victim") / 2)) "${victim/BAD/SRC}" >"$victim"
expect trunc 1 "$victim: .*(Premature end|corrupt)" "$SHARDVIT" prep imagefolder --src BAD --out C
[ ! -e C ] || fail "trunc: C was left behind: $(find C | tr '\n' ' ')"
expect trunc_rst 1 "$victim" "$SHARDVIT" prep imagefolder --src BAD --out C --restart-mcus 2
[ ! -e C ] || fail "trunc_rst: C was left behind"
cp "${victim/BAD/SRC}" "$victim"
echo "this is not a JPEG" >BAD/val/class_002/zz.jpg
mkdir C
expect text 1 "BAD/val/class_002/zz.jpg" "$SHARDVIT" prep imagefolder --src BAD --out C
[ -d C ] && [ -z "$(ls -A C)" ] || fail "text: the empty C it was given is not empty again"
ok "4: a truncated JPEG or a text file fails the import naming it, nothing left behind"

# ---- 5. tar shards -----------------------------------------------------------------------------
begin
expect tar 0 "wrote 12 train \+ 6 test" "$SHARDVIT" prep imagefolder --src SRC --out T --format tar --shard-size 5
got=$(cd T 2>/dev/null && ls | tr '\n' ' ')
[ "$got" = "classes.txt test-000000.tar test-000001.tar train-000000.tar train-000001.tar train-000002.tar " ] ||
    fail "tar: files '$got'"
mkdir tx
for t in T/train-*.tar; do tar -xf "$t" -C tx || fail "tar: tar cannot read $t"; done
for f in $(cd A/train && find . -name '*.jpg'); do
    idx=$(basename "$f" .jpg) cls=$(dirname "${f#./}")
    cmp -s "A/train/$f" "tx/$idx.jpg" || fail "tar: member $idx.jpg is not A/train/$f"
    [ "$(cat "tx/$idx.cls" 2>/dev/null)" = "$(grep -nxF "$cls" A/classes.txt | cut -d: -f1 | awk '{print $1 - 1}')" ] ||
        fail "tar: $idx.cls is not the label of $cls"
done
expect tar_train 0 "done: final loss" "$SHARDVIT" train $TRAIN --data 'T/train-{000000..000002}.tar' --out runT
ok "5: --format tar holds the same files and labels, and training reads the shards"

# ---- 6. the evaluation split and its classes -----------------------------------------------------
begin
cp -r SRC S2 && mv S2/val S2/test
expect test_dir 0 "S2/test: 6 images in 3 classes, written as O2/test" "$SHARDVIT" prep imagefolder --src S2 --out O2
[ "$(digests O2/test)" = "$(digests S2/test)" ] || fail "test_dir: O2/test does not hold S2/test's files"
cp -r SRC S3 && rm -r S3/val
expect no_eval 0 "neither val/ nor test/" "$SHARDVIT" prep imagefolder --src S3 --out O3
[ ! -e O3/test ] && grep -qx "test 0" O3/.shardvit-prep 2>/dev/null || fail "no_eval: O3/test written, or no 'test 0'"
[ "$(nfiles O3/train)" = 12 ] || fail "no_eval: O3/train has $(nfiles O3/train) files"
cp -r SRC S4 && rm -r S4/val/class_002
expect missing 0 "S4/val: 4 images in 2 classes" "$SHARDVIT" prep imagefolder --src S4 --out O4
[ -d O4/test/class_002 ] && [ -z "$(ls -A O4/test/class_002)" ] || fail "missing: O4/test/class_002 is not empty"
[ "$(digests O4/test)" = "$(digests S4/val)" ] || fail "missing: O4/test does not hold S4/val's files"
[ "$(cat O4/classes.txt 2>/dev/null | wc -l)" = 3 ] || fail "missing: classes.txt has not the 3 training classes"
cp -r SRC S5 && mkdir S5/val/zebra && cp SRC/val/class_000/*.jpg S5/val/zebra/
expect unknown 1 "class 'zebra' of S5/val is not a class of S5/train" "$SHARDVIT" prep imagefolder --src S5 --out O5
[ ! -e O5 ] || fail "unknown: O5 was left behind"
ok "6: val/ or else test/ is the evaluation split, a missing class is empty, an unknown class fails"

# ---- 7. --limit ---------------------------------------------------------------------------------
begin
expect limit 0 "wrote 5 train \+ 5 test" "$SHARDVIT" prep imagefolder --src SRC --out L --limit 5
for split in train:train test:val; do
    o=${split%%:*} s=${split#*:} k=0
    for c in class_000 class_001 class_002; do
        want=$((k < 2 ? 2 : 1)) k=$((k + 1))
        got=$(ls "L/$o/$c" 2>/dev/null | wc -l)
        [ "$got" = $want ] || { fail "limit: L/$o/$c has $got files, want $want"; continue; }
        paste -d' ' <(ls "L/$o/$c") <(ls "SRC/$s/$c" | head -$want) | while read -r x y; do
            cmp -s "L/$o/$c/$x" "SRC/$s/$c/$y" || echo "L/$o/$c/$x"
        done | grep -q . && fail "limit: L/$o/$c does not hold the first $want files of SRC/$s/$c"
    done
done
ok "7: --limit spreads over the classes, taking the first images of each"

# ---- 8. usage errors -----------------------------------------------------------------------------
begin
for flag in "--width 96" "--height 64" "--classes 3" "--per-class 4" "--test-per-class 2" "--seed 1" "--quality 95"; do
    expect "usage${flag// /_}" 2 "${flag%% *} does not apply to imagefolder" \
        "$SHARDVIT" prep imagefolder --src SRC --out U $flag
done
expect nosrc 2 "--src: required for imagefolder" "$SHARDVIT" prep imagefolder --out U
expect unknown_ds 2 "synthetic\|imagefolder\)" "$SHARDVIT" prep imagefolders --src SRC --out U
[ ! -e U ] || fail "usage: U was created"
ok "8: synthetic-only flags, --quality and a missing --src are usage errors"

# ---- 9. an output inside the source tree ------------------------------------------------------------
begin
before=$(find SRC | sort)
expect inside_train 2 "lies inside --src" "$SHARDVIT" prep imagefolder --src SRC --out SRC/train/out
expect inside_src 2 "lies inside --src" "$SHARDVIT" prep imagefolder --src "$WORK/SRC" --out SRC/copy
[ "$(find SRC | sort)" = "$before" ] || fail "inside: the source tree changed"
ok "9: an output inside the source is refused before anything is written"

# ---- 10. a file that cannot be rewritten losslessly is copied as it is --------------------------
# (a progressive JPEG whose scans leave coefficient bits unsent: libjpeg smooths them in decoding)
begin
cp -r SRC SRCP
"$MAKE_SCAN_JPEG" SRCP/train/class_001/zz_partial.jpg 64 48 partial >/dev/null || fail "partial: make_scan_jpeg failed"
expect partial 0 "zz_partial.jpg: .*coefficient bits unsent.*copied without restart markers" \
    "$SHARDVIT" prep imagefolder --src SRCP --out P --restart-mcus 2
[ "$(nfiles P/train)" = 13 ] || fail "partial: $(nfiles P/train) train files, want 13"
want=$(sha256sum <SRCP/train/class_001/zz_partial.jpg)
found=0
for f in P/train/class_001/*.jpg; do [ "$(sha256sum <"$f")" = "$want" ] && found=1; done
[ $found = 1 ] || fail "partial: the file is not in P/train/class_001 byte for byte"
for f in P/train/class_000/*.jpg; do
    case "$(bytes "$f")" in *" ff dd 00 04 00 02 "*) ;; *) fail "partial: $f has no restart interval of 2" ;; esac
done
ok "10: a progressive file with unsent coefficient bits is copied unchanged, with a warning"

# ---- 11. several workers: the same output ------------------------------------------------------
begin
# tree DIR: every file below DIR (the marker too) with its digest, sorted
tree() { (cd "$1" 2>/dev/null && find . -type f | sort | xargs -r sha256sum); }
run srcw "$SHARDVIT" prep synthetic --out SRCW --classes 3 --per-class 40 --test-per-class 9 --width 64 --height 48
[ $RC -eq 0 ] && mv SRCW/test SRCW/val && rm SRCW/.shardvit-prep SRCW/classes.txt || fail "workers: no source tree"
for args in "" "--restart-mcus 2" "--format tar --shard-size 25" "--format tar --restart-mcus 3"; do
    tag=${args// /}
    expect "w1$tag" 0 "wrote 120 train \+ 27 test" "$SHARDVIT" prep imagefolder --src SRCW --out "W1$tag" --workers 1 $args
    expect "w3$tag" 0 "3 workers" "$SHARDVIT" prep imagefolder --src SRCW --out "W3$tag" --workers 3 $args
    [ -n "$(tree "W1$tag")" ] && [ "$(tree "W1$tag")" = "$(tree "W3$tag")" ] ||
        fail "workers: --workers 3 $args does not write the files of --workers 1"
done
expect w_again 0 "already prepared" "$SHARDVIT" prep imagefolder --src SRCW --out W1--restart-mcus2 --workers 2 \
    --restart-mcus 2
cp -r SRCW BADW
victim=BADW/train/class_001/$(ls BADW/train/class_001 | sed -n 17p)
later=BADW/train/class_001/$(ls BADW/train/class_001 | sed -n 19p)
head -c $(($(stat -c %s "$victim") / 2)) "${victim/BADW/SRCW}" >"$victim"
echo "this is not a JPEG" >"$later"
expect w_bad 1 "$victim: .*(Premature end|corrupt)" "$SHARDVIT" prep imagefolder --src BADW --out WB --workers 3
grep -qF "$later" "$WORK/w_bad.log" && fail "w_bad: the later corrupt file $later was reported"
[ ! -e WB ] || fail "w_bad: WB was left behind: $(find WB | tr '\n' ' ')"
expect w_bad_rst 1 "$victim" "$SHARDVIT" prep imagefolder --src BADW --out WB --workers 3 --restart-mcus 2 --format tar
[ ! -e WB ] || fail "w_bad_rst: WB was left behind"
expect w_zero 2 "--workers: invalid value '0'" "$SHARDVIT" prep imagefolder --src SRCW --out WU --workers 0
expect w_many 2 "--workers: invalid value '257'" "$SHARDVIT" prep imagefolder --src SRCW --out WU --workers 257
expect w_synth 2 "--workers applies to imagefolder only" "$SHARDVIT" prep synthetic --out WU --workers 2
[ ! -e WU ] || fail "workers: WU was created by a usage error"
ok "11: --workers 3 writes the bytes of --workers 1, fails on the first corrupt file in order; bad --workers refused"

# ---- 12. the source changed since the import -------------------------------------------------------
begin
cp -a SRC SRCK # the source as imported (cp -a keeps the files' times)
restore() { rm -rf SRCC && cp -a SRCK SRCC; }
restore
expect c_new 0 "wrote 12 train \+ 6 test" "$SHARDVIT" prep imagefolder --src SRCC --out OC
expect c_tar 0 "wrote 12 train \+ 6 test" "$SHARDVIT" prep imagefolder --src SRCC --out OT --format tar
hex='[0-9a-f]{16}'
grep -Eqx "source-train 12 list $hex files $hex" OC/.shardvit-prep 2>/dev/null &&
    grep -Eqx "source-eval val 6 list $hex files $hex" OC/.shardvit-prep || fail "c_new: the marker records no source"
grep -qx "source-eval none" O3/.shardvit-prep 2>/dev/null || fail "c_new: O3's marker does not record 'source-eval none'"
before=$(snap OC)
before_t=$(snap OT)
sleep 0.05 # a rewrite would show in the mtimes
# changed REASON PATTERN: SRCC as it is now, imported into OC (and OT) before, is refused naming the change
changed() {
    expect "c_$1" 2 "--out OC holds an import of SRCC .*but the source changed since: $2.*remove OC" \
        "$SHARDVIT" prep imagefolder --src SRCC --out OC
}
a0=$(ls SRCC/train/class_000 | head -1)
cp SRCC/train/class_000/"$a0" SRCC/train/class_000/zz_added.jpg
changed added "the source now has 13 train images \(SRCC/train\), 12 when it was imported"
expect c_added_tar 2 "OT holds an import of SRCC .*13 train images" "$SHARDVIT" prep imagefolder --src SRCC --out OT \
    --format tar
expect c_added_w3 2 "13 train images" "$SHARDVIT" prep imagefolder --src "$WORK/SRCC/" --out OC --workers 3
restore
expect c_same 0 "already prepared" "$SHARDVIT" prep imagefolder --src SRCC --out OC
expect c_same_tar 0 "already prepared" "$SHARDVIT" prep imagefolder --src SRCC --out OT --format tar
rm SRCC/val/class_001/"$(ls SRCC/val/class_001 | head -1)"
changed removed "the source now has 5 val images \(SRCC/val\), 6 when it was imported"
restore
mv SRCC/train/class_002/"$(ls SRCC/train/class_002 | head -1)" SRCC/train/class_002/renamed.jpg
changed renamed "the file names, classes or labels of SRCC/train are not those it had"
restore
mv SRCC/train/class_000/"$a0" SRCC/train/class_001/
changed moved "the file names, classes or labels of SRCC/train are not those it had"
restore
b1=$(ls SRCC/train/class_001 | head -1)
cat SRCC/train/class_002/"$(ls SRCC/train/class_002 | head -1)" >SRCC/train/class_001/"$b1"
changed rewritten "files of SRCC/train were rewritten or touched"
restore
touch -d "2001-02-03 04:05:06" SRCC/val/class_000/"$(ls SRCC/val/class_000 | head -1)"
changed touched "files of SRCC/val were rewritten or touched"
restore
mv SRCC/val SRCC/test
changed val_test "the source's evaluation split is now SRCC/test, at the import it was SRCC/val"
rm -r SRCC/test
changed val_gone "the source's evaluation split SRCC/val is gone"
restore
rm -r SRCC/train
expect c_no_train 2 "OC holds an import of SRCC .*but the source cannot be read as it was then: .*SRCC/train" \
    "$SHARDVIT" prep imagefolder --src SRCC --out OC
mkdir S3/val && cp -a SRC/val/class_000 S3/val/
expect c_val_new 2 "the source now has an evaluation split \(S3/val\), at the import it had none" \
    "$SHARDVIT" prep imagefolder --src S3 --out O3
rm -r S3/val
expect c_val_new_back 0 "already prepared" "$SHARDVIT" prep imagefolder --src S3 --out O3
rm -rf SRCC
expect c_gone 0 "the source SRCC no longer exists: OC is taken as its marker records it" \
    "$SHARDVIT" prep imagefolder --src SRCC --out OC
grep -q "already prepared" c_gone.log || fail "c_gone: not 'already prepared'"
[ "$(snap OC)" = "$before" ] || fail "c: OC was changed"
[ "$(snap OT)" = "$before_t" ] || fail "c: OT was changed"
# a marker without a source record (an earlier shardvit's): accepted as it was, with a warning
restore
cp -a OC OCold
sed -i '/^source-/d' OCold/.shardvit-prep
cp SRCC/train/class_000/"$a0" SRCC/train/class_000/zz_added.jpg
expect c_old 0 "OCold/.shardvit-prep records no source contents" "$SHARDVIT" prep imagefolder --src SRCC --out OCold
grep -q "already prepared" c_old.log || fail "c_old: not 'already prepared'"
ok "12: a source changed since the import is refused naming the change; restored, gone or unrecorded it is prepared"
# 13. a rerun scans the source once: its scan warnings (a PNG file ImageFolder does not read) print
# once, not once for the command's pre-check and again for the importer
restore
cp SRCC/train/class_000/"$a0" SRCC/train/class_000/zz_note.png
expect d_new 0 "wrote 12 train \+ 6 test" "$SHARDVIT" prep imagefolder --src SRCC --out OD
expect d_again 0 "already prepared" "$SHARDVIT" prep imagefolder --src SRCC --out OD
n=$(grep -c "formats other than JPEG are not read" "$WORK/d_again.log")
[ "$n" = 1 ] || fail "d_again: the source's scan warning printed $n times (the source scanned more than once)"
ok "13: a rerun scans its source once"

[ $NFAIL -eq 0 ] || { echo "prep_imagefolder: $NFAIL checks failed"; exit 1; }
echo "prep_imagefolder: all passed"
