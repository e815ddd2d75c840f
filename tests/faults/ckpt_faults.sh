#!/usr/bin/env bash
# Checkpoint faults not covered by tests/ckpt/crash.sh and corrupt.sh (which kill rank 0 at each
# point of a save, fill the disk on every rank, and damage shards, index.json and safetensors
# headers):
#   1. disk full on rank 1 only (hydra's per-rank -env: SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES
#      for the second process) while it writes its shard of the step-4 save: every rank exits
#      1 within the bound, the error names rank 1's shard file and ENOSPC, no process is left,
#      `latest` still names the complete step 2, no partial step 4 is visible, and resuming
#      without the fault ends bit-identical to an uninterrupted run (training stops on a failed
#      save; the previous checkpoint stays intact and loadable);
#   2. a rank killed with SIGKILL from outside while the job saves a checkpoint every step: the
#      job ends non-zero with nothing left behind, and `latest` names a checkpoint that loads
#      and trains on;
#   3. an exported safetensors file truncated by a few bytes: `import` and `train --init-from`
#      refuse it naming the file (the data section has no checksum, so a flipped data bit is
#      not detectable by design; header damage is covered by corrupt.sh);
#   4. the file-size limit (ulimit -f) during export, reshard and a checkpoint save: exit 1 with
#      EFBIG named, as a full disk (SIGXFSZ killed them, leaving their temporaries).
# Usage: ckpt_faults.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
CK_ARGS="$TINY --log-every 1 --comm-timeout 30"
train() { # NAME [flags]: 2 ranks into $WORK/NAME
    local name=$1
    shift
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $CK_ARGS --out "$WORK/$name" --save-params "$WORK/$name.bin" "$@" \
        >"$WORK/$name.log" 2>&1
}
FAIL_LOGS=("$WORK/ref.log")
train ref --steps 4 || fail "reference run failed"

# ---- 1. ENOSPC on rank 1 only ------------------------------------------------------------
FAIL_LOGS=("$WORK/enospc.log")
train enospc --steps 2 --ckpt-every 2 || fail "first half failed"
CK=$WORK/enospc/checkpoints
t0=$(date +%s)
timeout 120 "$MPIEXEC" -n 1 "$SHARDVIT" train $CK_ARGS --out "$WORK/enospc" --steps 4 --ckpt-every 2 --resume auto : \
    -n 1 -env SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES 4096 "$SHARDVIT" train $CK_ARGS --out "$WORK/enospc" --steps 4 \
    --ckpt-every 2 --resume auto >"$WORK/enospc.log" 2>&1
rc=$?
el=$(($(date +%s) - t0))
[ $rc -eq 1 ] || fail "ENOSPC on rank 1: exit $rc (want 1)"
[ $el -le 60 ] || fail "ENOSPC on rank 1: took $el s"
grep -q "shard_00001-of-00002.bin.*No space left on device" "$WORK/enospc.log" ||
    fail "the error does not name rank 1's shard file and ENOSPC"
no_leftovers "$WORK/enospc"
[ "$(cat "$CK/latest")" = step_00000002 ] || fail "latest is '$(cat "$CK/latest")'"
[ -f "$CK/step_00000002/index.json" ] || fail "step 2 damaged"
[ ! -e "$CK/step_00000004" ] || fail "a partial step 4 became visible"
echo "ok: ENOSPC on rank 1 stopped the job (exit 1, ${el} s): $(grep -m1 'No space left' "$WORK/enospc.log" | cut -c1-160)"
train enospc --steps 4 --ckpt-every 2 --resume auto || fail "resume after ENOSPC failed"
[ ! -e "$CK/step_00000004.tmp" ] || fail "the partial step 4 was not cleaned up"
cmp -s "$WORK/enospc.bin" "$WORK/ref.bin" || fail "resumed run differs from the uninterrupted one"
echo "ok: resumed from step 2, result bit-identical"

# ---- 2. SIGKILL of rank 1 while saving every step ----------------------------------------
run="$WORK/killsave"
FAIL_LOGS=("$WORK/killsave.log")
"$MPIEXEC" -n 2 "$SHARDVIT" train $CK_ARGS --steps 100000 --ckpt-every 1 --keep 2 --out "$run" >"$WORK/killsave.log" 2>&1 &
mpid=$!
for _ in $(seq 600); do
    [ -f "$run/checkpoints/latest" ] && [ "$(wc -l <"$run/metrics.jsonl" 2>/dev/null || echo 0)" -ge 5 ] && break
    kill -0 $mpid 2>/dev/null || fail "job ended early"
    sleep 0.1
