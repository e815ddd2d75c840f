# A single-node Slurm cluster for the tests (docs/slurm.md "Single-node setup"): Debian's
# slurm-wlm 22.05 and munge, configured here from scratch in a temporary directory: a munge key
# and munged on a private socket, a generated slurm.conf (localhost, 2 CPUs, free ports, no
# cgroups: proctrack/linuxproc, task/none), slurmctld and slurmd as root. Source it after
# tests/faults/lib.sh (WORK, fail, FAIL_LOGS); then call sv_slurm_start. Afterwards SLURM_CONF is
# exported, so srun / sbatch / scontrol / squeue talk to this cluster only. On exit (trap, also on
# failure) every job is cancelled and every process of this cluster is ended: the daemons, their
# slurmstepd and the jobs' processes (all carry SLURM_CONF=<this dir>/slurm.conf in their
# environment). Where Slurm cannot start (not root, packages missing, a daemon that fails) the
# test is skipped with 77 and the reason (a daemon's log tail).
SL="$WORK/slurm"
SL_PIDS=()
SL_STOPPED=""

sv_slurm_skip() { # sv_slurm_skip REASON [LOG...]: exit 77 (cleanup runs through the trap)
    echo "SKIP (not a pass): $1"
    shift
    for f in "$@"; do [ -f "$f" ] && { echo "---- $f (last 20 lines) ----"; tail -20 "$f"; }; done
    exit 77
}

