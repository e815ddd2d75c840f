#!/usr/bin/env bash
# The run directory (docs/checkpoints.md "Run directory"): two trainings on one --out fail fast
# naming the other process, and so does one given the first one's default checkpoint root
# (OUT/checkpoints) as --ckpt-dir or --out; "/", system directories, a file, and a non-empty directory that is
# not a run directory are refused before anything is written (their contents byte-identical);
# new and empty directories are accepted, an earlier run directory only to continue it
# (--resume: a new run there is refused, the earlier run byte-identical); --resume auto refuses a
# `latest` it cannot read and step directories without a `latest` of which none is complete
# instead of starting over;
# --save-params aimed at a FIFO or a directory is refused at the start, not after the training.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
set -e
RUN="$TINY --log-every 1 --comm-timeout 30"
snap() { (cd "$1" && find . -printf '%p %y %s\n' | sort && find . -type f -exec sha256sum {} + | sort) ; }

# refused: exit 2, one line naming the reason, nothing written
refused() { # refused WHY PATTERN [flags...]
    local why=$1 pat=$2 rc=0
    shift 2
    timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 2 "$@" >"$WORK/refused.log" 2>&1 || rc=$?
    FAIL_LOGS=("$WORK/refused.log")
    test $rc = 2 || fail "$why: exit $rc, expected 2"
    grep -qE -- "$pat" "$WORK/refused.log" || fail "$why: no message matching '$pat'"
    echo "refused ($why): $(grep -m1 -E -- "$pat" "$WORK/refused.log" | cut -c1-160)"
}
refused "--out /" "--out / is the root directory" --out /
refused "--out /etc/x" "inside the system directory /etc" --out /etc/shardvit-test-run
refused "--out /usr/.." "is the root directory" --out /usr/..
refused "--ckpt-dir /proc" "inside the system directory /proc" --ckpt-dir /proc/shardvit
test ! -e /etc/shardvit-test-run || fail "/etc/shardvit-test-run was created"
echo "hello" >"$WORK/file"
refused "--out FILE" "exists and is not a directory" --out "$WORK/file"
mkdir -p "$WORK/home/sub"
echo "my notes" >"$WORK/home/config.toml"
echo "x" >"$WORK/home/sub/data.bin"
before=$(snap "$WORK/home")
refused "non-empty foreign directory" "is a non-empty directory that is not a shardvit run directory" --out "$WORK/home"
test "$before" = "$(snap "$WORK/home")" || fail "the foreign directory changed"
mkfifo "$WORK/fifo.bin"
refused "--save-params FIFO" "save-params.*(not a regular file|FIFO)" --out "$WORK/ok0" --save-params "$WORK/fifo.bin"
refused "--trace FIFO" "train: --trace .*FIFO" --out "$WORK/ok0" --trace "$WORK/fifo.bin"
mkdir -p "$WORK/planted"
touch "$WORK/planted/.shardvit-run"
mkfifo "$WORK/planted/metrics.jsonl"
refused "FIFO named metrics.jsonl in the run directory" "metrics.jsonl is a FIFO" --out "$WORK/planted"
refused "--save-params directory" "train: --save-params .*(directory|refusing)" --out "$WORK/ok0" --save-params "$WORK/home"

# accepted: a new path, an empty directory, a run directory again with --resume
mkdir "$WORK/empty"
for out in "$WORK/new/deeper" "$WORK/empty"; do
    rc=0
    timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 2 --ckpt-every 1 --out "$out" >"$WORK/ok.log" 2>&1 || rc=$?
    FAIL_LOGS=("$WORK/ok.log")
    test $rc = 0 || fail "--out $out: exit $rc"
    test -f "$out/.shardvit-run" || fail "no run marker in $out"
