# Shared set-up of the train CLI checks (resume_guard.sh, start_refusals.sh, end_of_run.sh):
# tests/faults/lib.sh (WORK, fail, expect_fail / expect_ok, tree_sum, HOSTILE_KEEP_GOING), a tiny
# model on synthetic data in RUN, and t2 FLAGS...: train it on 2 ranks under a timeout.
# Source with SHARDVIT (binary) and MPIEXEC set.
source "$(dirname "${BASH_SOURCE[0]}")/../faults/lib.sh"
RUN="--dim 32 --depth 1 --heads 2 --batch-size 8 --synth-samples 64 --workers 1 --log-every 1 --mfu-calib-seconds 0"
t2() { timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --comm-timeout 30 "$@"; }
W=$WORK
