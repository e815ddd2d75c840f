#!/usr/bin/env bash
# --resume auto without `latest` (docs/checkpoints.md "Run directory"): a kill between a save's
# rename of its complete step directory and its `latest` write (SHARDVIT_TEST_CRASH_AT
# before_latest, at the first save: a requeued job's SIGKILL can land there) must not end the
# requeued job. The same command with --resume auto resumes the newest complete step directory
# with a warning naming it, and its metrics and final parameters are bitwise those of an
# uninterrupted run (2 ranks). A newer step directory that is not complete (a shard truncated) is
# skipped, named; when none is complete the resume is refused with exit 2 and nothing changed; a
# kill before the rename (only step_*.tmp left) starts from scratch as a run without checkpoints
# does; an explicit --resume ROOT still needs `latest`.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
# same_metrics A B: the loss and lr of every step of metrics.jsonl, bitwise, and each step once
same_metrics() {
    "$PY" - "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" <<'PY'
import json, sys
def recs(p):
    out = [(r["step"], r["loss"], r["lr"]) for r in map(json.loads, open(p)) if "loss" in r]
    steps = [s for s, _, _ in out]
    if len(steps) != len(set(steps)):
        sys.exit(f"FAIL: {p} logs a step twice: {steps}")
    return out
a, b = recs(sys.argv[1]), recs(sys.argv[2])
if not a or a != b:
    sys.exit(f"FAIL: metrics differ:\n{a}\n{b}")
print(f"steps {a[0][0]}..{a[-1][0]}: losses and lr bitwise identical")
PY
}
crash() { # NAME POINT@STEP FLAGS...: a run killed by the crash hook
    local name=$1 at=$2 rc=0
    shift 2
    rm -rf "${WORK:?}/$name"
    SHARDVIT_TEST_CRASH_AT=$at timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --out "$WORK/$name" \
        --save-params "$WORK/$name.bin" "$@" >"$WORK/$name.crash.log" 2>&1 || rc=$?
    test $rc -ne 0 || fail "$name: the crash hook did not stop the run"
    grep -q "killing the process at" "$WORK/$name.crash.log" || fail "$name: the hook did not fire"
}
snap() { (cd "$1" && find . -printf '%p %y %s\n' | sort && find . -type f -exec sha256sum {} + | sort); }

run ref 2 --steps 6 --ckpt-every 3
# killed after step_00000003 was renamed into place, before the first `latest` was written
crash cl before_latest@3 --steps 6 --ckpt-every 3
CK=$WORK/cl/checkpoints
test ! -e "$CK/latest" || fail "the crash left a latest"
test -f "$CK/step_00000003/index.json" || fail "step 3 is not complete"
run cl 2 --steps 6 --ckpt-every 3 --resume auto
grep -q "WARN resume auto: $CK has no \`latest\`.*resuming the newest complete checkpoint there, $CK/step_00000003" \
    "$WORK/cl.log" || { tail -20 "$WORK/cl.log"; fail "no warning naming the step directory resumed"; }
grep -q "resume: step 3, data position" "$WORK/cl.log" || fail "did not resume step 3"
test "$(cat "$CK/latest")" = step_00000006 || fail "latest after the resumed run: $(cat "$CK/latest")"
same_metrics cl ref || exit 1
cmp "$WORK/cl.bin" "$WORK/ref.bin" || fail "final parameters differ from the uninterrupted run"
echo "before_latest at the first save: resumed step 3, bitwise the uninterrupted run"

# newest step directory incomplete (a shard cut short): skipped, named; the older one resumes
cp -a "$WORK/cl" "$WORK/skip"
rm "$WORK/skip/checkpoints/latest"
truncate -s -4 "$WORK/skip/checkpoints/step_00000006/shard_00001-of-00002.bin"
run skip 2 --steps 6 --ckpt-every 3 --resume auto
grep -q "resuming the newest complete checkpoint there, $WORK/skip/checkpoints/step_00000003; 1 newer step directory skipped, step_00000006 not complete: .*shard_00001-of-00002.bin is truncated" \
    "$WORK/skip.log" || { tail -20 "$WORK/skip.log"; fail "the incomplete newer step directory is not named"; }
