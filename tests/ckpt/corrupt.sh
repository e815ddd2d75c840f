#!/usr/bin/env bash
# Integrity: a flipped byte, a truncated shard, a missing shard, a damaged or future-version
# index.json, and a malformed safetensors header each give one clear error line naming the file
# (and byte range), a non-zero exit, and leave every file as it was.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
run base 2 --steps 2
SRC=$WORK/base/checkpoints/step_00000002
# expect_fail NAME PATTERN CMD...: exit non-zero, exactly one "error:" line, matching PATTERN
expect_fail() {
    local name=$1 pat=$2
    shift 2
    local rc=0
    "$@" >"$WORK/$name.out" 2>&1 || rc=$?
    test $rc -ne 0 || fail "$name: exit 0"
    test "$(grep -c 'error:' "$WORK/$name.out")" -ge 1 || fail "$name: no error line"
    grep 'error:' "$WORK/$name.out" | grep -qE "$pat" || { cat "$WORK/$name.out"; fail "$name: error does not match '$pat'"; }
    echo "$name: $(grep -m1 'error:' "$WORK/$name.out" | cut -c1-200)"
}
fresh() { rm -rf "$WORK/c"; cp -r "$SRC" "$WORK/c"; }
snapshot() { (cd "$WORK/c" && sha256sum * | sha256sum); }
# byte offset of the first chunk of shard 1 that lies past its first 100 bytes
OFF=$("$PY" -c "import json,sys; c=json.load(open(sys.argv[1]))['files'][1]['chunks']; print([x for x in c if x[0] > 100][0][0] + 5)" "$SRC/index.json")

fresh
printf '\xff' | dd of="$WORK/c/shard_00001-of-00002.bin" bs=1 seek="$OFF" conv=notrunc status=none
S0=$(snapshot)
expect_fail flip_export "shard_00001-of-00002.bin bytes \[[0-9]+, [0-9]+\): CRC32C mismatch" \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
test ! -e "$WORK/x.safetensors" || fail "export left a file behind"
expect_fail flip_resume "shard_00001-of-00002.bin bytes \[[0-9]+, [0-9]+\): CRC32C mismatch" \
    timeout 120 "$MPIEXEC" -n 3 "$SHARDVIT" train $TINY --steps 2 --resume "$WORK/c" --out "$WORK/flip"
test ! -e "$WORK/flip/checkpoints/step_00000002" || fail "a failed resume saved a checkpoint"
expect_fail flip_reshard "CRC32C mismatch" "$SHARDVIT" reshard "$WORK/c" "$WORK/r" --world 3
test ! -e "$WORK/r" || fail "a failed reshard left its output"
# it removes exactly the parent directories of OUT it made, also when OUT's path climbs back
# through ".." (np/a/.. is np), and keeps one that was there, empty, before
mkdir "$WORK/was"
expect_fail flip_reshard_dotdot "CRC32C mismatch" "$SHARDVIT" reshard "$WORK/c" "$WORK/np/a/../b/r" --world 3
test ! -e "$WORK/np" || fail "a failed reshard left the directories it made: $(find "$WORK/np" | head -3)"
expect_fail flip_reshard_kept "CRC32C mismatch" "$SHARDVIT" reshard "$WORK/c" "$WORK/was/a/../b/c/r" --world 3
test -d "$WORK/was" || fail "a failed reshard removed a directory it did not make"
test -z "$(ls -A "$WORK/was")" || fail "a failed reshard left the directories it made: $(find "$WORK/was" | head -3)"
rmdir "$WORK/was"
test "$(snapshot)" = "$S0" || fail "the damaged checkpoint was modified"

fresh
truncate -s 2000 "$WORK/c/shard_00000-of-00002.bin"
expect_fail truncated "shard_00000-of-00002.bin is truncated: bytes \[2000, [0-9]+\) are missing" \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
expect_fail truncated_resume "shard_00000-of-00002.bin is truncated" \
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 2 --resume "$WORK/c"