done
# a new run in an earlier run's directory would replace its checkpoints and metrics: refused,
# with or without its checkpoints (metrics.jsonl alone is an earlier run too)
before=$(snap "$WORK/new/deeper")
refused "a new run over an earlier one" "holds an earlier run \(checkpoints\).*--resume auto" --out "$WORK/new/deeper"
test "$before" = "$(snap "$WORK/new/deeper")" || fail "the earlier run directory changed"
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 2 --out "$WORK/nockpt" >"$WORK/ok.log" 2>&1 ||
    fail "a second fresh run failed"
rm -r "$WORK/nockpt/checkpoints"
refused "a new run over an earlier one without checkpoints" "holds an earlier run \(metrics.jsonl\)" --out "$WORK/nockpt"
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 3 --out "$WORK/new/deeper" --resume auto >"$WORK/ok.log" 2>&1 ||
    { FAIL_LOGS=("$WORK/ok.log"); fail "--resume auto on the earlier run was refused"; }
grep -q "resumed from $WORK/new/deeper/checkpoints/step_00000002" "$WORK/ok.log" ||
    { FAIL_LOGS=("$WORK/ok.log"); fail "--resume auto did not continue the earlier run"; }
# a run directory written before the marker existed (config.toml + shardvit's metrics.jsonl) is
# accepted; the same two names holding someone else's files are not
rm "$WORK/empty/.shardvit-run"
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 3 --out "$WORK/empty" --resume auto >"$WORK/ok.log" 2>&1 ||
    fail "an earlier run directory without the marker was refused"
mkdir "$WORK/lookalike"
echo "keep" >"$WORK/lookalike/config.toml"
echo "keep too" >"$WORK/lookalike/metrics.jsonl"
before=$(snap "$WORK/lookalike")
refused "config.toml + a foreign metrics.jsonl" "not a shardvit run directory .*'(config.toml|metrics.jsonl)'" \
    --out "$WORK/lookalike" --resume auto
test "$before" = "$(snap "$WORK/lookalike")" || fail "the look-alike directory changed"
echo "accepted: new, empty, an earlier run directory to continue it"

# --resume auto never takes an unreadable `latest`, or step directories without one, for "no
# checkpoint": starting over would overwrite them (checkpoints and metrics.jsonl stay as they
# were; config.toml records each invocation's flags, a refused resume's too)
cp -a "$WORK/new/deeper" "$WORK/loop"
rm "$WORK/loop/checkpoints/latest"
ln -s latest "$WORK/loop/checkpoints/latest" # a link to itself
before=$(snap "$WORK/loop/checkpoints"; sha256sum <"$WORK/loop/metrics.jsonl")
rc=0
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 5 --out "$WORK/loop" --resume auto >"$WORK/loop.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/loop.log")
test $rc != 0 || fail "--resume auto with a looping latest: exit 0"
grep -q "latest: Too many levels of symbolic links" "$WORK/loop.log" || fail "the looping latest is not named"
test "$before" = "$(snap "$WORK/loop/checkpoints"; sha256sum <"$WORK/loop/metrics.jsonl")" || fail "the run with a looping latest changed"
rm "$WORK/loop/checkpoints/latest"
# step directories but no `latest`: the newest complete one is resumed (tests/ckpt/latest_missing.sh);
# none complete (index.json gone) is an error naming them
rm "$WORK/loop/checkpoints"/step_*/index.json
before=$(snap "$WORK/loop/checkpoints"; sha256sum <"$WORK/loop/metrics.jsonl")
rc=0
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 5 --out "$WORK/loop" --resume auto >"$WORK/loop.log" 2>&1 || rc=$?
test $rc = 2 || fail "--resume auto with incomplete step directories but no latest: exit $rc, expected 2"
grep -q "has step directories (step_0000000[0-9], ...) but no \`latest\`, and none of them is a complete" \
    "$WORK/loop.log" || fail "no message naming the step directories"
test "$before" = "$(snap "$WORK/loop/checkpoints"; sha256sum <"$WORK/loop/metrics.jsonl")" || fail "the run without latest changed"
echo "resume auto: a looping latest and a missing latest with incomplete step directories are errors"

