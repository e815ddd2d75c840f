# Shared helpers for the FSDP/CLI shell tests. Source after setting SHARDVIT (binary path).
set -euo pipefail
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
# A small model and data set: every world size 1..4 divides the global batch of 24.
TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24 --synth-samples 480 --log-every 1 --seed 7 --workers 1 --comm-timeout 60"
MPIEXEC=${MPIEXEC:-mpiexec}

# run NAME WORLD [flags...]: train into $WORK/NAME, params into $WORK/NAME.bin, log into $WORK/NAME.log
run() {
    local name=$1 world=$2
    shift 2
    if ! timeout 300 "$MPIEXEC" -n "$world" "$SHARDVIT" train $TINY --out "$WORK/$name" \
        --save-params "$WORK/$name.bin" "$@" >"$WORK/$name.log" 2>&1; then
        echo "FAIL: run $name (world $world, $*) failed:"
        tail -20 "$WORK/$name.log"
        exit 1
    fi
}

# compare A B [compare_runs.py flags]
compare() {
    local a=$1 b=$2
    shift 2
    echo -n "$a vs $b: "
    "$PY" "$HERE/compare_runs.py" "$WORK/$a" "$WORK/$b" "$WORK/$a.bin" "$WORK/$b.bin" "$@"
}

# logline NAME PATTERN: the first log line of run NAME matching PATTERN
logline() { grep -m1 -E "$2" "$WORK/$1.log" || { echo "FAIL: no '$2' in $1.log"; exit 1; }; }