fresh
rm "$WORK/c/shard_00001-of-00002.bin"
expect_fail missing "shard_00001-of-00002.bin: No such file" "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"

fresh
head -c 700 "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_truncated "c/index.json: JSON error at byte" "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed 's/"format_version": 1/"format_version": 99/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_version "index.json: format_version 99 is not supported" \
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 2 --resume "$WORK/c"
sed 's/"shard": \([0-9]*\)/"shard": 7/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_layout "index.json: units\[0\]" "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
# descriptive members the reader relies on: only the values it reads are accepted, and every
# field error names the index.json it came from
sed 's/"dtype": "F32"/"dtype": "BF16"/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_dtype 'c/index.json: \(root\)\.dtype: "BF16" is not supported' \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed 's/"byte_order": "little"/"byte_order": "big"/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_byte_order 'c/index.json: \(root\)\.byte_order: "big" is not supported' \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed 's/"flat_align": 64/"flat_align": 32/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_flat_align 'c/index.json: \(root\)\.flat_align: 32 out of range' \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed 's/"kind": "counter"/"kind": "mt19937"/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_rng 'c/index.json: rng\.kind: "mt19937" is not supported' \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed 's/"world_size": 2/"world_size": 0/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_world_size 'c/index.json: \(root\)\.world_size: 0 out of range' \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed 's/"heads": \([0-9]*\)/"heads": 0/' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_model_field 'c/index.json: model\.heads: 0 out of range' \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
sed '/"dtype": "F32",/d' "$SRC/index.json" >"$WORK/c/index.json"
expect_fail index_no_dtype 'c/index.json: .*dtype' "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
test ! -e "$WORK/x.safetensors" || fail "export of a bad index left a file behind"
# a unit's numel and padded must be what its tensors and the padding rule give: a consistent but
# hostile index (shard files of the stated size holding the data, chunks and CRCs to match, which
# the checks before accepted and resharded with the stated padding) whose last unit
# states a numel far past its last tensor, a padded size beyond the rule, or a gap before a
# tensor is refused by every reader, before a reshard could carry it into a new layout
hostile() { # hostile MODE: $WORK/c = SRC with its last unit rewritten
    rm -rf "$WORK/c"
    mkdir "$WORK/c"
    "$PY" - "$SRC" "$WORK/c" "$1" <<'PY'
import json, struct, sys
src, dst, mode = sys.argv[1:4]
tab = []
for i in range(256):
    c = i
    for _ in range(8):
        c = c >> 1 ^ (0x82F63B78 if c & 1 else 0)
    tab.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = tab[(c ^ x) & 255] ^ c >> 8
    return c ^ 0xFFFFFFFF
ix = json.load(open(src + "/index.json"))
W = ix["shard_world"]; q = W * 64; kinds = 4 if "model_ema" in ix else 3
u = ix["units"][-1]
S0, fo = u["shard"], u["file_offset"]
data = [open(src + "/" + f["name"], "rb").read() for f in ix["files"]]
# the unit's flat elements per kind, gathered from the W files
flat = [b"".join(d[fo + k * S0 * 4:fo + (k + 1) * S0 * 4] for d in data) for k in range(kinds)]
old = [(t["offset"], t["numel"]) for t in u["tensors"]]
if mode == "numel":
    u["numel"] += 1 << 22
elif mode == "gap":
    u["tensors"][-1]["offset"] += 64
    u["numel"] += 64
u["padded"] = max(-(-u["numel"] // q) * q, q) + (q if mode == "padded" else 0)
S = u["shard"] = u["padded"] // W
new = [bytearray(u["padded"] * 4) for _ in range(kinds)]
for k in range(kinds):
    for (o, n), t in zip(old, u["tensors"]):
        new[k][t["offset"] * 4:(t["offset"] + n) * 4] = flat[k][o * 4:(o + n) * 4]
for r, f in enumerate(ix["files"]):
    chunks = [c for c in f["chunks"] if c[0] < fo]
    with open(dst + "/" + f["name"], "wb") as o:
        o.write(data[r][:fo])
        for k in range(kinds):
            seg = new[k][r * S * 4:(r + 1) * S * 4]
            o.write(seg)
            for t in u["tensors"]:  # one chunk per tensor piece in this file
                x0, x1 = max(t["offset"], r * S), min(t["offset"] + t["numel"], (r + 1) * S)
                if x0 < x1:
                    b = seg[(x0 - r * S) * 4:(x1 - r * S) * 4]
                    chunks.append([fo + (k * S + x0 - r * S) * 4, len(b), crc32c(b)])
    f["chunks"], f["bytes"] = chunks, fo + kinds * S * 4
json.dump(ix, open(dst + "/index.json", "w"), indent=1)
PY
}
for mode in numel padded gap; do
    case $mode in
    numel) pat="c/index.json: units\[[0-9]+\]: numel [0-9]+ is not the end of the unit's last tensor \([0-9]+\)" ;;
    padded) pat="c/index.json: units\[[0-9]+\]: padded [0-9]+ is not what the padding rule gives for numel [0-9]+ at shard_world 2" ;;
    gap) pat="c/index.json: units\[[0-9]+\]\.tensors\[[0-9]+\]: offset is not the previous tensor's end rounded up" ;;
    esac
    hostile $mode
    S0=$(snapshot)
    expect_fail "index_$mode" "$pat" "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
    test ! -e "$WORK/x.safetensors" || fail "export of a hostile index left a file behind"
    expect_fail "index_${mode}_reshard" "$pat" "$SHARDVIT" reshard "$WORK/c" "$WORK/hr/a/r" --world 3
    test ! -e "$WORK/hr" || fail "a reshard of a hostile index left $(find "$WORK/hr" | head -3)"
    expect_fail "index_${mode}_resume" "$pat" \
        timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 3 --resume "$WORK/c" --out "$WORK/hres"
    test ! -e "$WORK/hres/checkpoints/step_00000003" || fail "a resume from a hostile index saved a checkpoint"
    test "$(snapshot)" = "$S0" || fail "the hostile checkpoint was modified"
