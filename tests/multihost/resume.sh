#!/usr/bin/env bash
# A checkpoint written by 2 hosts x 2 ranks (full_shard, 4 shard files on the filesystem all
# hosts share) resumes on another host count: 1 host x 2 ranks (a 2-rank job on host h0 alone)
# and world 1, and continues from the saved step and sample position; the steps after the
# checkpoint and the final parameters match an uninterrupted 2 x 2 run within the tolerance of
# tests/ckpt/resume.sh for other world sizes (1e-4).
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
hrun full 4 --steps 6
hrun part 4 --steps 3
logline part "ranks: world 4, 2 on this node" >/dev/null
[ "$(ls "$WORK/part/checkpoints/step_00000003" | grep -c '\.bin$')" = 4 ] || fail "expected 4 shard files at step 3"
hrun h1x2 2 --steps 6 --resume "$WORK/part"
logline h1x2 "ranks: world 2, 2 on this node" >/dev/null
run w1 1 --steps 6 --resume "$WORK/part"
for r in h1x2 w1; do
    logline "$r" "resume: step 3, data position epoch 0 sample 72" >/dev/null
    compare "$r" full --first-step 4 --loss-rtol 1e-4 --param-atol 1e-4
done
echo "multihost resume: all passed"
