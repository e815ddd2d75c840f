#!/usr/bin/env bash
# Save at world 4, load at 1, 2, 3 (and export from each): the exported full tensors and the
# final parameters are bitwise equal. Offline reshard 4 -> 3 gives exactly the files a 3-rank run
# saves for the same state, and 4 -> 3 -> 4 reproduces the original shard files byte for byte.
# hybrid_shard / no_shard: only the first replica group writes; resharded, they are the files of
# a full_shard run (and the index says so). An unknown strategy name is refused.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
CK=$WORK/a4/checkpoints
run a4 4 --steps 3
test "$(cat "$CK/latest")" = step_00000003 || fail "latest is '$(cat "$CK/latest")'"
# the model must exercise a unit whose size the world sizes do not divide
"$PY" - "$CK/step_00000003/index.json" <<'PY' || fail "index.json layout"
import json, sys
ix = json.load(open(sys.argv[1]))
assert ix["format_version"] == 1 and ix["shard_world"] == 4 and ix["world_size"] == 4
assert len(ix["files"]) == 4 and ix["step"] == 3 and ix["sample_cursor"] == 72
sizes = [u["numel"] for u in ix["units"]]
assert any(n % 4 for n in sizes) and any(n % 3 for n in sizes), sizes
PY
"$SHARDVIT" export "$CK" "$WORK/e4.safetensors" >/dev/null 2>&1 || fail "export of the world-4 checkpoint"
for W in 1 2 3; do
    # --steps 3 from step 3: nothing to train; the run saves what it loaded at world W
    run "l$W" "$W" --steps 3 --resume "$CK"
    grep -q "resumed from $CK/step_00000003" "$WORK/l$W.log" || fail "l$W did not resume"
    "$SHARDVIT" export "$WORK/l$W" "$WORK/e$W.safetensors" >/dev/null 2>&1 || fail "export at world $W"
    cmp "$WORK/e4.safetensors" "$WORK/e$W.safetensors" || fail "export after loading at world $W differs"
    cmp "$WORK/a4.bin" "$WORK/l$W.bin" || fail "parameters after loading at world $W differ"
    echo "world 4 -> $W: exported tensors and parameters bitwise equal"
done
"$SHARDVIT" reshard "$CK" "$WORK/r3" --world 3 >/dev/null || fail "reshard 4 -> 3"
"$SHARDVIT" reshard "$WORK/r3" "$WORK/r4" --world 4 >/dev/null || fail "reshard 3 -> 4"
for R in 0 1 2; do # master, m and v of the offline reshard == what a 3-rank run saved
    f=shard_0000$R-of-00003.bin
    cmp "$WORK/r3/$f" "$WORK/l3/checkpoints/step_00000003/$f" || fail "reshard 4 -> 3: $f differs from a 3-rank save"
done
for R in 0 1 2 3; do
    f=shard_0000$R-of-00004.bin
    cmp "$WORK/r4/$f" "$CK/step_00000003/$f" || fail "reshard 4 -> 3 -> 4: $f differs"
done
"$SHARDVIT" reshard "$CK" "$WORK/r3" --world 3 >/dev/null 2>&1 && fail "reshard overwrote an existing directory"
echo "reshard 4 -> 3 -> 4: shard files bitwise identical"
# a reshard stopped by a signal in the middle of writing removes its temporary and the parent
# directories of OUT it made (the last made first, each only while empty), and nothing else: the
# empty sig/ was there before (SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES holds it in a write)
mkdir "$WORK/sig"
SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES=1000 timeout -k 5 60 "$SHARDVIT" reshard "$CK" "$WORK/sig/a/../b/c/out" \
    --world 2 >"$WORK/sig.log" 2>&1 &
PID=$!
for n in $(seq 400); do
    [ -n "$(find "$WORK/sig" -name '*.tmp-*' 2>/dev/null | head -1)" ] && break
    kill -0 $PID 2>/dev/null || break
    sleep 0.05
done
[ -n "$(find "$WORK/sig" -name '*.tmp-*' | head -1)" ] || { cat "$WORK/sig.log"; fail "no reshard temporary appeared"; }
sleep 0.2 # into the stalled write
pkill -INT -P $PID 2>/dev/null || kill -INT $PID
RC=0
wait $PID || RC=$?
test $RC -eq 130 || { cat "$WORK/sig.log"; fail "reshard stopped by SIGINT: exit status $RC (want 130)"; }
test -d "$WORK/sig" || fail "the reshard stopped by a signal removed a directory it did not make"
test -z "$(ls -A "$WORK/sig")" || fail "the reshard stopped by a signal left $(find "$WORK/sig" | head -3)"
echo "reshard stopped by SIGINT: temporary and the directories it made removed, sig/ kept"
# hybrid_shard: 2 groups of 2 => 2 files; no_shard: 1 file. Both load at other world sizes.
run h4 4 --steps 2 --strategy hybrid_shard --shard-group 2
ls "$WORK/h4/checkpoints/step_00000002" | grep -c '^shard_' | grep -qx 2 || fail "hybrid_shard wrote other than 2 files"
run n2 2 --steps 2 --strategy no_shard
ls "$WORK/n2/checkpoints/step_00000002" | grep -c '^shard_' | grep -qx 1 || fail "no_shard wrote other than 1 file"
run h4l3 3 --steps 2 --resume "$WORK/h4/checkpoints/step_00000002"
cmp "$WORK/h4.bin" "$WORK/h4l3.bin" || fail "hybrid checkpoint loaded at world 3 differs"
run n2l3 3 --steps 2 --resume "$WORK/n2" --strategy hybrid_shard --shard-group 1
cmp "$WORK/n2.bin" "$WORK/n2l3.bin" || fail "no_shard checkpoint loaded as hybrid_shard at world 3 differs"
# a no_shard / hybrid_shard checkpoint resharded for 3 ranks holds the files of a full_shard run of
# 3 (its index says so: no_shard means W = 1), and loads as before
for S in n2 h4; do
    "$SHARDVIT" reshard "$WORK/$S/checkpoints/step_00000002" "$WORK/${S}r3" --world 3 >/dev/null || fail "reshard $S -> 3"
    "$PY" - "$WORK/${S}r3/index.json" <<'PY' || fail "reshard $S -> 3: index.json strategy / world"
import json, sys
ix = json.load(open(sys.argv[1]))
assert ix["strategy"] == "full_shard" and ix["shard_world"] == 3 and ix["world_size"] == 3, ix["strategy"]
PY
done
run n2r3l 3 --steps 2 --resume "$WORK/n2r3"
cmp "$WORK/n2.bin" "$WORK/n2r3l.bin" || fail "no_shard checkpoint resharded to 3 and loaded at world 3 differs"
# a strategy name the format does not know is a format error naming the file
cp -r "$WORK/n2r3" "$WORK/bogus"
sed -i 's/"strategy": "full_shard"/"strategy": "bogus"/' "$WORK/bogus/index.json"
grep -q '"strategy": "bogus"' "$WORK/bogus/index.json" || fail "could not write the bogus strategy"
"$SHARDVIT" reshard "$WORK/bogus" "$WORK/bogus2" --world 2 >"$WORK/bogus.log" 2>&1 && fail "a bogus strategy was resharded"
grep -q 'index.json: strategy "bogus" is not full_shard' "$WORK/bogus.log" || { cat "$WORK/bogus.log"; fail "bogus strategy: message"; }
test ! -e "$WORK/bogus2" || fail "a refused reshard left its output"
echo "no_shard / hybrid_shard resharded: full_shard files; an unknown strategy refused"
echo "reshard: all passed"
