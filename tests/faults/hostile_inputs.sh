#!/usr/bin/env bash
# Hostile inputs through the real CLI. Asserted for each: a clear error or graceful handling,
# no crash (exit status 1 or 0, never a signal), nothing written outside the output directory.
#   1. WebDataset tar with '../' member names, with an absolute member name, with a header
#      claiming an absurd member size (77777777777 octal), and with a GNU base-256 size field
#      of 2^95: `train --data x.tar` fails naming the shard and the problem;
#   2. an ImageFolder JPEG whose header claims 60000 x 60000 pixels (a decompression bomb): the
#      pixel guard rejects it before decoding, the file is logged once, substituted and counted,
#      training
#      completes and the process stays small (RSS < 1 GiB);
#   3. class directories named with a space, a leading dash, non-ASCII UTF-8 and an embedded
#      newline: training either runs with those names (classes.txt holding one name per line)
#      or refuses the tree with a message; it never writes a misaligned class list;
#   4. `prep cifar10` with a class-name list naming "../../evil" (a path outside --out): refused,
#      nothing created outside --out; odd but harmless names are accepted as directory names.
# Usage: hostile_inputs.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
ARGS="--model vit-28 --img 28 --in-chans 3 --dim 36 --depth 2 --heads 3 --batch-size 4 --steps 2 --log-every 1 \
 --seed 5 --workers 1 --comm-timeout 30"
"$SHARDVIT" prep synthetic --out "$WORK/set" --classes 2 --per-class 4 --test-per-class 1 --width 40 --height 36 \
    >"$WORK/prep.log" 2>&1 || { FAIL_LOGS=("$WORK/prep.log"); fail "prep failed"; }
a_jpeg=$(ls "$WORK/set/train/class_000/" | head -1)
a_jpeg="$WORK/set/train/class_000/$a_jpeg"


# ---- 1. tar shards ------------------------------------------------------------------------
mkdir -p "$WORK/tars/deep/er"
"$PY" - "$WORK/tars" "$a_jpeg" <<'PYEOF'
import io, struct, sys, tarfile
out, jpg = sys.argv[1], open(sys.argv[2], "rb").read()
def shard(path, members):
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
shard(out + "/traversal.tar", [("../../evil.jpg", jpg), ("../../evil.cls", b"0")])
shard(out + "/absolute.tar", [("/tmp/evil.jpg", jpg), ("/tmp/evil.cls", b"0")])
def header(size_field):
    h = bytearray(512)
    h[0:5] = b"a.jpg"; h[100:108] = b"0000644\0"; h[124:136] = size_field; h[156:157] = b"0"
    h[257:263] = b"ustar\0"; h[263:265] = b"00"; h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)
open(out + "/absurd.tar", "wb").write(header(b"77777777777\0") + b"\0" * 1024)
open(out + "/base256.tar", "wb").write(header(b"\x80" + b"\xff" * 11) + b"\0" * 1024)
PYEOF
expect_fail tar_traversal "traversal.tar: member name '../../evil.jpg' is absolute or contains '..'" \
    "$SHARDVIT" train $ARGS --data "$WORK/tars/deep/er/../../traversal.tar" --out "$WORK/o1"
expect_fail tar_absolute "absolute.tar: member name '/tmp/evil.jpg' is absolute" \
    "$SHARDVIT" train $ARGS --data "$WORK/tars/absolute.tar" --out "$WORK/o2"
expect_fail tar_absurd_size "absurd.tar: truncated archive" \
    "$SHARDVIT" train $ARGS --data "$WORK/tars/absurd.tar" --out "$WORK/o3"
expect_fail tar_base256_size "base256.tar: member .* at byte 0: size out of range" \
    "$SHARDVIT" train $ARGS --data "$WORK/tars/base256.tar" --out "$WORK/o4"
[ ! -e "$WORK/evil.jpg" ] && [ ! -e "$WORK/tars/evil.jpg" ] || fail "a tar member was written outside"

# ---- 2. decompression bomb in an ImageFolder ----------------------------------------------
cp -r "$WORK/set" "$WORK/bomb"
victim=$(ls "$WORK/bomb/train/class_001/" | head -1)
"$PY" - "$WORK/bomb/train/class_001/$victim" <<'PYEOF'
import struct, sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); i = 2
while i < len(b):
    m = b[i + 1]; n = struct.unpack(">H", b[i + 2:i + 4])[0]
    if m in (0xC0, 0xC1, 0xC2):
        struct.pack_into(">HH", b, i + 5, 60000, 60000); break
    i += 2 + n
else:
    sys.exit("no SOF marker")
