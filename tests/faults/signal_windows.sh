#!/usr/bin/env bash
# Signals in the narrow windows of the commands other than train, and SIGHUP itself:
#   1. SIGPIPE: prep's progress lines on a stderr piped into `head -1` end it with SIGPIPE (exit
#      141) and its work directory and --out are removed (before: 20,000 JPEGs left in
#      OUT/.prep.tmp-*, and the same prep again was refused);
#   2. a signal handled as the mkdir of a temporary or of --out returns (strace injects SIGINT at
#      prep's first and second mkdir): nothing left (before: the directory, made but not yet
#      registered, stayed and the next prep was refused);
#   3. export over an earlier export in the same directory, SIGINT injected at each of its renames
#      in turn: the weights and config.json left are always one export's pair (before: cut after
#      the weights' rename, new weights stood beside the earlier config.json), no temporary left;
#   4. SIGHUP ends train (exit 129: UCX's debug-signal handler, installed by libucs through MPICH,
#      made train ignore it and run to its end with exit 0), and export / prep alike.
# 2 and 3 need strace with signal injection (scripts/setup.sh installs it): skipped (77) without.
# Usage: signal_windows.sh SHARDVIT MPIEXEC
SHARDVIT=$1 MPIEXEC=$2
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
cd "$WORK" || exit 1

# 1. SIGPIPE
set +e
"$SHARDVIT" prep synthetic --out pipe --classes 4 --per-class 5000 --test-per-class 10 --width 16 --height 16 2>&1 |
    head -1 >/dev/null
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 141 ] || fail "prep into a closed pipe: exit $rc, expected 141 (SIGPIPE)"
[ ! -e pipe ] || fail "prep ended by SIGPIPE left $(find pipe -maxdepth 1 | head -3 | tr '\n' ' ')"
echo "ok: SIGPIPE on prep's stderr removed its work directory and --out"

# 4. SIGHUP: train (a singleton MPI process, as the CPU laptop case runs it), export, prep
set +e
"$SHARDVIT" train $TINY --steps 100000 --threads 1 --log-every 1 >hup_train.log 2>&1 &
pid=$!
for _ in $(seq 3000); do grep -q "info step 2/" hup_train.log && break; sleep 0.01; done
kill -HUP $pid
for _ in $(seq 500); do kill -0 $pid 2>/dev/null || break; sleep 0.02; done
if kill -0 $pid 2>/dev/null; then
    kill -KILL $pid
    fail "train kept running after SIGHUP"
fi
wait $pid
rc=$?
set -e
FAIL_LOGS=(hup_train.log)
[ "$rc" = 129 ] || fail "train after SIGHUP: exit $rc, expected 129 (ended by the signal)"
echo "ok: SIGHUP ended train (exit $rc)"
# ... and under nohup (SIGHUP ignored by the parent) it stays ignored: libucs's constructor
# replaces an ignored SIGHUP too, and a first version of the reset made nohup runs die of it
set +e
(trap '' HUP && exec "$SHARDVIT" train $TINY --steps 30 --threads 1 --log-every 1 >nohup_train.log 2>&1) &
pid=$!
for _ in $(seq 3000); do grep -q "info step 2/" nohup_train.log && break; sleep 0.01; done
kill -HUP $pid
wait $pid
rc=$?
set -e
FAIL_LOGS=(nohup_train.log)
[ "$rc" = 0 ] && grep -q "info step 30/30" nohup_train.log || fail "train under nohup after SIGHUP: exit $rc"
echo "ok: under nohup, SIGHUP left train running to its end"
FAIL_LOGS=()

if ! command -v strace >/dev/null || ! strace -f -qq -o /dev/null -e inject=getpid:retval=1 true 2>/dev/null; then
    echo "SKIP: strace with fault injection is not available here (scripts/setup.sh installs strace)"
    exit 77
fi
inject() { # SYSCALLS WHEN CMD...: CMD with SIGINT delivered as the WHEN-th of those syscalls returns
    local calls=$1 when=$2
    shift 2
    strace -f -qq -o /dev/null -e trace="$calls" -e inject="$calls:signal=SIGINT:when=$when" "$@"
}

# 2. the mkdir window
for w in 1 2; do
    set +e
    inject mkdir $w "$SHARDVIT" prep synthetic --out mk --classes 4 --per-class 100 --test-per-class 10 \
        --width 16 --height 16 >mk$w.log 2>&1
    rc=$?
    set -e
    [ "$rc" = 130 ] || fail "prep, SIGINT at mkdir $w: exit $rc, expected 130"
    [ ! -e mk ] || fail "prep, SIGINT at mkdir $w: left $(find mk | head -3 | tr '\n' ' ')"
done
echo "ok: SIGINT as prep's mkdirs return left nothing"

# 3. export's renames
T="--model vit-28 --depth 2 --heads 3 --batch-size 24 --synth-samples 48 --workers 1 --steps 1 --threads 1"
"$SHARDVIT" train $T --dim 36 --out a >a.log 2>&1 || fail "train a"
"$SHARDVIT" train $T --dim 48 --out b >b.log 2>&1 || fail "train b" # another width: another config.json
mkdir -p ra rb
"$SHARDVIT" export a ra/m.safetensors >/dev/null 2>&1 || fail "export a"
"$SHARDVIT" export b rb/m.safetensors >/dev/null 2>&1 || fail "export b"
cmp -s ra/config.json rb/config.json && fail "the two exports' config.json are identical"
for w in 1 2 3; do
    rm -rf ex && mkdir ex
    cp rb/m.safetensors rb/config.json ex/ # an earlier export in the directory
    set +e
    inject rename,renameat2 $w "$SHARDVIT" export a ex/m.safetensors >ex$w.log 2>&1
    rc=$?
    set -e
    [ "$rc" = 130 ] || [ "$rc" = 0 ] || fail "export cut at rename $w: exit $rc ($(grep -m1 error ex$w.log))"
    [ "$w" != 2 ] || [ "$rc" = 130 ] || fail "export cut at rename 2 (its weights' commit): exit $rc, expected 130"
    if cmp -s ex/m.safetensors ra/m.safetensors; then
        cmp -s ex/config.json ra/config.json || fail "export cut at rename $w: the new weights beside the earlier config.json"
    else
        cmp -s ex/m.safetensors rb/m.safetensors && cmp -s ex/config.json rb/config.json ||
            fail "export cut at rename $w: neither export's pair"
    fi
    no_tmp_left ex "export cut at rename $w"
    [ ! -e "$(export_lock ex)" ] || fail "export cut at rename $w: its lock file $(export_lock ex) was left behind"
done
echo "ok: an export cut at any of its renames leaves one export's weights and config.json, and no lock file"
echo PASS
