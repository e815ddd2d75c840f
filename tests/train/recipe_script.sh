#!/usr/bin/env bash
# scripts/fashion_mnist_94.sh, the documented >= 94% recipe, end to end at a smoke-test size (1,000
# Fashion-MNIST images, one epoch per stage), including a stop: stage 1 stopped by a signal while
# mpiexec returns 0 (hydra 4.0 sometimes does: docs/checkpoints.md "Preemption"; an `mpiexec`
# first on PATH stands in for that race) must end the script with 75 and no stage-1 export (it
# exported the 4-step checkpoint and took the stage as done for good); run again, the script
# continues stage 1 from its checkpoint and finishes every stage.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
SCRIPT=$HERE/../../scripts/fashion_mnist_94.sh
REAL_MPIEXEC=$(command -v "$MPIEXEC") || fail "no $MPIEXEC"
"$SHARDVIT" prep fashion-mnist --out "$WORK/data" --limit 1000 >"$WORK/prep.log" 2>&1 ||
    { FAIL_LOGS=("$WORK/prep.log"); fail "prep fashion-mnist (Debian's dataset-fashion-mnist)"; }
mkdir -p "$WORK/bin"
cat >"$WORK/bin/mpiexec" <<SH
#!/usr/bin/env bash
"$REAL_MPIEXEC" "\$@"
echo "mpiexec stand-in: the ranks' status \$?, reported as 0" >&2
exit 0
SH
chmod +x "$WORK/bin/mpiexec"
run() { # LOG [VAR=VALUE...]: the script at smoke-test size (the settings given win); its status in $rc
    local log=$1
    shift
    rc=0
    env PATH="$WORK/bin:$PATH" DATA="$WORK/data" OUT="$WORK/out" SHARDVIT="$SHARDVIT" EPOCHS1=1 EPOCHS2=1 \
        EPOCHS3=1 "$@" timeout 600 bash "$SCRIPT" >"$log" 2>&1 || rc=$?
}
FAIL_LOGS=("$WORK/stop.log")
run "$WORK/stop.log" SHARDVIT_TEST_SIGNAL_AT=3:1
grep -q "stopped by SIGTERM after step 4 with its checkpoint saved" "$WORK/stop.log" || fail "stage 1 was not stopped"
grep -q "reported as 0" "$WORK/stop.log" || fail "the mpiexec stand-in was not used"
test $rc = 75 || fail "a stopped stage: the script exited $rc, expected 75"
grep -q "stage stage1 stopped before its end" "$WORK/stop.log" || fail "no message about the stopped stage"
test ! -e "$WORK/out/stage1-weights/model.safetensors" || fail "a stopped stage 1 was exported (and so taken as done)"
echo "ok: stage 1 stopped (mpiexec reporting 0): the script exits 75, nothing exported"
FAIL_LOGS=("$WORK/again.log")
run "$WORK/again.log"
test $rc = 0 || fail "the script run again: exit $rc"
grep -q "resum.*step_00000004" "$WORK/again.log" || fail "stage 1 did not continue from its step-4 checkpoint"
for s in stage1 stage2 stage3; do
    test -s "$WORK/out/$s-weights/model.safetensors" || fail "no export of $s"
    test -s "$WORK/out/$s/eval.json" || fail "no eval.json of $s"
done
grep -q "fashion_mnist_94: raw weights .*% test top-1" "$WORK/again.log" || fail "no closing accuracy line"
echo "ok: run again, stage 1 continued from step 4 and all three stages finished and exported"
# stage 1 trained before but not exported (the script stopped, an export failed), run again for
# two epochs and stopped mid-way while mpiexec reports 0: the eval.json of the earlier, shorter
# run does not make it finished
rm -r "$WORK/out/stage1-weights"
FAIL_LOGS=("$WORK/longer.log")
run "$WORK/longer.log" SHARDVIT_TEST_SIGNAL_AT=9:1 EPOCHS1=2
grep -q "stopped by SIGTERM after step 10 with its checkpoint saved" "$WORK/longer.log" || fail "the longer stage 1 was not stopped"
test $rc = 75 || fail "a stopped longer stage beside an earlier eval.json: the script exited $rc, expected 75"
test ! -e "$WORK/out/stage1-weights/model.safetensors" || fail "a stopped stage 1 was exported (an earlier eval.json)"
echo "ok: an earlier run's eval.json does not count: the stopped longer stage exits 75, nothing exported"
