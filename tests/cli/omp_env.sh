#!/usr/bin/env bash
# OpenMP's own environment cannot change a result: --threads 2 with OMP_DYNAMIC=true (libgomp may
# then start fewer threads on a busy machine), OMP_THREAD_LIMIT=1 or OMP_MAX_ACTIVE_LEVELS=0 (one
# thread per region either way) trains the same parameters, bit for bit, as the default run, and
# the log names the threads really used. The linear layers split their rows for the team they ask
# for; a smaller team left the missing workers' rows uncomputed (other losses and accuracies,
# exit 0). The backend now turns dynamic teams off and counts what the limits allow. And the
# process ends after its work under a tight address-space limit (OpenBLAS's stuck threads).
set -uo pipefail
SV=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-ompenv.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
A=(--model vit-28 --dim 96 --depth 2 --heads 3 --batch-size 64 --synth-samples 512 --steps 3 --threads 2 --seed 3
    --workers 1)
threads_of() { sed -nE 's/.*info arena: .* \(([0-9]+) threads?\) .*/\1/p' "$1" | head -1; }
for dt in fp32 bf16; do
    "$SV" train "${A[@]}" --param-dtype $dt --save-params "$WORK/ref.bin" >"$WORK/ref.log" 2>&1 ||
        { tail -5 "$WORK/ref.log"; fail "default run ($dt)"; }
    [ "$(threads_of "$WORK/ref.log")" = 2 ] || fail "the default run does not use 2 threads"
    for e in OMP_DYNAMIC=true:2 OMP_THREAD_LIMIT=1:1 OMP_MAX_ACTIVE_LEVELS=0:1; do
        env "${e%:*}" "$SV" train "${A[@]}" --param-dtype $dt --save-params "$WORK/x.bin" >"$WORK/x.log" 2>&1 ||
            { tail -5 "$WORK/x.log"; fail "${e%:*} ($dt)"; }
        cmp -s "$WORK/ref.bin" "$WORK/x.bin" || fail "${e%:*} ($dt): other parameters than the default run"
        t=$(threads_of "$WORK/x.log")
        [ "$t" = "${e#*:}" ] || fail "${e%:*} ($dt): the log says $t threads, want ${e#*:}"
        echo "ok $dt ${e%:*}: the default run's parameters bit for bit, $t thread(s) named"
    done
done
# bench states the threads it ran with: OMP_THREAD_LIMIT=1 with --threads 2 is 1 thread per rank,
# and its MFU is over 1 core (it said 2 threads and divided by 2 cores)
OMP_THREAD_LIMIT=1 "$SV" bench --model vit-28 --dim 96 --depth 2 --heads 3 --batch-size 32 --steps 2 --warmup 1 \
    --threads 2 --calib-seconds 0 --json "$WORK/b.json" >"$WORK/b.log" 2>&1 || { tail -5 "$WORK/b.log"; fail "bench"; }
python3 - "$WORK/b.json" <<'PY' || fail "bench under OMP_THREAD_LIMIT=1 states other threads"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["threads_per_rank"] == 1 and j["cores_used"] == 1, (j["threads_per_rank"], j["cores_used"])
print("ok bench under OMP_THREAD_LIMIT=1: threads_per_rank 1, cores_used 1")
PY
# An address-space limit near the process's size (ulimit -v): OpenBLAS's worker threads cannot
# allocate their buffers and retry for ever, and its destructor joined them, so eval wrote its
# results and never ended (and a failure there hung after its message). The process now ends
# after its work whatever the libraries' threads do. (OpenBLAS with its default thread count: its
# worker threads are the case, whatever the suite's environment sets.)
"$SV" train "${A[@]}" --steps 1 --out "$WORK/run" >"$WORK/run.log" 2>&1 || { tail -5 "$WORK/run.log"; fail "train"; }
for kib in 1000000 1050000 1100000; do
    rc=0
    (ulimit -v $kib && env -u OPENBLAS_NUM_THREADS timeout 60 "$SV" eval --ckpt "$WORK/run" --data synthetic --synth-samples 16 --batch-size 8 \
        --out "$WORK/ev$kib") >"$WORK/ev$kib.log" 2>&1 || rc=$?
    [ $rc != 124 ] || { tail -3 "$WORK/ev$kib.log"; fail "eval under ulimit -v $kib did not end within 60 s"; }
    echo "ok eval under ulimit -v $kib: ended, exit $rc ($(tail -1 "$WORK/ev$kib.log" | cut -c1-90))"
done
echo "omp_env: all passed"
