#!/usr/bin/env bash
# scripts/slurm/train.sbatch on a real single-node Slurm (tests/slurm/lib.sh; docs/slurm.md
# "The batch script"), each job at world 2 against an uninterrupted `mpiexec -n 2` run of the
# same command:
# - `scontrol requeue` of the running job: Slurm's SIGTERM reaches the ranks once, they save and
#   exit 75, the script does not requeue again, Slurm runs the job a second time, `--resume auto`
#   continues it, and the final parameters and checkpoint shards are bitwise the uninterrupted
#   run's; metrics.jsonl holds every step once.
# - SIGUSR1 to the batch shell only (what `#SBATCH --signal=B:USR1@60` sends before the time
#   limit; `scancel --batch --signal=USR1` sends the same request now): the script forwards it,
#   the ranks save and exit 75, the script requeues the job itself, the second run ends bitwise
#   equal as well.
# - scancel: the ranks save on Slurm's SIGTERM, the job stays cancelled (not requeued).
# The cluster's JobRequeue=0: the requeues work through the script's own --requeue.
# A requeued job is held ~120 s by Slurm (EligibleTime); 2 s after it is pending the test moves
# that to now (`scontrol update StartTime=now`).
SHARDVIT=$(realpath "$1")
source "$(dirname "$0")/../faults/lib.sh"
source "$(dirname "$0")/lib.sh"
set -e
SCRIPT=$(cd "$(dirname "$0")/../.." && pwd)/scripts/slurm/train.sbatch
sv_slurm_start
export SHARDVIT
STEPS=1200 # long enough that a signal sent at step 100 arrives mid-run under load (300 steps raced to the end)
RUN="$TINY --log-every 1 --comm-timeout 60 --steps $STEPS"

FAIL_LOGS=("$WORK/ref.log")
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" train $RUN --out "$WORK/ref" --save-params "$WORK/ref.bin" \
    >"$WORK/ref.log" 2>&1 || fail "uninterrupted mpiexec -n 2 run failed"

submit() { # submit NAME: the batch script's job training into $WORK/NAME; job id in $job
    FAIL_LOGS=("$WORK/$1.log" "$SL/log/slurmctld.log")
    job=$(sbatch --parsable -J "$1" -o "$WORK/$1.log" "$SCRIPT" $RUN --out "$WORK/$1" \
        --save-params "$WORK/$1.bin") || fail "$1: sbatch refused the job"
    test "$(sv_job "$job" Requeue)" = 1 || fail "$1: the script's --requeue is not in effect"
}
wait_log() { # wait_log NAME PATTERN: the job's output matches PATTERN (60 s at most)
    for _ in $(seq 600); do
        grep -qE "$2" "$WORK/$1.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "$1: no '$2' in the job's output"
}
# second_run NAME: the job is requeued (pending for its begin time, Restarts=1), starts again
# when released and completes; its parameters, final checkpoint shards and metrics are checked
second_run() {
    sv_job_wait "$job" "^PENDING " 60
    test "$(sv_job "$job" Restarts)" = 1 || fail "$1: Restarts=$(sv_job "$job" Restarts) after the requeue"
    echo "$1: requeued: $(sv_job "$job" JobState) $(sv_job "$job" Reason), eligible $(sv_job "$job" EligibleTime)"
    # 2 s later, not at once: slurmd refuses a job that starts within the second in which it
    # revoked the job's previous credential ("Job credential revoked": the job fails), which
    # Slurm's own delay avoids. (StartTime=now+2 would wait for the next periodic scheduling.)
    sleep 2
    scontrol update JobId="$job" StartTime=now || fail "$1: cannot move the begin time"
    sv_job_wait "$job" "$SV_JOB_ENDED" 120
    test "$(sv_job "$job" JobState) $(sv_job "$job" ExitCode) $(sv_job "$job" Restarts)" = "COMPLETED 0:0 1" ||
        fail "$1: job ended $(sv_job "$job" JobState), exit $(sv_job "$job" ExitCode), restarts $(sv_job "$job" Restarts)"
    grep -q "train.sbatch: job $job run 2 on" "$WORK/$1.log" || fail "$1: no second run in the output"
    test "$(world_of "$WORK/$1.log" | tr '\n' ' ')" = "2 2 " ||
        fail "$1: worlds '$(world_of "$WORK/$1.log" | tr '\n' ' ')', expected two runs of world 2"
    grep -q "resumed from $WORK/$1/checkpoints/step_$(printf %08d "$saved")" "$WORK/$1.log" ||
        fail "$1: the second run did not resume from step $saved"
    cmp "$WORK/$1.bin" "$WORK/ref.bin" || fail "$1: final parameters differ from the uninterrupted run"
    local s
    for s in "$WORK/ref/checkpoints/$(printf step_%08d $STEPS)"/shard_*.bin; do
        cmp "$s" "$WORK/$1/checkpoints/$(printf step_%08d $STEPS)/${s##*/}" || fail "$1: final checkpoint ${s##*/} differs"
    done
    "$PY" - "$WORK/$1/metrics.jsonl" $STEPS <<'PY' || fail "$1: metrics.jsonl"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if '"loss"' in l]
