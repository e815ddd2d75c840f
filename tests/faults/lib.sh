# Shared helpers for the fault-injection tests. Source with SHARDVIT (binary) and MPIEXEC set.
set -uo pipefail
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-faults.XXXXXX")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
PY=${PYTHON:-python3}
# A small model on synthetic data; every step takes a few milliseconds.
TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24 --synth-samples 480 --seed 7 --workers 1"
cleanup() {
    # never leave a process of this test behind, even when an assertion failed
    local left
    left=$(pgrep -f -- "$WORK" || true)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    for f in "${FAIL_LOGS[@]:-}"; do
        [ -f "$f" ] && { echo "---- $f (last 30 lines) ----"; tail -30 "$f"; }
    done
    exit 1
}
FAIL_LOGS=()

# procs_of TAG: pids of processes whose command line contains TAG (this test's paths)
procs_of() { pgrep -f -- "$1" | grep -vx "$$" || true; }

# rank_pid TAG R: pid of the shardvit process that hydra started as rank R (PMI_RANK in its
# environment), among processes whose command line contains TAG
rank_pid() {
    local p
    for p in $(pgrep -f -- "shardvit train .*$1" || true); do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = shardvit ] || continue
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMI_RANK=$2"; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# no_leftovers TAG: assert (after a short grace period) that no process mentions TAG
no_leftovers() {
    local left=""
    for _ in $(seq 20); do
        left=$(procs_of "$1")
        [ -z "$left" ] && return 0
        sleep 0.25
    done
    ps -o pid,stat,args -p $(echo $left | tr ' ' ',') 2>/dev/null
    fail "processes left behind: $left"
}

# metric_values FILE KEY: the KEY values of metrics.jsonl, one per line
metric_values() { grep -o "\"$2\":[^,}]*" "$1" | cut -d: -f2; }