# two trainings on one --out: the second fails within seconds and names the first
FAIL_LOGS=("$WORK/first.log" "$WORK/second.log")
"$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 100000 --out "$WORK/busy" >"$WORK/first.log" 2>&1 &
first=$!
for _ in $(seq 3000); do grep -q "info step 2/" "$WORK/first.log" && break; sleep 0.01; done
owner=$(rank_pid "$WORK/busy" 0) || fail "the first training is not running"
t0=$(date +%s.%N)
rc=0
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 5 --out "$WORK/busy" --resume auto >"$WORK/second.log" 2>&1 ||
    rc=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
test $rc = 2 || fail "second training on a busy --out: exit $rc, expected 2"
grep -q "run directory $WORK/busy is in use by another training (pid $owner on " "$WORK/second.log" ||
    fail "the message does not name pid $owner"
awk -v t="$took" 'BEGIN { exit !(t < 20) }' || fail "the second training took ${took}s to fail"
# its default checkpoint root is locked too: another training given it as --ckpt-dir or as --out
# is refused (before, both saved, rotated and moved `latest` in one directory, and an export of
# the first run's directory took the second run's model)
for how in --ckpt-dir --out; do
    rc=0
    other=$([ $how = --out ] || echo "--out $WORK/other")
    timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps 5 $other $how "$WORK/busy/checkpoints" \
        >"$WORK/second.log" 2>&1 || rc=$?
    test $rc = 2 || fail "a second training with $how on the first one's checkpoint root: exit $rc, expected 2"
    grep -q "$WORK/busy/checkpoints is in use by another training (pid $owner on " "$WORK/second.log" ||
        fail "$how on a busy checkpoint root: the message does not name pid $owner"
    test ! -e "$WORK/other" || fail "the refused training with $how left $WORK/other"
done
echo "busy checkpoint root: refused as --ckpt-dir and as --out"
kill -TERM $first
wait $first || true
no_leftovers "$WORK/busy"
echo "busy --out: refused in ${took}s naming pid $owner"
# after the first has ended (its lock went with it) the directory is free again (2 steps past the
# checkpoint it saved: a resume is never shorter than its checkpoint, docs/training.md "Resuming")
saved=$(sed 's/^step_0*//' "$WORK/busy/checkpoints/latest")
timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --steps $((saved + 2)) --out "$WORK/busy" --resume auto >"$WORK/after.log" 2>&1 ||
    { FAIL_LOGS=("$WORK/after.log"); fail "the run directory stayed locked after its training ended"; }
# a checkpoint root that is not one directory for all ranks (node-local storage on another node;
# here MPMD ranks in two working directories given the same relative --out): refused on every
# rank before the first step (before, all steps trained and the first save failed), nothing left
mkdir -p "$WORK/nodeA" "$WORK/nodeB"
rc=0
timeout 60 "$MPIEXEC" -n 1 -wdir "$WORK/nodeA" "$SHARDVIT" train $RUN --steps 3 --out run : \
    -n 1 -wdir "$WORK/nodeB" "$SHARDVIT" train $RUN --steps 3 --out run >"$WORK/split.log" 2>&1 || rc=$?
FAIL_LOGS=("$WORK/split.log")
test $rc = 2 || fail "a checkpoint root not shared by the ranks: exit $rc, expected 2"
grep -q "$WORK/nodeB/run/checkpoints/.shardvit-run is not the same directory on this rank as on rank 0" \
    "$WORK/split.log" || fail "no message naming the unshared checkpoint root"
# ... and what each rank found there: rank 0's lock (its pid, host and start), nothing on rank 1
grep -q "(rank 0's run: pid [0-9]* on .* since [0-9TZ:-]*; here No such file or directory)" "$WORK/split.log" ||
    fail "the message does not name rank 0's run and what rank 1 found"
if grep -q "info step 1/" "$WORK/split.log"; then fail "the ranks trained before the refusal"; fi
test ! -e "$WORK/nodeA/run" && test ! -e "$WORK/nodeB/run" || fail "the refused run left a directory"
echo "unshared checkpoint root: refused before the first step"
echo "run_dir: all passed"
