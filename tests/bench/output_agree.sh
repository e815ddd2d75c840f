#!/bin/bash
# Usage: output_agree.sh SHARDVIT MPIEXEC
# bench's output checks are agreed over all ranks before anything runs: a path that one rank
# refuses stops every rank at once with that rank's message, even when the ranks see different
# files there (node-local storage). Simulated with 2 ranks in different working directories
# (mpiexec's -wdir per executable) and a relative --json / --trace path: only one rank sees a
# user's file there. Checks: both ranks exit 2 within 20 s (the communication timeout is 60 s),
# the refusing rank prints the message and the other rank the same message "(reported by rank
# R)", the user's file is byte-identical and nothing was written beside the other rank; with the
# same file seen by both ranks the same holds; with no file in the way bench runs and rank 0
# writes its result. Exit 77 without MPI.
set -u
SV=$1
case $SV in */*) SV=$(cd "$(dirname "$SV")" && pwd)/$(basename "$SV") ;; esac # the ranks start elsewhere
MPIEXEC=${2:-}
[ -n "$MPIEXEC" ] || { echo "SKIP: single-process build (the checks need 2 ranks)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() {
    echo "FAIL: $*"
    [ -f "$TMP/log" ] && { echo "---- log ----"; tail -30 "$TMP/log"; }
    exit 1
}
B=(bench --model vit-28 --img 28 --in-chans 3 --dim 36 --depth 2 --heads 3 --num-classes 3 --batch-size 4 --steps 1
    --warmup 0 --calib-seconds 0 --threads 1 --comm-timeout 60)
NOT="exists and is not an earlier"

# run2 DIR0 DIR1 ARGS...: bench on rank 0 in DIR0 and rank 1 in DIR1; sets rc and secs
run2() {
    local d0=$1 d1=$2
    shift 2
    local t0 t1
    t0=$(date +%s.%N)
    rc=0
    timeout 40 "$MPIEXEC" -n 1 -wdir "$d0" "$SV" "${B[@]}" "$@" : -n 1 -wdir "$d1" "$SV" "${B[@]}" "$@" \
        >"$TMP/log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
}

# refused NAME BAD_RANK WANT ARGS...: run2 in $TMP/r0, $TMP/r1 refuses on every rank, promptly
refused() {
    local name=$1 bad=$2 want=$3
    shift 3
    run2 "$TMP/r0" "$TMP/r1" "$@"
    [ "$rc" = 2 ] || fail "$name: exit status $rc after $secs s (want 2: every rank refuses)"
    awk -v s="$secs" 'BEGIN { exit !(s < 20) }' || fail "$name: took $secs s (a rank waited for the others)"
    local n
    n=$(grep -cF -- "$want" "$TMP/log")
    [ "$n" = 2 ] || fail "$name: the message on $n ranks (want 2): $want"
    if [ "$bad" != both ]; then
        local other=$((1 - bad))
        grep -F -- "$want" "$TMP/log" | grep -qF "(reported by rank $bad)" ||
            fail "$name: rank $other does not report rank $bad's refusal"
    fi
    echo "ok $name: both ranks exit 2 after $secs s: $(grep -m1 -F -- "$want" "$TMP/log" | cut -c1-200)"
}

mkdir -p "$TMP/r0" "$TMP/r1"
echo "my notes" >"$TMP/r1/out.json"
refused json_rank1 1 "--json out.json $NOT bench result" --json out.json
[ "$(cat "$TMP/r1/out.json")" = "my notes" ] || fail "the user's out.json (rank 1's) was changed"
[ -z "$(ls -A "$TMP/r0")" ] || fail "rank 0 wrote $(ls -A "$TMP/r0")"
mv "$TMP/r1/out.json" "$TMP/r0/out.json"
refused json_rank0 0 "--json out.json $NOT bench result" --json out.json
[ "$(cat "$TMP/r0/out.json")" = "my notes" ] || fail "the user's out.json (rank 0's) was changed"
[ -z "$(ls -A "$TMP/r1")" ] || fail "rank 1 wrote $(ls -A "$TMP/r1")"
rm "$TMP/r0/out.json"
# a trace part that only rank 1 sees (the parts of all ranks are checked by every rank)
echo "my notes" >"$TMP/r1/t.json.rank1"
refused trace_part_rank1 1 "--trace part t.json.rank1" --trace t.json
[ "$(cat "$TMP/r1/t.json.rank1")" = "my notes" ] || fail "the user's t.json.rank1 was changed"
rm "$TMP/r1/t.json.rank1"
# the same user's file seen by both ranks (one directory)
echo "my notes" >"$TMP/r0/out.json"
run2 "$TMP/r0" "$TMP/r0" --json out.json
[ "$rc" = 2 ] || fail "shared: exit status $rc (want 2)"
awk -v s="$secs" 'BEGIN { exit !(s < 20) }' || fail "shared: took $secs s"
[ "$(grep -cF -- "--json out.json $NOT bench result" "$TMP/log")" = 2 ] || fail "shared: the message not on both ranks"
[ "$(cat "$TMP/r0/out.json")" = "my notes" ] || fail "shared: the user's out.json was changed"
echo "ok shared: both ranks exit 2 after $secs s"
rm "$TMP/r0/out.json"
# nothing in the way: bench runs, rank 0 writes the result in its directory
run2 "$TMP/r0" "$TMP/r1" --json out.json
[ "$rc" = 0 ] || fail "accepted: exit status $rc"
grep -q '"img_per_s"' "$TMP/r0/out.json" || fail "accepted: rank 0 wrote no bench result"
[ -z "$(ls -A "$TMP/r1")" ] || fail "accepted: rank 1 wrote $(ls -A "$TMP/r1")"
echo "ok accepted: bench ran on 2 ranks after the agreed check"
echo "output_agree: all passed"