if steps != list(range(1, int(sys.argv[2]) + 1)):
    sys.exit(f"logged steps are not 1..{sys.argv[2]} once each ({len(steps)} records)")
PY
    no_leftovers "$WORK/$1"
}
saved_after() { # saved_after NAME SIGNAME: the step the ranks saved at when SIGNAME stopped them
    saved=$(sed -nE "s/.*stopped by $2 after step ([0-9]+) with its checkpoint saved.*/\1/p" "$WORK/$1.log" | head -1)
    [ -n "$saved" ] || fail "$1: the ranks did not stop on $2 with a checkpoint"
    [ "$saved" -ge 100 ] && [ "$saved" -lt $STEPS ] || fail "$1: stopped after step $saved"
}

# scontrol requeue of the running job
submit requeue
wait_log requeue "info step 100/"
scontrol requeue "$job" || fail "scontrol requeue $job failed"
wait_log requeue "train.sbatch: srun exit"
saved_after requeue SIGTERM
grep -q "train.sbatch: srun exit 75, signals: TERM$" "$WORK/requeue.log" || fail "requeue: $(grep "srun exit" "$WORK/requeue.log")"
! grep -q "requeueing job" "$WORK/requeue.log" || fail "requeue: the script requeued a job that Slurm requeues"
second_run requeue
echo "scontrol requeue: saved after step $saved, second run resumed, parameters and shards bitwise equal"

# SIGUSR1 to the batch shell (the time-limit warning of --signal=B:USR1@60)
submit usr1
wait_log usr1 "info step 100/"
scancel --batch --signal=USR1 "$job" || fail "scancel --batch --signal=USR1 failed"
wait_log usr1 "train.sbatch: srun exit"
saved_after usr1 SIGUSR1
grep -q "train.sbatch: srun exit 75, signals: USR1$" "$WORK/usr1.log" || fail "usr1: $(grep "srun exit" "$WORK/usr1.log")"
grep -q "requeueing job $job" "$WORK/usr1.log" || fail "usr1: the script did not requeue the job"
second_run usr1
echo "SIGUSR1 to the batch script: saved after step $saved, requeued by the script, resumed, bitwise equal"

# scancel: saved, not requeued
submit cancel
wait_log cancel "info step 100/"
scancel "$job" || fail "scancel failed"
sv_job_wait "$job" "$SV_JOB_ENDED" 60
wait_log cancel "train.sbatch: srun exit"
saved_after cancel SIGTERM
test "$(sv_job "$job" JobState) $(sv_job "$job" Restarts)" = "CANCELLED 0" ||
    fail "cancel: job $(sv_job "$job" JobState), restarts $(sv_job "$job" Restarts)"
test "$(cat "$WORK/cancel/checkpoints/latest")" = "step_$(printf %08d "$saved")" || fail "cancel: latest is not step $saved"
no_leftovers "$WORK/cancel"
echo "scancel: saved after step $saved, job cancelled, not requeued"

sv_slurm_stop_checked
echo "slurm_requeue: all passed"
