# Shared helpers for the fault-injection tests. Source with SHARDVIT (binary) and MPIEXEC set.
set -uo pipefail
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-faults.XXXXXX")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
PY=${PYTHON:-python3}
# A small model on synthetic data; every step takes a few milliseconds.
TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24 --synth-samples 480 --seed 7 --workers 1 --mfu-calib-seconds 0"
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
# HOSTILE_KEEP_GOING=1: report every failing check instead of stopping at the first (to show that
# each check fails on a build without the fixes); the script ends with all_passed NAME
if [ -n "${HOSTILE_KEEP_GOING:-}" ]; then
    NFAIL=0
    fail() { echo "FAIL: $*"; NFAIL=$((NFAIL + 1)); }
fi
all_passed() {
    [ "${NFAIL:-0}" -eq 0 ] || { echo "$1: ${NFAIL} checks failed"; exit 1; }
    echo "$1: all passed"
}

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

# The CLI checks of the hostile_* tests (they log to $WORK/NAME.log):
# expect_fail NAME PATTERN CMD...: CMD exits 1 or 2 (not a signal, not a timeout) and prints PATTERN
expect_fail() {
    local name=$1 pat=$2
    shift 2
    "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    FAIL_LOGS=("$WORK/$name.log")
    [ $rc -eq 1 ] || [ $rc -eq 2 ] || { fail "$name: exit status $rc (want 1 or 2)"; return; }
    grep -Eq -- "$pat" "$WORK/$name.log" || { fail "$name: no message matching '$pat'"; return; }
    echo "ok $name: $(grep -Em1 -- "$pat" "$WORK/$name.log" | cut -c1-220)"
}
# expect_ok NAME CMD...: CMD exits 0
expect_ok() {
    local name=$1
    shift
    local rc=0
    "$@" >"$WORK/$name.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || { FAIL_LOGS=("$WORK/$name.log"); fail "$name: exit status $rc"; return; }
}
# tree_sum PATH...: one hash over the names, file types, link targets and contents below PATH
tree_sum() {
    local p
    for p in "$@"; do
        [ -e "$p" ] || [ -L "$p" ] || { echo "missing $p"; continue; }
        find "$p" -printf '%y %p -> %l\n' | sort
        find "$p" -type f -print0 | sort -z | xargs -0 -r sha256sum
    done | sha256sum | cut -d' ' -f1
}
# saved_at LOG RUN SIG: prints N of LOG's last "stopped by SIG after step N with its checkpoint
# saved" line (the ranks' preemption decision) after checking that RUN/checkpoints/latest names
# step N; otherwise prints why and returns 1 (call as n=$(saved_at ...) || fail "$n")
saved_at() {
    local n latest
    n=$(grep -o "stopped by $3 after step [0-9]* with its checkpoint saved" "$1" | tail -1 | grep -o "[0-9]*" | tail -1)
    [ -n "$n" ] || { echo "no rank reported its preemption save after $3 ('stopped by $3 ... checkpoint saved')"; return 1; }
    latest=$(cat "$2/checkpoints/latest" 2>/dev/null)
    [ "$latest" = "$(printf 'step_%08d' "$n")" ] || { echo "latest is '$latest', not the step $n the ranks saved on $3"; return 1; }
    echo "$n"
}
no_tmp_left() { # DIR: no temporary of shardvit's (*.tmp-XXXXXXXX) left in DIR
    local left
    left=$(find "$1" -maxdepth 1 -name '*.tmp-*' ! -name out.tmp-00000000 | head -3) # that one is planted
    [ -z "$left" ] || fail "$2: temporaries left behind: $left"
}
export_lock() { # DIR: the path of export's lock file for output directory DIR (ckpt/ckpt_timm.c lock_out_dir)
    local t=${TMPDIR:-/tmp}
    case "$t" in /*) ;; *) t=/tmp ;; esac
    printf '%s/shardvit-export-%s.lock' "$t" "$(stat -c '%D' "$1")-$(printf '%x' "$(stat -c '%i' "$1")")"
}