grep -q "resume: step 3, data position" "$WORK/skip.log" || fail "did not resume step 3 past the incomplete step 6"
same_metrics skip ref || exit 1
cmp "$WORK/skip.bin" "$WORK/ref.bin" || fail "final parameters (incomplete step 6 skipped) differ"
echo "an incomplete newer step directory is skipped with a warning"

# thousands of newer incomplete step directories (empty: a save killed before any file, by hand):
# every one is looked at, whatever readdir's order, and the complete step 6 below them resumes
cp -a "$WORK/cl" "$WORK/many"
rm "$WORK/many/checkpoints/latest"
(cd "$WORK/many/checkpoints" && seq -f "step_%08.0f" 7 4206 | xargs mkdir)
run many 2 --steps 6 --ckpt-every 3 --resume auto
grep -q "resuming the newest complete checkpoint there, $WORK/many/checkpoints/step_00000006; 4200 newer step directories skipped" \
    "$WORK/many.log" || { grep -m1 "resume auto" "$WORK/many.log"; fail "4200 newer incomplete step directories: step 6 not resumed"; }
echo "4200 newer incomplete step directories looked at, the complete step 6 resumed"

# no complete step directory: refused, exit 2, nothing changed
cp -a "$WORK/cl" "$WORK/none"
rm "$WORK/none/checkpoints/latest" "$WORK/none/checkpoints/step_00000003/index.json"
truncate -s -4 "$WORK/none/checkpoints/step_00000006/shard_00000-of-00002.bin"
before=$(snap "$WORK/none/checkpoints"; sha256sum <"$WORK/none/metrics.jsonl")
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --out "$WORK/none" --steps 6 --ckpt-every 3 --resume auto \
    >"$WORK/none.log" 2>&1 || rc=$?
test $rc = 2 || { tail -5 "$WORK/none.log"; fail "no complete step directory: exit $rc, want 2"; }
grep -q "has step directories (step_00000006, ...) but no \`latest\`, and none of them is a complete checkpoint" \
    "$WORK/none.log" || { tail -5 "$WORK/none.log"; fail "the refusal does not say why"; }
test "$before" = "$(snap "$WORK/none/checkpoints"; sha256sum <"$WORK/none/metrics.jsonl")" ||
    fail "the refused resume changed the checkpoints or metrics.jsonl"
echo "no complete step directory: refused, nothing changed"

# an explicit checkpoint root still means its `latest`
rm -f "$WORK/skip/checkpoints/latest"
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --out "$WORK/explicit2" --steps 6 --resume "$WORK/skip/checkpoints" \
    >"$WORK/explicit2.log" 2>&1 || rc=$?
test $rc != 0 || fail "--resume ROOT without latest was accepted"
grep -q "no checkpoint (neither index.json, latest, nor checkpoints/latest is there)" "$WORK/explicit2.log" ||
    { tail -5 "$WORK/explicit2.log"; fail "--resume ROOT without latest: unexpected message"; }
echo "--resume ROOT without latest: still an error"

# killed before the rename of the first save: only step_00000003.tmp, no checkpoint: from scratch
crash tmp before_rename@3 --steps 6 --ckpt-every 3
test -d "$WORK/tmp/checkpoints/step_00000003.tmp" || fail "expected the partial step_00000003.tmp"
run tmp 2 --steps 6 --ckpt-every 3 --resume auto
grep -q "no checkpoint in $WORK/tmp/checkpoints; starting from scratch" "$WORK/tmp.log" ||
    { tail -20 "$WORK/tmp.log"; fail "a partial first save did not start from scratch"; }
test ! -e "$WORK/tmp/checkpoints/step_00000003.tmp" || fail "the .tmp directory was not cleaned up"
same_metrics tmp ref || exit 1
cmp "$WORK/tmp.bin" "$WORK/ref.bin" || fail "the restarted run differs from the uninterrupted run"
echo "before_rename at the first save: started from scratch, bitwise the uninterrupted run"
echo "latest_missing: all passed"
