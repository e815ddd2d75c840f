#!/usr/bin/env bash
# Crash safety: kill -9 (SHARDVIT_TEST_CRASH_AT, a test hook in ckpt/ckpt_fsdp.c) at each point of
# a checkpoint save. The previous checkpoint stays loadable, `latest` names a complete one, the
# next save removes the leftover .tmp directory, and the resumed run ends exactly where an
# uninterrupted run ends.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
run ref 2 --steps 4
for P in after_shards before_index before_rename before_latest; do
    rc=0
    SHARDVIT_TEST_CRASH_AT=$P@4 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 4 --ckpt-every 2 \
        --out "$WORK/$P" >"$WORK/$P.crash.log" 2>&1 || rc=$?
    test $rc -ne 0 || fail "$P: the run was not killed"
    grep -q "killing the process at '$P'" "$WORK/$P.crash.log" || fail "$P: hook did not fire"
    CK=$WORK/$P/checkpoints
    L=$(cat "$CK/latest")
    test "$L" = step_00000002 || fail "$P: latest is '$L'"
    test -f "$CK/$L/index.json" || fail "$P: latest names an incomplete checkpoint"
    case $P in
    before_latest) test -f "$CK/step_00000004/index.json" || fail "$P: step 4 should be complete" ;;
    *) test -d "$CK/step_00000004.tmp" || fail "$P: expected the partial step_00000004.tmp"
       test ! -e "$CK/step_00000004" || fail "$P: a partial step 4 became visible" ;;
    esac
    # the previous checkpoint loads; the next save replaces the partial state
    run "$P" 2 --steps 4 --ckpt-every 2 --resume auto
    grep -q "resumed from $CK/step_00000002" "$WORK/$P.log" || fail "$P: did not resume from step 2"
    test ! -e "$CK/step_00000004.tmp" || fail "$P: the .tmp directory was not cleaned up"
    test "$(cat "$CK/latest")" = step_00000004 || fail "$P: latest after the resumed run"
    cmp "$WORK/$P.bin" "$WORK/ref.bin" || fail "$P: resumed parameters differ from the uninterrupted run"
    echo "$P: previous checkpoint loaded, .tmp cleaned, result bitwise equal"
done
# a full disk while writing a shard: the save fails cleanly, the previous checkpoint is intact
rc=0
SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES=1000 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY \
    --out "$WORK/full" --resume "$WORK/before_index/checkpoints/step_00000002" --ckpt-every 1 \
    --steps 3 >"$WORK/enospc.log" 2>&1 || rc=$?
test $rc -eq 1 || fail "ENOSPC: exit $rc"
grep -q "No space left on device" "$WORK/enospc.log" || fail "ENOSPC: no clear error"
echo "crash: all passed"
