#!/usr/bin/env bash
# Resume: a run stopped after its step-3 checkpoint and resumed at the same world size gives the
# loss sequence, learning rates and final parameters of an uninterrupted run bit for bit; resumed
# at another world size it matches within fp tolerance and the data loader continues at the same
# global sample. --keep retention keeps only the newest checkpoints. A resume whose normalisation
# differs from the one the checkpoint recorded is refused naming both, and the named values resume.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
# tail_compare A B FIRST [--bitwise | RTOL]: losses/lr of steps >= FIRST, and final parameters
tail_compare() {
    "$PY" - "$WORK/$1" "$WORK/$2" "$3" "$4" <<'PY'
import json, struct, sys
a, b, first, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def recs(d):
    return {r["step"]: r for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r and r["step"] >= first}
ra, rb = recs(a), recs(b)
if sorted(ra) != sorted(rb) or not ra:
    sys.exit(f"FAIL: logged steps differ: {sorted(ra)} vs {sorted(rb)}")
pa, pb = open(a + ".bin", "rb").read(), open(b + ".bin", "rb").read()
if mode == "--bitwise":
    bad = [s for s in ra if ra[s]["loss"] != rb[s]["loss"] or ra[s]["lr"] != rb[s]["lr"]]
    if bad or pa != pb:
        sys.exit(f"FAIL: not bitwise identical (steps {bad}, params equal: {pa == pb})")
    print(f"steps {sorted(ra)}: losses, lr and {len(pa) // 4} parameters bitwise identical")
else:
    tol = float(mode)
    worst = max(abs(ra[s]["loss"] - rb[s]["loss"]) / abs(rb[s]["loss"]) for s in ra)
    fa, fb = struct.unpack(f"<{len(pa)//4}f", pa), struct.unpack(f"<{len(pb)//4}f", pb)
    wp = max(abs(x - y) for x, y in zip(fa, fb))
    lr_same = all(ra[s]["lr"] == rb[s]["lr"] for s in ra)
    print(f"steps {sorted(ra)}: loss rel diff {worst:.2e}, param abs diff {wp:.2e}, lr identical {lr_same}")
    if worst > tol or wp > tol or not lr_same:
        sys.exit("FAIL: beyond tolerance")
PY
}
cursor() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['sample_cursor'])" "$1/index.json"; }

run full 2 --steps 6 --ckpt-every 1 --keep 2
(cd "$WORK/full/checkpoints" && ls -d step_*) | tr '\n' ' ' | grep -qx "step_00000005 step_00000006 " ||
    fail "--keep 2 left: $(ls "$WORK/full/checkpoints")"
# interrupted run: killed while saving step 6, so step 3 is its newest complete checkpoint
rc=0
SHARDVIT_TEST_CRASH_AT=before_index@6 timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --steps 6 --ckpt-every 3 \
    --out "$WORK/part" >"$WORK/part.log" 2>&1 || rc=$?
test $rc -ne 0 || fail "the crash hook did not stop the run"
test "$(cat "$WORK/part/checkpoints/latest")" = step_00000003 || fail "latest after the crash"
test "$(cursor "$WORK/part/checkpoints/step_00000003")" = 72 || fail "sample cursor at step 3"
# same world size: bitwise
run same 2 --steps 6 --resume "$WORK/part"
grep -q "resume: step 3, data position epoch 0 sample 72" "$WORK/same.log" || fail "resume position"
tail_compare same full 4 --bitwise || exit 1
test "$(cursor "$WORK/same/checkpoints/step_00000006")" = "$(cursor "$WORK/full/checkpoints/step_00000006")" ||
    fail "sample cursor after the resumed run"
# other world sizes: same samples (loss within tolerance), same cursor
for W in 1 3; do
    run "w$W" "$W" --steps 6 --resume "$WORK/part/checkpoints"
    tail_compare "w$W" full 4 1e-4 || exit 1
    test "$(cursor "$WORK/w$W/checkpoints/step_00000006")" = 144 || fail "sample cursor at world $W"
done
# --resume auto with the run's own --out continues where it stopped and appends to metrics.jsonl
run auto 2 --steps 3
run auto 2 --steps 6 --resume auto
grep -q "resume: step 3" "$WORK/auto.log" || fail "--resume auto did not find step 3"
test "$(grep -c '"loss"' "$WORK/auto/metrics.jsonl")" = 6 || fail "metrics.jsonl of the resumed run"
cmp "$WORK/auto.bin" "$WORK/full.bin" || fail "--resume auto: parameters differ from the uninterrupted run"
# a resumed run whose normalisation differs from the recorded one (here --mean / --std; also a
# changed --init-from config.json) is refused naming both, before anything is loaded or written
cp "$WORK/auto/metrics.jsonl" "$WORK/auto_metrics.before"
rc=0
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $TINY --out "$WORK/auto" --steps 8 --resume auto --mean 0.25 --std 0.5 \
    >"$WORK/auto_norm.log" 2>&1 || rc=$?
test $rc -ne 0 || fail "a resume with another --mean / --std was not refused"
grep -q "records the training normalisation --mean .* --std .*, this run resolved --mean 0.25 --std 0.5" \
    "$WORK/auto_norm.log" || { cat "$WORK/auto_norm.log"; fail "the refusal does not name both normalisations"; }
cmp -s "$WORK/auto/metrics.jsonl" "$WORK/auto_metrics.before" || fail "the refused resume changed metrics.jsonl"
# the values the message names continue the run
recorded=$(grep -o "pass --mean [^ ]* --std [^ ]*" "$WORK/auto_norm.log" | head -1 | sed 's/^pass //')
run auto 2 --steps 7 --resume auto $recorded
grep -q "resume: step 6" "$WORK/auto.log" || fail "the recorded --mean / --std did not resume"
echo "resume: all passed"
