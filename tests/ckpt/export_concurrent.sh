#!/usr/bin/env bash
# Two exports into one directory run one after the other (an flock on a lock file of the
# directory in the temporary directory): each
# renames three files into place one by one (weights, config.json, classes.txt), and two at once
# could leave one model's weights beside the other's config.json, which eval then used with exit 0.
#   1. while the directory's lock is held (as another export holds it), export says it waits and
#      writes nothing; once the lock goes, it completes; a user's flock(1) on the directory itself
#      around the command does not make it wait;
#   2. two exports of models that differ only in their head count (same tensor shapes: only
#      config.json tells them apart), started together five times into one directory: the
#      weights and config.json left are always one export's pair;
#   3. no lock file is left in the temporary directory once the exports are done.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
RUN="--model vit-28 --dim 36 --depth 2 --batch-size 24 --synth-samples 48 --workers 1 --steps 1 --warmup 0"
timeout 120 "$SHARDVIT" train $RUN --heads 3 --out "$WORK/h3" >"$WORK/h3.log" 2>&1 || fail "training h3"
timeout 120 "$SHARDVIT" train $RUN --heads 2 --seed 3 --out "$WORK/h2" >"$WORK/h2.log" 2>&1 || fail "training h2"
mkdir -p "$WORK/ref3" "$WORK/ref2" "$WORK/out"
timeout 60 "$SHARDVIT" export "$WORK/h3" "$WORK/ref3/m.safetensors" >/dev/null 2>&1 || fail "export h3"
timeout 60 "$SHARDVIT" export "$WORK/h2" "$WORK/ref2/m.safetensors" >/dev/null 2>&1 || fail "export h2"

# 1. the lock held by another process (as an export holds it: the lock file of the output
# directory in the temporary directory): export waits
"$PY" - "$(export_lock "$WORK/out")" "$WORK/locked" <<'PYEOF' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(3)
PYEOF
holder=$!
for _ in $(seq 100); do [ -e "$WORK/locked" ] && break; sleep 0.05; done
[ -e "$WORK/locked" ] || fail "the lock holder did not start"
timeout 60 "$SHARDVIT" export "$WORK/h3" "$WORK/out/m.safetensors" >"$WORK/wait.log" 2>&1 &
exp=$!
sleep 1
grep -q "another export is writing into $WORK/out: waiting" "$WORK/wait.log" || fail "export did not wait: $(cat "$WORK/wait.log")"
[ ! -e "$WORK/out/m.safetensors" ] || fail "export wrote while the directory was locked"
wait $holder
wait $exp || fail "the waiting export failed: $(cat "$WORK/wait.log")"
cmp -s "$WORK/out/m.safetensors" "$WORK/ref3/m.safetensors" || fail "the export after the wait differs"
echo "ok: export waited for the directory's lock, then completed"
# a user's own flock on the output directory (flock(1) around the command) is not that lock
if command -v flock >/dev/null; then
    timeout 60 flock "$WORK/out" "$SHARDVIT" export "$WORK/h2" "$WORK/out/m.safetensors" >"$WORK/flock.log" 2>&1 ||
        fail "export under flock(1) on its output directory: exit $? $(cat "$WORK/flock.log")"
    cmp -s "$WORK/out/m.safetensors" "$WORK/ref2/m.safetensors" || fail "the export under flock(1) differs"
    echo "ok: export under flock(1) on its own output directory completed"
fi

# 2. concurrent exports leave one export's pair
for i in 1 2 3 4 5; do
    timeout 60 "$SHARDVIT" export "$WORK/h3" "$WORK/out/m.safetensors" >/dev/null 2>&1 &
    a=$!
    timeout 60 "$SHARDVIT" export "$WORK/h2" "$WORK/out/m.safetensors" >/dev/null 2>&1 &
    b=$!
    wait $a || fail "round $i: export h3 failed"
    wait $b || fail "round $i: export h2 failed"
    if cmp -s "$WORK/out/m.safetensors" "$WORK/ref3/m.safetensors"; then want=ref3; else want=ref2; fi
    cmp -s "$WORK/out/m.safetensors" "$WORK/$want/m.safetensors" || fail "round $i: weights of neither export"
    cmp -s "$WORK/out/config.json" "$WORK/$want/config.json" || fail "round $i: the weights of $want beside another config.json"
done
echo "ok: five rounds of two concurrent exports left one export's weights and config.json"

# 3. the last holder removed the lock file
[ ! -e "$(export_lock "$WORK/out")" ] || fail "the lock file $(export_lock "$WORK/out") was left behind"
echo "ok: no lock file left in the temporary directory"
echo PASS