done
rm -rf "$WORK/c"
expect_fail no_ckpt "no checkpoint" "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
# an index.json or latest that is a looping or dangling link is that error, naming it, never
# "no checkpoint"
mkdir "$WORK/c"
ln -s index.json "$WORK/c/index.json"
expect_fail index_loop "c/index.json: Too many levels of symbolic links" \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
rm "$WORK/c/index.json"
ln -s nowhere.json "$WORK/c/index.json"
expect_fail index_dangling "c/index.json: No such file or directory" \
    "$SHARDVIT" reshard "$WORK/c" "$WORK/r" --world 3
test ! -e "$WORK/r" || fail "a failed reshard left its output"
rm "$WORK/c/index.json"
ln -s nowhere "$WORK/c/latest"
expect_fail latest_dangling "c/latest: No such file or directory" \
    "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"
rm -rf "$WORK/c"
test ! -e "$WORK/x.safetensors" || fail "export of a bad index left a file behind"

# a checkpoint of another model shape: error naming the tensor
expect_fail shape "tensor .* has shape \(.*\) in the checkpoint but \(.*\) in this model" \
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --dim 48 --steps 2 --resume "$SRC"

# malformed safetensors headers through the CLI (the reader validates every field)
printf '\x0e\x00\x00\x00\x00\x00\x00\x00{"a": {"dtype"' >"$WORK/bad1.safetensors"
expect_fail st_json "bad1.safetensors.*JSON error" "$SHARDVIT" import "$WORK/bad1.safetensors"
printf '\xff\xff\xff\xff\x00\x00\x00\x00{}' >"$WORK/bad2.safetensors"
expect_fail st_len "bad2.safetensors.*header length" \
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 0 --init-from "$WORK/bad2.safetensors"
echo "corrupt: all passed"