open(p, "wb").write(bytes(b))
PYEOF
FAIL_LOGS=("$WORK/bomb.log")
timeout 120 "$MPIEXEC" -n 1 "$SHARDVIT" train $ARGS --steps 2 --data "$WORK/bomb/train" --out "$WORK/o5" \
    >"$WORK/bomb.log" 2>&1 || fail "training with a 60000x60000 JPEG failed"
grep -q "60000x60000 exceeds the 89478485-pixel limit" "$WORK/bomb.log" || fail "pixel guard message missing"
# the loader counts every substitution it prepares, prefetched batches of the next epoch too
subst=$(grep -o "substituted samples [0-9]*" "$WORK/bomb.log" | grep -o "[0-9]*$")
[ "${subst:-0}" -ge 1 ] || fail "bomb not counted as a substituted sample"
[ "$(grep -c "skipping unreadable image" "$WORK/bomb.log")" -eq 1 ] || fail "bomb not logged exactly once"
rss=$(grep -o "process RSS [0-9.]* MiB" "$WORK/bomb.log" | grep -o "[0-9.]*" | cut -d. -f1)
[ -n "$rss" ] && [ "$rss" -lt 1024 ] || fail "RSS ${rss:-?} MiB"
echo "ok bomb: rejected by the pixel guard, substituted, RSS $rss MiB"

# ---- 3. odd class directory names ---------------------------------------------------------
mkdir -p "$WORK/odd"
cp -r "$WORK/set/train/class_000" "$WORK/odd/with space"
cp -r "$WORK/set/train/class_001" "$WORK/odd/-leading-dash"
cp -r "$WORK/set/train/class_000" "$WORK/odd/ünïcødé"
FAIL_LOGS=("$WORK/odd.log")
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $ARGS --data "$WORK/odd" --out "$WORK/o6" >"$WORK/odd.log" 2>&1 ||
    fail "training on odd class names failed"
printf '%s\n' "-leading-dash" "with space" "ünïcødé" | cmp -s - "$WORK/o6/classes.txt" ||
    fail "classes.txt does not list the three names in sorted order"
echo "ok odd names: trained; classes.txt = $(tr '\n' '|' <"$WORK/o6/classes.txt")"
nl_dir="$WORK/odd/new"$'\n'"line"
if mkdir "$nl_dir" 2>/dev/null; then
    cp "$WORK/set/train/class_001/"* "$nl_dir/"
    timeout 120 "$MPIEXEC" -n 1 "$SHARDVIT" train $ARGS --data "$WORK/odd" --out "$WORK/o7" >"$WORK/nl.log" 2>&1
    rc=$?
    FAIL_LOGS=("$WORK/nl.log")
    if [ $rc -eq 0 ]; then
        # accepted: the class list must still have exactly one line per class
        [ "$(wc -l <"$WORK/o7/classes.txt")" -eq 4 ] || fail "a newline in a class name broke classes.txt"
        echo "ok newline name: accepted, classes.txt has 4 lines"
    else
        [ $rc -eq 1 ] || fail "newline class name: exit status $rc"
        grep -q "class" "$WORK/nl.log" || fail "newline class name refused without a message"
        echo "ok newline name: refused: $(grep -m1 -i "error" "$WORK/nl.log" | cut -c1-200)"
    fi
else
    echo "skip newline name: the filesystem refuses it"
fi

# ---- 4. prep with hostile class names -----------------------------------------------------
mkdir -p "$WORK/cifar/src"
"$PY" - "$WORK/cifar/src" <<'PYEOF'
import sys
d = sys.argv[1]
rec = bytes([1]) + bytes(range(256)) * 12
for b in range(1, 6):
    open(f"{d}/data_batch_{b}.bin", "wb").write(rec * 2)
open(f"{d}/test_batch.bin", "wb").write(rec)
PYEOF
printf '%s\n' "../../evil" c1 c2 c3 c4 c5 c6 c7 c8 c9 >"$WORK/cifar/src/batches.meta.txt"
expect_fail prep_traversal "class name '../../evil' is not a plain directory name" \
    "$SHARDVIT" prep cifar10 --src "$WORK/cifar/src" --out "$WORK/cifar/out"
[ ! -e "$WORK/evil" ] && [ ! -e "$WORK/cifar/evil" ] || fail "prep created a directory outside --out"
printf '%s\n' "with space" "-dash" "ünï" c3 c4 c5 c6 c7 c8 c9 >"$WORK/cifar/src/batches.meta.txt"
FAIL_LOGS=("$WORK/prep_odd.log")
"$SHARDVIT" prep cifar10 --src "$WORK/cifar/src" --out "$WORK/cifar/out2" >"$WORK/prep_odd.log" 2>&1 ||
    fail "prep with odd but harmless names failed"
[ -d "$WORK/cifar/out2/train/with space" ] && [ -d "$WORK/cifar/out2/train/-dash" ] || fail "odd names not created"
echo "ok prep: traversal refused, odd names accepted"
echo PASS
