#!/usr/bin/env bash
# shardvit under a real single-node Slurm (tests/slurm/lib.sh; docs/slurm.md "srun and MPICH"):
# `srun -n 2 --mpi=pmi2` starts the ranks of Debian's MPICH as one world of 2 whose training is
# bitwise the `mpiexec -n 2` run; `--mpi=none` would give each task a world of its own (two
# independent runs of world 1): every task refuses that; mpiexec inside an
# sbatch allocation (hydra launches its proxies through srun) is the same world-2 run again.
SHARDVIT=$1
source "$(dirname "$0")/../faults/lib.sh"
source "$(dirname "$0")/lib.sh"
set -e
sv_slurm_start
STEPS=40
RUN="$TINY --steps $STEPS --log-every 1 --comm-timeout 60"

# loss_at LOG STEP
loss_at() { sed -nE "s/.*info step $2\/$STEPS .* loss ([0-9.]+) .*/\1/p" "$1" | head -1; }

plugins=$(srun --mpi=list 2>&1 | tr -s ' \t\n' ' ')
echo "srun --mpi=list: $plugins"
grep -qw pmi2 <<<"$plugins" || fail "srun offers no pmi2 plugin"

FAIL_LOGS=("$WORK/ref.log")
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --save-params "$WORK/ref.bin" >"$WORK/ref.log" 2>&1 ||
    fail "mpiexec reference run failed"

# srun --mpi=pmi2: one world of 2 ranks that trains
FAIL_LOGS=("$WORK/pmi2.log")
timeout 120 srun -n 2 --mpi=pmi2 "$SHARDVIT" train $RUN --save-params "$WORK/pmi2.bin" >"$WORK/pmi2.log" 2>&1 ||
    fail "srun -n 2 --mpi=pmi2 failed"
test "$(world_of "$WORK/pmi2.log")" = 2 || fail "srun --mpi=pmi2: world '$(world_of "$WORK/pmi2.log")', expected one run of world 2"
grep -q "info done: final loss" "$WORK/pmi2.log" || fail "srun --mpi=pmi2: the run did not finish"
l1=$(loss_at "$WORK/pmi2.log" 1) l2=$(loss_at "$WORK/pmi2.log" $STEPS)
awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(b < a - 0.1) }' || fail "srun --mpi=pmi2: loss $l1 -> $l2 did not fall"
cmp "$WORK/pmi2.bin" "$WORK/ref.bin" || fail "srun --mpi=pmi2: parameters differ from the mpiexec -n 2 run"
echo "srun -n 2 --mpi=pmi2: world 2, loss $l1 -> $l2 in $STEPS steps, parameters bitwise those of mpiexec -n 2"

# srun --mpi=none: no PMI server, every MPICH task is a singleton: each task sees that it is one
# of 2 (SLURM_STEP_NUM_TASKS) in a world of 1 and refuses, instead of two runs training alone
FAIL_LOGS=("$WORK/none.log")
if timeout 120 srun -n 2 --mpi=none "$SHARDVIT" train $RUN --steps 3 >"$WORK/none.log" 2>&1; then
    fail "srun --mpi=none succeeded (two separate runs of world 1?)"
fi
n=$(grep -c "is one of 2 tasks (SLURM_STEP_NUM_TASKS=2) but MPI made it a world of 1 rank" "$WORK/none.log" || true)
test "$n" = 2 || fail "srun --mpi=none: $n of 2 tasks refused a world of 1"
grep -q "info step" "$WORK/none.log" && fail "srun --mpi=none: a task trained"
echo "srun -n 2 --mpi=none: both tasks refuse their world of 1 (no PMI for MPICH)"

# mpiexec inside a batch allocation: hydra's Slurm launcher starts its proxy with srun
FAIL_LOGS=("$WORK/hydra.log")
# shq WORD...: the words as one /bin/sh command line, each single-quoted (--wrap is run by sh)
shq() {
    local w out=""
    for w in "$@"; do out+="'${w//\'/\'\\\'\'}' "; done
    printf '%s' "${out% }"
}
# shellcheck disable=SC2086 # $RUN: a flag list, split on purpose
j=$(sbatch --parsable -n 2 -o "$WORK/hydra.log" --wrap \
    "$(shq "$MPIEXEC" -v -n 2 "$SHARDVIT" train $RUN --save-params "$WORK/hydra.bin")") || fail "sbatch refused the job"
sv_job_wait "$j" "$SV_JOB_ENDED" 120
test "$(sv_job "$j" JobState) $(sv_job "$j" ExitCode)" = "COMPLETED 0:0" ||
    fail "sbatch with mpiexec -n 2: job $(sv_job "$j" JobState), exit $(sv_job "$j" ExitCode)"
grep -q "Launch arguments: [^ ]*srun .*hydra_pmi_proxy .*--launcher slurm" "$WORK/hydra.log" ||
    fail "mpiexec in the allocation did not launch through srun"
test "$(world_of "$WORK/hydra.log")" = 2 || fail "mpiexec in sbatch: world '$(world_of "$WORK/hydra.log")'"
cmp "$WORK/hydra.bin" "$WORK/ref.bin" || fail "mpiexec in sbatch: parameters differ from the mpiexec -n 2 run"
echo "sbatch -n 2 + mpiexec -n 2 (hydra over srun): world 2, parameters bitwise those of mpiexec -n 2"

sv_slurm_stop_checked
echo "slurm_srun: all passed"
