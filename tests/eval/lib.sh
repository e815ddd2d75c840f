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
# expect_fail NAME TIMEOUT CMD...: CMD must exit 1 (not 0, not a timeout) within TIMEOUT seconds;
# its output is in $WORK/NAME.log (the script defines fail)
expect_fail() {
    local name=$1 tmo=$2 rc=0 t0=$SECONDS
    shift 2
    timeout "$tmo" "$@" >"$WORK/$name.log" 2>&1 </dev/null || rc=$?
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$name: still running after ${tmo} s (a rank hangs?)"
    [ $rc -eq 1 ] || {
        tail -5 "$WORK/$name.log"
        fail "$name: exit $rc, expected 1"
    }
    echo "ok: $name failed (exit 1) in $((SECONDS - t0)) s"
}
# error_says NAME TEXT: the first error line of $WORK/NAME.log contains TEXT
error_says() {
    local err
    err=$(grep -m1 'error:' "$WORK/$1.log" || true)
    [[ "$err" == *"$2"* ]] || fail "$1: the error does not say '$2': ${err:-no error line}"
}