done
victim=$(rank_pid "$run" 1) || fail "rank 1 not found"
kill -KILL "$victim"
t0=$(date +%s)
while kill -0 $mpid 2>/dev/null; do
    [ $(($(date +%s) - t0)) -le 60 ] || fail "job still running 60 s after the kill"
    sleep 0.1
done
wait $mpid
rc=$?
[ $rc -ne 0 ] || fail "job exited 0 after a rank was killed"
no_leftovers "$run"
L=$(cat "$run/checkpoints/latest")
[ -f "$run/checkpoints/$L/index.json" ] || fail "latest names an incomplete checkpoint $L"
train killsave --ckpt-every 0 --resume auto --steps $((10#${L#step_} + 2)) ||
    fail "resume from $L after the kill failed"
grep -q "resumed from $run/checkpoints/$L" "$WORK/killsave.log" || fail "did not resume from $L"
echo "ok: SIGKILL of rank 1 during per-step saves (exit $rc); $L loads and training continues"

# ---- 3. truncated safetensors export ------------------------------------------------------
FAIL_LOGS=("$WORK/export.log" "$WORK/import.log")
"$SHARDVIT" export "$WORK/ref/checkpoints" "$WORK/m.safetensors" >"$WORK/export.log" 2>&1 || fail "export failed"
sz=$(stat -c %s "$WORK/m.safetensors")
head -c $((sz - 3)) "$WORK/m.safetensors" >"$WORK/t.safetensors"
"$SHARDVIT" import "$WORK/t.safetensors" --model vit-28 --dim 36 --depth 3 --heads 3 >"$WORK/import.log" 2>&1
rc=$?
[ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "import of a truncated file: exit $rc"
grep -q "t.safetensors" "$WORK/import.log" || fail "the error does not name the file"
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $CK_ARGS --steps 0 --init-from "$WORK/t.safetensors" --out "$WORK/t" \
    >"$WORK/initfrom.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "train --init-from a truncated file: exit $rc"
echo "ok: truncated safetensors refused: $(grep -m1 'error' "$WORK/import.log" | cut -c1-160)"

# ---- 4. the file-size limit (ulimit -f): as a full disk, not SIGXFSZ ------------------------
# each command fails with exit 1 naming the file and EFBIG, and leaves no temporary (SIGXFSZ
# killed them, exit 153, with the temporaries of the save / export / reshard left). train's limit
# leaves room for MPI's own shared-memory files (UCX writes 64 KiB pieces at start-up).
mkdir -p "$WORK/fsz"
fsz() { # NAME KIB DIR CMD...: CMD under a file-size limit of KIB KiB; exit 1, EFBIG named, no temporary under
    # DIR (a checkpoint's step_N.tmp staging directory aside: the next save removes it, docs/checkpoints.md)
    local name=$1 kib=$2 dir=$3 rc=0
    shift 3
    (ulimit -f "$kib" && timeout 120 "$@") >"$WORK/$name.log" 2>&1 || rc=$?
    FAIL_LOGS=("$WORK/$name.log")
    [ $rc = 1 ] || fail "$name under ulimit -f $kib: exit $rc, expected 1"
    grep -q "File too large" "$WORK/$name.log" || fail "$name under ulimit -f $kib: the error does not say 'File too large'"
    local left
    left=$(find "$dir" -name '*.tmp*' ! -name 'step_*.tmp' ! -path '*/step_*.tmp/*' | head -3)
    [ -z "$left" ] || fail "$name under ulimit -f $kib: left $left"
    echo "ok: $name under ulimit -f $kib: exit 1, $(grep -m1 'File too large' "$WORK/$name.log" | cut -c1-140)"
}
fsz export_fsz 32 "$WORK/fsz" "$SHARDVIT" export "$WORK/ref" "$WORK/fsz/model.safetensors"
fsz reshard_fsz 32 "$WORK/fsz" "$SHARDVIT" reshard "$WORK/ref" "$WORK/fsz/rs" --world 2
fsz train_fsz 8192 "$WORK/fsz" "$SHARDVIT" train --model vit-28 --batch-size 16 --synth-samples 64 --workers 1 \
    --steps 2 --ckpt-every 1 --out "$WORK/fsz/run"
test ! -e "$WORK/fsz/run/checkpoints/latest" && test ! -e "$WORK/fsz/run/checkpoints/step_00000001" ||
    fail "train under ulimit -f: a checkpoint named complete"
echo PASS