# sv_slurm_procs DIR: pids of processes (other than this shell) that belong to the cluster of DIR:
# its slurm.conf in their environment or DIR in their command line
sv_slurm_procs() {
    local p
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" = $$ ] && continue
        if grep -qzx "SLURM_CONF=$1/slurm.conf" "/proc/$p/environ" 2>/dev/null ||
            { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF -- "$1/"; then
            echo "$p"
        fi
    done
}

sv_slurm_stop() { # idempotent: cancel every job, end the daemons, end whatever is left
    [ -f "$SL/slurm.conf" ] && [ -z "${SL_STOPPED:-}" ] || return 0
    SL_STOPPED=1
    local left
    if [ -n "${SL_PIDS[0]:-}" ] && kill -0 "${SL_PIDS[0]}" 2>/dev/null; then # slurmctld is up
        scancel --quiet --user=root 2>/dev/null
        for _ in $(seq 40); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.25
        done
    fi
    [ ${#SL_PIDS[@]} -gt 0 ] && kill -TERM "${SL_PIDS[@]}" 2>/dev/null
    [ -f "$SL/run/munged.pid" ] && kill -TERM "$(cat "$SL/run/munged.pid")" 2>/dev/null
    for _ in $(seq 40); do
        left=$(sv_slurm_procs "$SL")
        [ -z "$left" ] && return 0
        sleep 0.25
    done
    echo "slurm: ending leftover processes: $(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)" 2>/dev/null | tr '\n' ';')"
    kill -9 $left 2>/dev/null
    return 1
}

# at the end of a test: the cluster stops cleanly, no process of it (daemon, step, task) is left
sv_slurm_stop_checked() {
    sv_slurm_stop || fail "processes of the cluster were still there after the daemons were stopped"
    wait "${SL_PIDS[@]}" 2>/dev/null || true
    local left
    left=$(sv_slurm_procs "$SL")
    [ -z "$left" ] || fail "processes left behind: $left"
    echo "slurm: stopped; no process of the cluster is left"
}

# world_of LOG: the world size of each shardvit run in LOG, one line per run
world_of() { sed -nE 's/.*info training .* global batch [0-9]+ = ([0-9]+) ranks x .*/\1/p' "$1"; }

# sv_job JOB FIELD: a field of `scontrol show job` (JobState, Reason, Restarts, ExitCode, Requeue)
sv_job() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }

SV_JOB_ENDED='^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE) '
# sv_job_wait JOB REGEX SECONDS: wait until the job's "JobState Reason" matches REGEX
sv_job_wait() {
    local st=""
    for _ in $(seq $(($3 * 10))); do
        st="$(sv_job "$1" JobState) $(sv_job "$1" Reason)"
        [[ $st =~ $2 ]] && return 0
        sleep 0.1
    done
    fail "job $1: state '$st' after $3 s, expected /$2/"
}

# a cluster of an earlier run of these tests whose shell was killed before its trap ran
sv_slurm_reap_stale() {
    local d owner
    for d in "${TMPDIR:-/tmp}"/shardvit-faults.*/slurm; do
        [ -f "$d/owner" ] || continue
        owner=$(cat "$d/owner")
        kill -0 "$owner" 2>/dev/null && continue
        echo "slurm: ending the processes of a stale test cluster in $d"
        kill -9 $(sv_slurm_procs "$d") 2>/dev/null || true
        rm -f "$d/owner"
    done
}

sv_free_port() { # a TCP port that nothing listens on now
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# sv_slurm_wait_idle SECONDS: the node is up and idle (1 at once when a daemon has exited)
sv_slurm_wait_idle() {
    local st=""
    for _ in $(seq $(($1 * 4))); do
        kill -0 "${SL_PIDS[0]}" 2>/dev/null && kill -0 "${SL_PIDS[1]}" 2>/dev/null || return 1
        st=$(timeout 5 sinfo -h -n "$SL_NODE" -o %T 2>/dev/null)
        [ "$st" = idle ] && return 0
        sleep 0.25
    done
    echo "node state: '${st:-no answer}'"
    return 1
}

sv_slurm_start() {
    [ "$(id -u)" = 0 ] || sv_slurm_skip "the single-node Slurm cluster needs root (slurmd runs tasks as their user)"
    local b
    for b in munged mungekey slurmctld slurmd srun sbatch scontrol squeue sinfo scancel; do
        command -v $b >/dev/null ||
            sv_slurm_skip "$b not found: Debian's slurm-wlm and munge are not installed (scripts/setup.sh installs them)"
    done
    sv_slurm_reap_stale
    chmod 755 "$WORK" # munged wants its socket's directories searchable by all
    mkdir -p "$SL/state" "$SL/spool" "$SL/log"
    mkdir -m 700 "$SL/key"
    mkdir -m 755 "$SL/run"
    echo $$ >"$SL/owner"
    export SLURM_CONF="$SL/slurm.conf"
    mungekey --create --keyfile="$SL/key/munge.key" >"$SL/log/mungekey.log" 2>&1 ||
        sv_slurm_skip "mungekey failed" "$SL/log/mungekey.log"
    munged --key-file="$SL/key/munge.key" --socket="$SL/run/munge.socket" --pid-file="$SL/run/munged.pid" \
        --log-file="$SL/log/munged.log" --seed-file="$SL/key/munged.seed" </dev/null >>"$SL/log/munged.log" 2>&1 ||
        sv_slurm_skip "munged failed to start" "$SL/log/munged.log"
    SL_NODE=$(hostname -s)
    local ctld_port slurmd_port
    ctld_port=$(sv_free_port) && slurmd_port=$(sv_free_port) || fail "no free TCP port"
    : >"$SL/plugstack.conf"
    cat >"$SLURM_CONF" <<CONF
# generated by tests/slurm/lib.sh: one node (this machine), 2 CPUs, everything under $SL
ClusterName=shardvit
SlurmctldHost=$SL_NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo="socket=$SL/run/munge.socket"
StateSaveLocation="$SL/state"
SlurmdSpoolDir="$SL/spool"
SlurmctldPidFile="$SL/run/slurmctld.pid"
SlurmdPidFile="$SL/run/slurmd.pid"
SlurmctldLogFile="$SL/log/slurmctld.log"
SlurmdLogFile="$SL/log/slurmd.log"
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig="$SL/plugstack.conf"
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
# batch jobs are not requeueable by default here: a job needs its own --requeue (as
# scripts/slurm/train.sbatch has) for scontrol requeue to work
JobRequeue=0
KillWait=30
MinJobAge=600
NodeName=$SL_NODE NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=$SL_NODE Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$SL/log/slurmctld.out" 2>&1 &
    SL_PIDS+=($!)
    slurmd -D -f "$SLURM_CONF" -N "$SL_NODE" </dev/null >"$SL/log/slurmd.out" 2>&1 &
    SL_PIDS+=($!)
    if ! sv_slurm_wait_idle 30; then
        kill -0 "${SL_PIDS[0]}" 2>/dev/null || sv_slurm_skip "slurmctld exited" "$SL/log/slurmctld.log" "$SL/log/slurmctld.out"
        kill -0 "${SL_PIDS[1]}" 2>/dev/null || sv_slurm_skip "slurmd exited" "$SL/log/slurmd.log" "$SL/log/slurmd.out"
        sv_slurm_skip "the node did not become idle in 30 s" "$SL/log/slurmctld.log" "$SL/log/slurmd.log"
    fi
    echo "slurm: $(slurmctld -V) on $SL_NODE (2 CPUs), slurmctld port $ctld_port, slurmd port $slurmd_port"
}

trap 'sv_slurm_stop; cleanup' EXIT
