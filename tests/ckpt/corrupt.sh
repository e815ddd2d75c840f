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
rm -rf "$WORK/c"
expect_fail no_ckpt "no checkpoint" "$SHARDVIT" export "$WORK/c" "$WORK/x.safetensors"

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
