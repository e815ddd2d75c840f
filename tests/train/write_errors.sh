#!/usr/bin/env bash
# Write failures are errors naming the file and errno, never a silently short file: a full file
# system (a 96 KiB tmpfs: real ENOSPC) under metrics.jsonl and under --save-params; --save-params
# on a device (/dev/full) is refused up front, and so are end-of-run outputs on a read-only file
# system. Needs root to mount the tmpfs (CI runs as root);
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

# prep's tar shards on the full file system: the error says why (it said "write failed" only)
rc=0
timeout 120 "$SHARDVIT" prep fashion-mnist --out "$SMALL/fm" --limit 2000 --format tar >"$WORK/preptar.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/preptar.log")
test $rc = 1 || fail "prep --format tar on a full file system: exit $rc, expected 1"
grep -q "\.tar: write failed: No space left on device" "$WORK/preptar.log" || fail "prep's tar error does not say ENOSPC"
test -z "$(ls -A "$SMALL")" || fail "prep left on the full file system: $(ls -A "$SMALL")"
echo "prep --format tar: $(grep -m1 'write failed' "$WORK/preptar.log" | sed 's/.*error: //' | cut -c1-150)"

rc=0
timeout 60 "$SHARDVIT" train $RUN --steps 2 --save-params /dev/full >"$WORK/full.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/full.log")
test $rc = 2 || fail "--save-params /dev/full: exit $rc, expected 2 (refused)"

# a read-only file system under the end-of-run outputs (--save-params, --trace, bench --json, plan
# --trace, eval --out): refused before any work, naming the directory (train trained to the end,
# eval evaluated, bench ran every step, and then the write failed and the work was lost)
RO="$WORK/ro"
mkdir -p "$RO"
mount -t tmpfs -o ro,size=64k tmpfs "$RO" || fail "cannot mount a read-only tmpfs"
trap 'umount "$RO" 2>/dev/null; umount "$SMALL" 2>/dev/null; cleanup' EXIT
"$SHARDVIT" train $RUN --steps 2 --out "$WORK/ok" >"$WORK/ok.log" 2>&1 || { FAIL_LOGS=("$WORK/ok.log"); fail "train"; }
"$SHARDVIT" export "$WORK/ok" "$WORK/ok.safetensors" >"$WORK/okx.log" 2>&1 || fail "export"
ro_refused() { # NAME CMD...: exit 2 (eval: 1) before any work, naming the read-only directory
    local name=$1 rc=0
    shift
    timeout 120 "$@" >"$WORK/$name.log" 2>&1 || rc=$?
    FAIL_LOGS=("$WORK/$name.log")
    test $rc = 2 || { test $name = ro_eval && test $rc = 1; } ||
        fail "$name into a read-only file system: exit $rc, expected 2 (refused before any work)"
    grep -q "cannot write in $RO: Read-only file system" "$WORK/$name.log" || fail "$name: the refusal does not name $RO"
    grep -qE "info step [0-9]+/|eval at|top1 " "$WORK/$name.log" && fail "$name: work was done before the refusal"
    echo "$name: $(grep -m1 'cannot write in' "$WORK/$name.log" | cut -c1-150)"
}
ro_refused ro_params "$SHARDVIT" train $RUN --steps 3 --log-every 1 --save-params "$RO/p.bin"
ro_refused ro_trace "$SHARDVIT" train $RUN --steps 3 --log-every 1 --trace "$RO/t.json"
ro_refused ro_bench "$SHARDVIT" bench --model vit-28 --dim 36 --depth 2 --heads 3 --batch-size 8 --steps 2 --json "$RO/b.json"
ro_refused ro_plan "$SHARDVIT" plan --simulate --model vit-28 --dim 36 --depth 2 --heads 3 --trace "$RO/s.json"
ro_refused ro_eval "$SHARDVIT" eval --weights "$WORK/ok.safetensors" --data synthetic --synth-samples 16 --out "$RO/e"
echo "write_errors: all passed"
