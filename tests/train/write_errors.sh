#!/usr/bin/env bash
# Write failures are errors naming the file and errno, never a silently short file: a full file
# system (a 96 KiB tmpfs: real ENOSPC) under metrics.jsonl and under --save-params; --save-params
# on a device (/dev/full) is refused up front. Needs root to mount the tmpfs (CI runs as root);
# elsewhere it skips with 77 and says so.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
set -e
RUN="$TINY --comm-timeout 30"
SMALL="$WORK/small"
mkdir -p "$SMALL"
if ! mount -t tmpfs -o size=96k tmpfs "$SMALL" 2>"$WORK/mount.err"; then
    echo "SKIP: cannot mount a tmpfs to fill ($(cat "$WORK/mount.err")); needs root"
    exit 77
fi
trap 'umount "$SMALL" 2>/dev/null; cleanup' EXIT

# metrics.jsonl: ~200 bytes a step (and TensorBoard ~400: its failure is a warning, the run goes on
# without it), so the file system is full after ~150 steps
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 2000 --log-every 1 --out "$SMALL/run" >"$WORK/metrics.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/metrics.log")
test $rc = 1 || fail "metrics.jsonl on a full file system: exit $rc, expected 1"
grep -qE -- "cannot write $SMALL/run/metrics.jsonl: No space left on device" "$WORK/metrics.log" ||
    fail "no error naming metrics.jsonl and ENOSPC"
no_leftovers "$SMALL/run"
echo "metrics.jsonl: $(grep -m1 'cannot write' "$WORK/metrics.log" | sed 's/.*error: //' | cut -c1-150)"
rm -rf "$SMALL/run"

# --save-params: 50950 parameters = 204 KB on the 96 KiB file system
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 2 --save-params "$SMALL/p.bin" >"$WORK/params.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/params.log")
test $rc = 1 || fail "--save-params on a full file system: exit $rc, expected 1"
grep -qE -- "p.bin.*No space left on device" "$WORK/params.log" || fail "no error naming the parameter file and ENOSPC"
test -z "$(ls -A "$SMALL")" || fail "left on the full file system: $(ls -A "$SMALL")"
echo "--save-params: $(grep -m1 'No space left' "$WORK/params.log" | sed 's/.*error: //' | cut -c1-150)"

rc=0
timeout 60 "$SHARDVIT" train $RUN --steps 2 --save-params /dev/full >"$WORK/full.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/full.log")
test $rc = 2 || fail "--save-params /dev/full: exit $rc, expected 2 (refused)"
echo "write_errors: all passed"
