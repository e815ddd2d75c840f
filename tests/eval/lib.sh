# Shared set-up for the tests/eval scripts: a small JPEG ImageFolder set (4 classes, 7 test
# images each: 28 samples, so batches of 6 leave a padded last batch at every world size) and
# the model flags that fit it. Source after setting SV (the shardvit binary).
set -euo pipefail
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-eval.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
MPIEXEC=${MPIEXEC:-mpiexec}
MODEL="--model vit-32 --img 32 --patch 8 --dim 32 --depth 2 --heads 2 --num-classes 4"
COMMON="--threads 1 --workers 1 --comm-timeout 60"
"$SV" prep synthetic --out "$WORK/data" --classes 4 --per-class 12 --test-per-class 7 --width 40 --height 32 \
    >"$WORK/prep.log" 2>&1 || { cat "$WORK/prep.log"; exit 1; }
# run LOG CMD...: run a command with its output in LOG; on failure show the end and stop.
run() {
    local log=$1
    shift
    if ! timeout 240 "$@" >"$log" 2>&1; then
        echo "FAIL: $*"
        tail -20 "$log"
        exit 1
    fi
}
