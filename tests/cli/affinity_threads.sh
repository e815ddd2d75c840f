#!/usr/bin/env bash
# Default thread counts follow the CPUs a process may use (its affinity mask: a Slurm cpuset,
# taskset, a container's --cpuset-cpus), not the CPUs the machine has online: a rank confined to
# one CPU computes with 1 thread (before, with as many as the machine has, oversubscribing the
# CPU it was given), and 2 ranks sharing the mask of 2 CPUs take 1 each. --threads still wins.
set -euo pipefail
SV=$1
MPIEXEC=${MPIEXEC:-mpiexec}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-affinity.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v taskset >/dev/null || { echo "SKIP: taskset (util-linux) not found"; exit 77; }
online=$(getconf _NPROCESSORS_ONLN)
[ "$online" -ge 2 ] || { echo "SKIP: one CPU online: a mask of one CPU changes nothing"; exit 77; }
TINY="--model vit-28 --dim 32 --depth 2 --heads 2 --batch-size 16 --synth-samples 64 --steps 2 --workers 1"
threads_of() { sed -nE 's/.*info arena: .* \(([0-9]+) threads?\) .*/\1/p' "$1" | head -1; }

taskset -c 0 "$SV" train $TINY >"$WORK/one.log" 2>&1 || { cat "$WORK/one.log"; fail "train under taskset -c 0"; }
t=$(threads_of "$WORK/one.log")
[ "$t" = 1 ] || { grep "arena" "$WORK/one.log"; fail "taskset -c 0: $t compute threads (want 1 of $online online)"; }
echo "ok taskset -c 0: 1 compute thread ($online CPUs online)"

taskset -c 0 "$SV" train $TINY --threads 2 >"$WORK/forced.log" 2>&1 || fail "train --threads 2 under taskset"
[ "$(threads_of "$WORK/forced.log")" = 2 ] || fail "--threads 2 under taskset -c 0 was not 2 threads"
echo "ok --threads 2 wins over the mask"

if command -v "$MPIEXEC" >/dev/null; then
    taskset -c 0,1 "$MPIEXEC" -n 2 "$SV" train $TINY >"$WORK/two.log" 2>&1 || { tail "$WORK/two.log"; fail "2 ranks"; }
    t=$(threads_of "$WORK/two.log")
    [ "$t" = 1 ] || fail "2 ranks sharing a mask of 2 CPUs: $t threads each (want 1)"
    echo "ok 2 ranks sharing a mask of 2 CPUs: 1 compute thread each"
    # each rank bound to a core of its own: 1 thread each, and the node's 2 cores are what MFU's
    # peak counts (not one rank's mask: "oversubscribed" with half the peak)
    "$MPIEXEC" -n 2 -bind-to core "$SV" bench --model vit-28 --dim 32 --depth 2 --heads 2 --batch-size 16 \
        --steps 2 --warmup 1 --json "$WORK/bound.json" >"$WORK/bound.log" 2>&1 || { tail "$WORK/bound.log"; fail "bound bench"; }
    grep -q '"oversubscribed":false' "$WORK/bound.json" && grep -q '"cores_used":2[,}]' "$WORK/bound.json" ||
        { grep -o '"oversubscribed":[a-z]*\|"cores_used":[0-9.]*' "$WORK/bound.json"; fail "2 bound ranks: not 2 cores, not oversubscribed"; }
    echo "ok 2 ranks bound to a core each: not oversubscribed, MFU over 2 cores"
fi
echo "affinity_threads: all passed"
