#!/usr/bin/env bash
# The environment overrides reach the libraries through app/ (app/env_overrides.h,
# docs/environment.md), which are the only place reading them:
#   1. a malformed SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES is a usage error before the command
#      runs: exit 2, one line naming the variable and its value;
#   2. SHARDVIT_COMM_CHUNK_BYTES reaches the MPI communicator: set on both ranks, the chunked
#      collectives (4 KiB per MPI call) end with the same parameters as the default chunk; set
#      on one rank only (hydra's per-rank -env), the ranks disagree on the chunk size and the
#      run stops with a usage error naming it.
# SHARDVIT_TEST_CRASH_AT is exercised by tests/ckpt/crash.sh, the write fault itself by
# faults_ckpt_faults and ckpt_crash, SHARDVIT_CLOCK's setter by test_clock_mono.
# Usage: env_overrides.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
ARGS="$TINY --steps 3 --log-every 1 --comm-timeout 30"

# ---- 1. malformed byte count -------------------------------------------------------------
err=$(SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES=lots "$SHARDVIT" info --model vit-ti16 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] || fail "SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES=lots: exit $rc (want 2): $err"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "more than one line: $err"
grep -qF "shardvit info: SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES=lots: expected a non-negative byte count" <<<"$err" ||
    fail "message: $err"
echo "ok: malformed SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES -> $err"

# ---- 2. SHARDVIT_COMM_CHUNK_BYTES --------------------------------------------------------
run() { # NAME MPIEXEC-ARGS...: output into $WORK/NAME.log
    local name=$1
    shift
    FAIL_LOGS=("$WORK/$name.log")
    timeout 120 "$MPIEXEC" "$@" >"$WORK/$name.log" 2>&1 </dev/null
}
run ref -n 2 "$SHARDVIT" train $ARGS --save-params "$WORK/ref.bin" || fail "reference run failed"
run chunked -n 2 -env SHARDVIT_COMM_CHUNK_BYTES 4096 "$SHARDVIT" train $ARGS --save-params "$WORK/chunked.bin" ||
    fail "run with 4 KiB chunks failed"
cmp -s "$WORK/ref.bin" "$WORK/chunked.bin" || fail "4 KiB chunks changed the final parameters"
echo "ok: SHARDVIT_COMM_CHUNK_BYTES=4096 on both ranks, same final parameters"
run odd -n 1 -env SHARDVIT_COMM_CHUNK_BYTES 4096 "$SHARDVIT" train $ARGS : -n 1 "$SHARDVIT" train $ARGS
rc=$?
[ $rc -eq 2 ] || fail "SHARDVIT_COMM_CHUNK_BYTES on one rank only: exit $rc (want 2)"
grep -q "ranks disagree on the chunk size (4096 vs 16777216 bytes; SHARDVIT_COMM_CHUNK_BYTES)" "$WORK/odd.log" ||
    fail "the error does not name the disagreeing chunk sizes"
echo "ok: SHARDVIT_COMM_CHUNK_BYTES on one rank only -> usage error naming it"
echo "env_overrides: OK"
