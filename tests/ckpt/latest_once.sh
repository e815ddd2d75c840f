#!/usr/bin/env bash
# A checkpoint named by a run directory or root is read through its `latest`, which a run still
# saving moves: ranks that read it at different moments must never load different steps. Each
# rank is given another --ckpt / --resume here (mpiexec's MPMD form), which is what two reads
# around a save amount to. train --resume: every rank resumes rank 0's step (its start-up check),
# so the run equals a plain resume bit for bit; eval --ckpt: the ranks compare what they read and
# refuse a mix on every rank, naming both steps, before any weight is loaded (no eval.json).
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }

run full 2 --steps 6
run part 2 --steps 3 --ckpt-every 1
test "$(cat "$WORK/part/checkpoints/latest")" = step_00000003 || fail "latest of the first run"
cp -r "$WORK/part" "$WORK/part_copy"
run plain 2 --steps 6 --resume "$WORK/part/checkpoints"
cmp "$WORK/plain.bin" "$WORK/full.bin" || fail "a plain resume differs from the uninterrupted run"

# train: rank 1 is pointed at step 1 (as if it had read `latest` before step 2 was saved)
rc=0
timeout 300 "$MPIEXEC" -n 1 "$SHARDVIT" train $TINY --out "$WORK/mix" --save-params "$WORK/mix.bin" --steps 6 \
    --resume "$WORK/part_copy/checkpoints" : \
    -n 1 "$SHARDVIT" train $TINY --out "$WORK/mix" --save-params "$WORK/mix.bin" --steps 6 \
    --resume "$WORK/part_copy/checkpoints/step_00000001" >"$WORK/mix.log" 2>&1 || rc=$?
test $rc -eq 0 || { tail -20 "$WORK/mix.log"; fail "resume with the ranks reading different steps failed ($rc)"; }
grep -q "resume: step 3" "$WORK/mix.log" || fail "the ranks did not resume rank 0's step 3"
cmp "$WORK/mix.bin" "$WORK/full.bin" || fail "the resumed parameters differ from the uninterrupted run"
echo "ok: train --resume: every rank resumed rank 0's step; parameters equal the uninterrupted run's"

# eval: rank 1 reads step 1 where rank 0 reads step 3 -> refused on every rank, nothing written
EV="eval --data synthetic --synth-samples 48 --batch-size 24 --workers 1 --comm-timeout 60"
mkdir -p "$WORK/ev"
rc=0
timeout 300 "$MPIEXEC" -n 1 "$SHARDVIT" $EV --out "$WORK/ev" --ckpt "$WORK/part/checkpoints" : \
    -n 1 "$SHARDVIT" $EV --out "$WORK/ev" --ckpt "$WORK/part/checkpoints/step_00000001" >"$WORK/ev.log" 2>&1 || rc=$?
test $rc -ne 0 || fail "eval with the ranks reading different checkpoints succeeded"
grep -q "rank 0 loads .*step_00000003, this rank .*step_00000001: the checkpoint's \`latest\` changed" "$WORK/ev.log" ||
    { cat "$WORK/ev.log"; fail "the refusal does not name both steps"; }
test "$(grep -c "latest\` changed" "$WORK/ev.log")" -ge 2 || fail "not every rank reported the mix"
test ! -e "$WORK/ev/eval.json" || fail "a refused evaluation wrote eval.json"
# the same ranks on one checkpoint evaluate
timeout 300 "$MPIEXEC" -n 2 "$SHARDVIT" $EV --out "$WORK/ev" --ckpt "$WORK/part/checkpoints" >"$WORK/ev2.log" 2>&1 ||
    { cat "$WORK/ev2.log"; fail "eval of one checkpoint"; }
grep -q "step_00000003 (step 3)" "$WORK/ev2.log" || fail "eval did not load the latest step"
echo "ok: eval --ckpt: a mix of steps refused on every rank, naming both"
echo "latest_once: all passed"
