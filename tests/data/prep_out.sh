#!/usr/bin/env bash
# `shardvit prep --out DIR` writes only into a new or empty DIR (data/prep.h, docs/data.md):
#   1. a new DIR gets the expected tree (folder and tar), classes.txt and .shardvit-prep;
#   2. running the same prep again is "already prepared" (exit 0, nothing rewritten); other
#      options are refused (exit 2) and the earlier output is left as it was;
#   3. a DIR holding symlinks to files outside it (a .jpg prep would write, classes.txt, a
#      dangling classes.txt) is refused with exit 2 naming DIR: the targets are unchanged byte for
#      byte and nothing is created through a dangling link;
#   4. a DIR holding a user's file, or a FIFO named classes.txt, is refused at once (exit 2,
#      never a hang), the file / FIFO unchanged; a --out that is a file is refused;
#   5. an import that fails half way (an IDX source without its t10k files) removes what it wrote:
#      a DIR it created is gone, an empty DIR it was given is empty again;
#   6. a DIR whose marker records more than it holds (a split, a class directory or a shard
#      deleted) is refused (exit 2) naming what differs, not "already prepared"; nothing removed;
#   7. the import's root given as a data set is refused, naming its train/ and test/;
#   8. an IDX or CIFAR import run again with --src spelled another way (a trailing '/', "./" and
#      "..", a relative path from another directory, a symbolic link) is "already prepared", and
#      so is a marker that records --src as it was given ("idx/", before prep resolved it); another
#      source is refused; nothing rewritten;
#   9. CIFAR name lists laid out as the release's (batches.meta.txt: the 10 names, each with its
#      '\n', then one '\n' more, 61 bytes; the same for CIFAR-100's fine_label_names.txt) are
#      imported with those names; an empty line between names is an error naming the line;
#  10. a file that appears in DIR while a tar prep runs, at the name of a shard it is about to
#      move in (a user's file, another prep's shard): prep fails (exit 1) naming it, the file is
#      left byte for byte, and prep removes only its own output (before, its rename replaced the
#      file, and a failing prep's clean-up then deleted the other prep's shards);
#  11. a gzip IDX file whose header claims more records than deflate can expand its bytes to (a
#      50 KB gzip of zeros claiming 2^32 - 1 images) is refused before anything is written
#      (before, prep wrote images for minutes, gigabytes of them, until the stream ran short);
#  12. a second prep into the --out of a prep still running is refused (exit 2) saying another
#      prep is writing into it now (before: "the partial output of a prep that was interrupted
#      ... remove it", which would have deleted a live import); the first one completes.
# Every case runs under `timeout`; all cases run and each failure is reported.
# Usage: prep_out.sh SHARDVIT
set -uo pipefail
SHARDVIT=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-prep-out.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export LC_ALL=C
source "$(dirname "$0")/case_lib.sh" # fail, begin, ok, run
SYN=(prep synthetic --classes 2 --per-class 2 --test-per-class 1 --width 28 --height 28)

# refused NAME PATTERN CMD...: CMD must exit 2 with a message matching PATTERN
refused() {
    local name=$1 pat=$2
    shift 2
    run "$name" "$@"
    [ $RC -eq 2 ] || { fail "$name: exit status $RC, want 2 (refused)"; sed 's/^/    /' "$WORK/$name.log"; }
    grep -Eq -- "$pat" "$WORK/$name.log" || fail "$name: no message matching '$pat'"
}
# snap DIR: every entry's type, path, link target, size, mtime and the content of its files
snap() {
    (cd "$1" && find . -printf '%y %p -> %l %s %T@\n' | sort && find . -type f -print0 | sort -z |
        xargs -0 -r sha256sum)
}

cd "$WORK" || exit 1

