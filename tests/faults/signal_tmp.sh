#!/usr/bin/env bash
# A signal in the middle of writing (export, reshard) removes the command's unfinished
# temporaries and leaves the earlier outputs as they were (core/fileio.h
# sv_fileio_remove_tmp_on_signals). The command is held in the middle of a write by
# SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES (it writes that many bytes of a file, then waits), so
# the signal always arrives while a temporary exists; before the handler, each left its
# `*.tmp-XXXXXXXX` files or directories behind.
# Usage: signal_tmp.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
"$SHARDVIT" train $TINY --steps 2 --threads 1 --out "$WORK/run" >"$WORK/train.log" 2>&1 ||
    { FAIL_LOGS=("$WORK/train.log"); fail "train"; }

# stalled NAME SIG DIR CMD...: start CMD (writes under DIR) stalled after 4096 bytes of a file,
# wait for a temporary under DIR, send SIG; sets RC (the exit status)
stalled() {
    local name=$1 sig=$2 dir=$3
    shift 3
    SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES=4096 timeout -k 5 60 "$@" >"$WORK/$name.log" 2>&1 &
    local pid=$! n
    FAIL_LOGS=("$WORK/$name.log")
    for n in $(seq 400); do
        [ -n "$(find "$dir" -name '*.tmp-*' 2>/dev/null | head -1)" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$(find "$dir" -name '*.tmp-*' 2>/dev/null | head -1)" ] || fail "$name: no temporary appeared under $dir"
    sleep 0.2 # into the stalled write
    pkill -"$sig" -P $pid 2>/dev/null || kill -"$sig" $pid
    wait $pid
    RC=$?
}

# export: the staged weights (and the writer's own staging file), before the rename
mkdir -p "$WORK/ex"
stalled export_term TERM "$WORK/ex" "$SHARDVIT" export "$WORK/run" "$WORK/ex/model.safetensors"
[ $RC -eq 143 ] || fail "export_term: exit status $RC (want 143: died of SIGTERM)"
left=$(find "$WORK/ex" -mindepth 1 | head -3)
[ -z "$left" ] || fail "export_term: left behind: $left"
echo "ok export_term: SIGTERM during the write left nothing under ex/"
# an earlier export stays as it was
"$SHARDVIT" export "$WORK/run" "$WORK/ex/model.safetensors" >"$WORK/export.log" 2>&1 || fail "export"
S=$(tree_sum "$WORK/ex")
stalled export_int INT "$WORK/ex" "$SHARDVIT" export "$WORK/run" "$WORK/ex/model.safetensors"
[ $RC -eq 130 ] || fail "export_int: exit status $RC (want 130: died of SIGINT)"
[ "$(tree_sum "$WORK/ex")" = "$S" ] || fail "export_int: the earlier export changed or a temporary is left"
echo "ok export_int: SIGINT during the write kept the earlier export and left no temporary"

# reshard: the staging directory with the shard files written so far
mkdir -p "$WORK/rs"
stalled reshard_term TERM "$WORK/rs" "$SHARDVIT" reshard "$WORK/run" "$WORK/rs/out" --world 2
[ $RC -eq 143 ] || fail "reshard_term: exit status $RC (want 143)"
left=$(find "$WORK/rs" -mindepth 1 | head -3)
[ -z "$left" ] || fail "reshard_term: left behind: $left"
echo "ok reshard_term: SIGTERM during the write left nothing under rs/"
# bench: dies of the signal (no step-boundary stop: a benchmark cut short has no result), its
# --json and --trace never written and nothing left beside them
mkdir -p "$WORK/bn"
FAIL_LOGS=("$WORK/bench_term.log")
timeout -k 5 120 "$SHARDVIT" bench --model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24 --steps 100000 \
    --warmup 1 --calib-seconds 0 --threads 1 --json "$WORK/bn/r.json" --trace "$WORK/bn/t.json" >"$WORK/bench_term.log" 2>&1 &
pid=$!
for n in $(seq 600); do grep -q "ranks: world 1" "$WORK/bench_term.log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
sleep 1 # into the steps
kill -TERM $pid
wait $pid
RC=$?
[ $RC -eq 143 ] || fail "bench_term: exit status $RC (want 143: died of SIGTERM)"
left=$(find "$WORK/bn" -mindepth 1 | head -3)
[ -z "$left" ] || fail "bench_term: left behind: $left"
echo "ok bench_term: SIGTERM during the steps: died of it, nothing under bn/"
all_passed signal_tmp