# ---- 1. a new DIR ----------------------------------------------------------------------------
begin
run new "$SHARDVIT" "${SYN[@]}" --out new
[ $RC -eq 0 ] || { fail "new: exit status $RC"; cat new.log; }
want="./.shardvit-prep ./classes.txt ./test/class_000/00000.jpg ./test/class_001/00001.jpg \
./train/class_000/00000.jpg ./train/class_000/00002.jpg ./train/class_001/00001.jpg ./train/class_001/00003.jpg"
got=$(cd new 2>/dev/null && find . -type f | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || fail "new: files '$got', want '$want'"
[ "$(cat new/classes.txt 2>/dev/null)" = $'class_000\nclass_001' ] || fail "new: classes.txt is not class_000, class_001"
for f in new/train/class_000/00000.jpg new/test/class_001/00001.jpg; do
    [ "$(head -c 2 "$f" 2>/dev/null | od -An -tx1 | tr -d ' ')" = ffd8 ] || fail "new: $f is not a JPEG"
done
grep -qx "train 4" new/.shardvit-prep 2>/dev/null && grep -qx "test 2" new/.shardvit-prep ||
    fail "new: .shardvit-prep does not record 4 train + 2 test images"
run new_tar "$SHARDVIT" "${SYN[@]}" --format tar --shard-size 3 --out newtar
[ $RC -eq 0 ] || { fail "new_tar: exit status $RC"; cat new_tar.log; }
got=$(cd newtar 2>/dev/null && find . -type f | sort | tr '\n' ' ' | sed 's/ $//')
want="./.shardvit-prep ./classes.txt ./test-000000.tar ./train-000000.tar ./train-000001.tar"
[ "$got" = "$want" ] || fail "new_tar: files '$got', want '$want'"
ok "1: a new DIR gets the folder tree / tar shards, classes.txt and .shardvit-prep"

# ---- 2. running prep again -------------------------------------------------------------------
begin
before=$(snap new)
sleep 0.05 # a rewrite would show in the mtimes
run again "$SHARDVIT" "${SYN[@]}" --out new
[ $RC -eq 0 ] || { fail "again: exit status $RC (the same prep again must be a no-op)"; cat again.log; }
grep -q "already prepared" again.log || fail "again: no 'already prepared' message"
[ "$(snap new)" = "$before" ] || fail "again: the earlier output was rewritten"
refused other "new holds another prep .*'seed 0'.*'seed 7'" "$SHARDVIT" "${SYN[@]}" --seed 7 --out new
refused other_fmt "new holds another prep" "$SHARDVIT" "${SYN[@]}" --format tar --out new
[ "$(snap new)" = "$before" ] || fail "other: the earlier output was changed"
before=$(snap newtar)
run again_tar "$SHARDVIT" "${SYN[@]}" --format tar --shard-size 3 --out newtar
[ $RC -eq 0 ] && grep -q "already prepared" again_tar.log || fail "again_tar: exit status $RC, not already prepared"
refused other_shard "newtar holds another prep .*shard-size" "$SHARDVIT" "${SYN[@]}" --format tar --out newtar
[ "$(snap newtar)" = "$before" ] || fail "again_tar: the earlier shards were changed"
ok "2: the same prep again is 'already prepared', other options are refused, nothing changed"

# ---- 3. symlinks inside DIR to files outside it -----------------------------------------------
begin
mkdir -p c/train/class_000 outside
echo precious3 >outside/precious3.txt
echo precious4 >outside/precious4.txt
cp outside/precious3.txt keep3
cp outside/precious4.txt keep4
ln -s "$WORK/outside/precious3.txt" c/train/class_000/00002.jpg
ln -s "$WORK/outside/precious4.txt" c/classes.txt
refused symlinks "--out c is not empty" "$SHARDVIT" "${SYN[@]}" --out c
cmp -s outside/precious3.txt keep3 || fail "symlinks: the target of c/train/class_000/00002.jpg was changed"
cmp -s outside/precious4.txt keep4 || fail "symlinks: the target of c/classes.txt was changed"
[ -L c/classes.txt ] && [ -L c/train/class_000/00002.jpg ] || fail "symlinks: a planted link was replaced"
[ "$(cd c && find . | sort | tr '\n' ' ')" = ". ./classes.txt ./train ./train/class_000 ./train/class_000/00002.jpg " ] ||
    fail "symlinks: prep created files in c: $(cd c && find . | tr '\n' ' ')"
mkdir dangling
ln -s "$WORK/outside/created.txt" dangling/classes.txt
refused dangling "--out dangling is not empty" "$SHARDVIT" "${SYN[@]}" --out dangling
[ ! -e outside/created.txt ] || fail "dangling: prep created a file through the dangling link"
ok "3: symlinks in DIR refused (exit 2), their targets unchanged, nothing created through them"

# ---- 4. a user's file, a FIFO, a file as --out ------------------------------------------------
begin
mkdir b
echo precious >b/classes.txt
cp b/classes.txt keepb
refused user_file "--out b is not empty \(it holds 'classes.txt'\)" "$SHARDVIT" "${SYN[@]}" --out b
cmp -s b/classes.txt keepb || fail "user_file: b/classes.txt was changed"
[ "$(ls -A b)" = classes.txt ] || fail "user_file: prep created files in b: $(ls -A b | tr '\n' ' ')"
mkdir d
mkfifo d/classes.txt
refused fifo "--out d is not empty" "$SHARDVIT" "${SYN[@]}" --out d
[ -p d/classes.txt ] || fail "fifo: d/classes.txt is no longer a FIFO"
[ "$(ls -A d)" = classes.txt ] || fail "fifo: prep created files in d: $(ls -A d | tr '\n' ' ')"
echo precious >afile
refused out_file "--out afile exists and is not a directory" "$SHARDVIT" "${SYN[@]}" --out afile
[ "$(cat afile)" = precious ] || fail "out_file: afile was changed"
ok "4: a user's file, a FIFO in DIR and a file as --out are refused at once (exit 2), unchanged"

# ---- 5. a failed import removes what it wrote ---------------------------------------------------
begin
mkdir idx
{
    printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x08\x00\x00\x00\x08'
    head -c 128 /dev/zero
} >idx/train-images-idx3-ubyte
printf '\x00\x00\x08\x01\x00\x00\x00\x02\x01\x02' >idx/train-labels-idx1-ubyte
run half "$SHARDVIT" prep mnist --src idx --out half
[ $RC -eq 1 ] || fail "half: exit status $RC, want 1 (no t10k files)"
grep -q "t10k-images-idx3-ubyte" half.log || fail "half: the error does not name the missing t10k file"
[ ! -e half ] || fail "half: the partial output stayed: $(find half | tr '\n' ' ')"
mkdir half_empty
run half_empty "$SHARDVIT" prep mnist --src idx --out half_empty
[ $RC -eq 1 ] || fail "half_empty: exit status $RC, want 1"
[ -d half_empty ] && [ -z "$(ls -A half_empty)" ] || fail "half_empty: not an empty directory again"
ok "5: a failed import leaves DIR as it found it"

# ---- 6. a marker whose import was changed since -------------------------------------------------
begin
kept=()
cp -a new gone_split && rm -r gone_split/test
cp -a new gone_class && rm -r gone_class/train/class_001
cp -a newtar gone_shard && rm gone_shard/train-000001.tar
cp -a new gone_classes && rm gone_classes/classes.txt
for c in gone_split gone_class gone_shard gone_classes; do kept+=("$(snap $c)"); done
refused gone_split "gone_split holds this import's marker .*gone_split/test is missing.*remove gone_split" \
    "$SHARDVIT" "${SYN[@]}" --out gone_split
refused gone_class "gone_class/train holds 2 images, not 4" "$SHARDVIT" "${SYN[@]}" --out gone_class
refused gone_shard "gone_shard/train-000001.tar is missing" "$SHARDVIT" "${SYN[@]}" --format tar --shard-size 3 \
    --out gone_shard
refused gone_classes "gone_classes/classes.txt is missing" "$SHARDVIT" "${SYN[@]}" --out gone_classes
i=0
for c in gone_split gone_class gone_shard gone_classes; do
    [ "$(snap $c)" = "${kept[$i]}" ] || fail "$c: the output was changed"
    i=$((i + 1))
done
ok "6: a marker whose split, class directory, shard or class list is gone is refused (exit 2), nothing changed"

# 7. the import's root given as a data set (instead of ROOT/train): refused, naming ROOT/train and
#    ROOT/test; before, train/ and test/ were read as two classes and trained on without a word
begin 7
"$SHARDVIT" "${SYN[@]}" --out asdata >/dev/null 2>&1 || fail "7: prep asdata"
TRAIN7=(train --model vit-28 --dim 16 --depth 1 --heads 2 --batch-size 2 --steps 1 --workers 1)
refused root_train "asdata is the output of .shardvit prep.*asdata/train .*asdata/test" \
    "$SHARDVIT" "${TRAIN7[@]}" --data asdata
refused root_val "asdata is the output of .shardvit prep" "$SHARDVIT" "${TRAIN7[@]}" --data asdata/train --val-data asdata
run root_ok "$SHARDVIT" "${TRAIN7[@]}" --data asdata/train --val-data asdata/test
[ $RC -eq 0 ] || { fail "7: training on asdata/train failed (exit $RC)"; sed 's/^/    /' "$WORK/root_ok.log"; }
ok "7: a prep output's root as --data / --val-data is refused naming its train/ and test/"

# ---- 8. --src spelled another way ----------------------------------------------------------------
begin
# idx_set DIR: an MNIST IDX set of 2 train + 1 test image of 8x8 (plain files)
idx_set() {
    mkdir -p "$1"
    local s n b
    for s in train:2 t10k:1; do
        n=${s#*:} b="\\x0${s#*:}" # the count's last header byte
        {
            printf '\x00\x00\x08\x03\x00\x00\x00'"$b"'\x00\x00\x00\x08\x00\x00\x00\x08'
            head -c $((64 * n)) /dev/zero
        } >"$1/${s%%:*}-images-idx3-ubyte"
        { printf '\x00\x00\x08\x01\x00\x00\x00'"$b" && head -c "$n" /dev/zero; } >"$1/${s%%:*}-labels-idx1-ubyte"
    done
}
idx_set srcs/idx
idx_set srcs/idx2
ln -s srcs/idx idxlink
REAL=$(cd srcs/idx && pwd -P)
run i_new "$SHARDVIT" prep mnist --src srcs/idx --out im
[ $RC -eq 0 ] || { fail "i_new: exit status $RC"; cat i_new.log; }
grep -qxF "src $REAL" im/.shardvit-prep 2>/dev/null || fail "i_new: the marker does not record src $REAL"
before=$(snap im)
sleep 0.05 # a rewrite would show in the mtimes
i=0
for spelling in srcs/idx/ ./srcs//idx/. srcs/../srcs/idx "$WORK/srcs/idx" idxlink idxlink/; do
    i=$((i + 1))
    run "i_same$i" "$SHARDVIT" prep mnist --src "$spelling" --out im
    [ $RC -eq 0 ] && grep -q "already prepared" "i_same$i.log" ||
        { fail "i_same$i: --src $spelling: exit status $RC, not 'already prepared'"; sed 's/^/    /' "i_same$i.log"; }
done
run i_cwd bash -c "cd srcs && exec \"\$0\" prep mnist --src idx --out ../im" "$SHARDVIT"
[ $RC -eq 0 ] && grep -q "already prepared" i_cwd.log || { fail "i_cwd: exit status $RC"; cat i_cwd.log; }
refused i_other "im holds another prep .*'src $REAL'" "$SHARDVIT" prep mnist --src srcs/idx2 --out im
[ "$(snap im)" = "$before" ] || fail "i_same: im was changed"
# a marker that records --src as it was given: the same source when it resolves to the same place
cp -a im im_lit
sed -i 's|^src .*|src srcs/idx/|' im_lit/.shardvit-prep
before=$(snap im_lit)
run i_lit "$SHARDVIT" prep mnist --src "$WORK/srcs/idx" --out im_lit
[ $RC -eq 0 ] && grep -q "already prepared" i_lit.log || { fail "i_lit: exit status $RC"; cat i_lit.log; }
refused i_lit_other "im_lit holds another prep .*'src srcs/idx/'" "$SHARDVIT" prep mnist --src srcs/idx2 --out im_lit
[ "$(snap im_lit)" = "$before" ] || fail "i_lit: im_lit was changed"
ok "8: --src spelled another way, from another directory or through a link is the same import; another is refused"

# ---- 9. CIFAR name lists as the release lays them out -------------------------------------------
begin
# cifar_set DIR K: one record per batch (K = 10: data_batch_1..5.bin, test_batch.bin; K = 100:
# train.bin, test.bin with its coarse and fine label bytes)
cifar_set() {
    mkdir -p "$1"
    local f
    if [ "$2" = 10 ]; then
        for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
            { printf '\x03' && head -c 3072 /dev/zero; } >"$1/$f.bin"
        done
    else
        for f in train test; do { printf '\x01\x42' && head -c 3072 /dev/zero; } >"$1/$f.bin"; done
    fi
}
NAMES10=(airplane automobile bird cat deer dog frog horse ship truck)
cifar_set c10 10
printf '%s\n' "${NAMES10[@]}" "" >c10/batches.meta.txt # the release's file: 61 bytes
[ "$(wc -c <c10/batches.meta.txt)" = 61 ] || fail "c10: the fixture is not 61 bytes"
run c10 "$SHARDVIT" prep cifar10 --src c10 --out c10o
[ $RC -eq 0 ] || { fail "c10: the release's batches.meta.txt: exit status $RC"; sed 's/^/    /' c10.log; }
[ "$(cat c10o/classes.txt 2>/dev/null)" = "$(printf '%s\n' "${NAMES10[@]}")" ] || fail "c10: classes.txt is not the 10 names"
[ -f c10o/train/cat/00000.jpg ] || fail "c10: the label-3 image is not c10o/train/cat/00000.jpg"
run c10_again "$SHARDVIT" prep cifar10 --src "$WORK/c10/" --out c10o
[ $RC -eq 0 ] && grep -q "already prepared" c10_again.log || { fail "c10_again: exit status $RC"; cat c10_again.log; }
cifar_set c10b 10
printf '%s\n' "${NAMES10[@]}" "" "" "" >c10b/batches.meta.txt
run c10b "$SHARDVIT" prep cifar10 --src c10b --out c10bo
[ $RC -eq 0 ] || { fail "c10b: three empty lines at the end: exit status $RC"; sed 's/^/    /' c10b.log; }
cifar_set c10c 10
printf '%s\n' airplane "" automobile bird cat deer dog frog horse ship truck "" >c10c/batches.meta.txt
run c10c "$SHARDVIT" prep cifar10 --src c10c --out c10co
[ $RC -eq 1 ] && grep -q "batches.meta.txt: line 2 is empty" c10c.log ||
    { fail "c10c: an empty line between names: exit status $RC, want 1 naming line 2"; sed 's/^/    /' c10c.log; }
[ ! -e c10co ] || fail "c10c: c10co was left behind"
cifar_set c100 100
for k in $(seq 0 99); do printf 'fine_%02d\n' "$k"; done >c100/fine_label_names.txt
echo >>c100/fine_label_names.txt
run c100 "$SHARDVIT" prep cifar100 --src c100 --out c100o
[ $RC -eq 0 ] || { fail "c100: fine_label_names.txt with an empty last line: exit status $RC"; sed 's/^/    /' c100.log; }
[ "$(cat c100o/classes.txt 2>/dev/null | wc -l)" = 100 ] && [ -f c100o/train/fine_66/00000.jpg ] ||
    fail "c100: not the 100 names, or the fine label 66 not in c100o/train/fine_66"
ok "9: CIFAR name lists ending in an empty line (as the release's) are read; an empty line between names is not"

begin
mkdir race
(timeout 120 "$SHARDVIT" prep synthetic --out race --format tar --classes 4 --per-class 300 --test-per-class 10 \
    --width 256 --height 256 >race.log 2>&1; echo $? >race.rc) &
for _ in $(seq 400); do compgen -G 'race/.prep.tmp-*' >/dev/null && break; sleep 0.01; done
echo "user data, not a prep shard" >race/train-000000.tar
wait
RC=$(cat race.rc)
[ "$RC" = 1 ] && grep -q "race/train-000000.tar appeared while prep ran" race.log ||
    { fail "10: a file appearing in --out: exit status $RC, want 1 naming it"; sed 's/^/    /' race.log; }
[ "$(cat race/train-000000.tar)" = "user data, not a prep shard" ] || fail "10: the file that appeared was replaced"
[ "$(ls -A race)" = "train-000000.tar" ] || fail "10: prep left more than the file: $(ls -A race | tr '\n' ' ')"
ok "10: a file that appeared in --out during a tar prep is kept, prep fails naming it and removes only its own"

begin
mkdir bomb
{ printf '\000\000\010\003\377\377\377\377\000\000\000\034\000\000\000\034'; head -c 52428800 /dev/zero; } |
    gzip >bomb/train-images-idx3-ubyte.gz
{ printf '\000\000\010\001\377\377\377\377'; head -c 1048576 /dev/zero; } | gzip >bomb/train-labels-idx1-ubyte.gz
RUN_LIMIT=20 run bomb "$SHARDVIT" prep mnist --src bomb --out bombo
[ $RC -eq 1 ] && grep -q "bomb/train-images-idx3-ubyte.gz: header claims 3367254359296 bytes of records, but a gzip file" \
    bomb.log || { fail "11: a gzip header claiming 2^32 - 1 images: exit status $RC, want 1 naming it"; sed 's/^/    /' bomb.log; }
[ ! -e bombo ] || fail "11: bombo was left behind"
ok "11: a gzip IDX header claiming more than deflate can hold is refused before anything is written"

begin
(timeout 120 "$SHARDVIT" prep synthetic --out live --format tar --classes 4 --per-class 300 --test-per-class 10 \
    --width 256 --height 256 >live.log 2>&1; echo $? >live.rc) &
for _ in $(seq 400); do compgen -G 'live/.prep.tmp-*' >/dev/null && break; sleep 0.01; done
run live2 "$SHARDVIT" prep synthetic --out live --format tar --classes 4 --per-class 300 --test-per-class 10 \
    --width 256 --height 256
wait
[ $RC -eq 2 ] && grep -q "another prep is writing into it now" live2.log ||
    { fail "12: a prep into a running prep's --out: exit status $RC, want 2 saying so"; sed 's/^/    /' live2.log; }
[ "$(cat live.rc)" = 0 ] && [ -f live/.shardvit-prep ] || fail "12: the first prep did not complete: $(cat live.log)"
ok "12: a prep into the --out of a running prep is told so, and the running one completes"

[ $NFAIL -eq 0 ] || { echo "prep_out: $NFAIL checks failed"; exit 1; }
echo "prep_out: all passed"
