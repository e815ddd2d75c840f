# Shared helpers for the multi-host tests: tests/fsdp/lib.sh (WORK, TINY, run, compare, logline)
# plus MH_HOSTS fake hosts from netns_hosts.sh (default 2), removed again when the test exits,
# however it exits. Source after setting SHARDVIT; set MH_HOSTS first for another host count, and
# MH_LINK for links other than veth pairs (netns_hosts.sh up's link options, e.g. "--delay-ms 5";
# delay links need DELAYLINK, the delaylink program).
#
#   HMPIEXEC            an mpiexec that places ranks on the hosts, PPN (default 2) per host, in
#                       host order: rank r runs on host r / PPN
#   mh_relink [OPTS]    replace the hosts by new ones whose links have netns_hosts.sh up's
#                       options OPTS (none: veth pairs); same names, HMPIEXEC follows
#   hrun NAME W [flags] tests/fsdp/lib.sh's `run` across the hosts (W ranks, PPN per host), with
#                       one known MPICH 4.0.2 hang tolerated (below)
#   host_bytes I        bytes host I has received + sent on its link so far
#   host_procs I [PAT]  pids of the processes running in host I (whose command matches PAT)
#   brun JSON N PPN ... `shardvit bench ARGS` across the hosts (N ranks, PPN per host), its JSON
#                       result into the file JSON (for the bench/ scripts)
#   shape "TC ARGS"     set (or, with "", clear) a root qdisc on the eth0 of hosts 0 and 1
#   tcp_probe rtt N | tcp_probe bulk BYTES | tcp_probe cpu SECONDS
#                       tests/multihost/tcp_probe.py from host 0 to a server it starts in host 1
#                       (and stops after); prints the client's JSON, fails when the client does
#   mh_setting HOW WHAT bring hosts 0 and 1 into a link setting of the bench/ scripts: HOW = tc
#                       (root qdisc WHAT on both eth0; "" = none), link (hosts on delay links
#                       with netns_hosts.sh up's options WHAT), delay (one-way delay WHAT ms:
#                       netem where the kernel has it, else delay links); sets MECH (what shapes
#                       the link) and UNAVAILABLE (why the setting cannot be made here, or "").
#                       Call mh_probe_mechanisms once before.
MH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$MH/../fsdp/lib.sh"
MH_LINK=${MH_LINK:-}
bash "$MH/netns_hosts.sh" check ${MH_LINK:+--delay-link} || exit $?
LOCAL_MPIEXEC=$MPIEXEC
NETNS_NAME=svn$$
MH_HOSTS=${MH_HOSTS:-2}
PPN=${PPN:-2}
mh_cleanup() {
    bash "$MH/netns_hosts.sh" down "$NETNS_NAME" || true
    rm -rf "$WORK"
}
trap mh_cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
export NETNS_NAME PPN
HMPIEXEC=$WORK/mpiexec-hosts

# mh_up [OPTS]: make the hosts (link options OPTS) and the HMPIEXEC that reaches them
mh_up() {
    local vars
    vars=$(bash "$MH/netns_hosts.sh" up "$NETNS_NAME" "$MH_HOSTS" "$@")
    eval "$vars"
    cat >"$HMPIEXEC" <<EOF
#!/bin/sh
# mpiexec across the fake hosts (hydra's ssh launcher, entering each host by netns_launch.sh);
# -localhost: the address the hosts reach mpiexec at (the bridge), for the proxies' control port.
exec "$LOCAL_MPIEXEC" -launcher ssh -launcher-exec "$NETNS_LAUNCHER" -localhost "$NETNS_SERVER" \\
    -hosts "$NETNS_HOSTS" -ppn "\${PPN:-2}" "\$@"
EOF
    chmod +x "$HMPIEXEC"
    echo "hosts $NETNS_HOSTS ($NETNS_SUBNET, mpiexec reached at $NETNS_SERVER), namespaces ${NETNS_NAME}h*," \
        "links: ${*:-veth}"
}
mh_relink() {
    bash "$MH/netns_hosts.sh" down "$NETNS_NAME"
    mh_up "$@"
}
mh_up $MH_LINK

host_bytes() {
    local v s=/sys/class/net/$(bash "$MH/netns_hosts.sh" veth "$NETNS_NAME" "$1")/statistics
    v=$(($(cat "$s/rx_bytes") + $(cat "$s/tx_bytes")))
    echo "$v"
}
host_procs() {
    local p pids
    pids=$(ip netns pids "${NETNS_NAME}h$1" 2>/dev/null || true)
    for p in $pids; do
        [ -z "${2:-}" ] || { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qE -- "$2" || continue
        echo "$p"
    done
}

# MPICH 4.0.2's ch4:ucx finalize (Debian 12) can deadlock over TCP: a rank that has closed its
# endpoints waits in the PMI barrier without progressing UCX, while a peer's endpoint flush waits
# for that rank's acknowledgement (it sits unread in the rank's socket). MPICH 4.2.0 moved the
# barrier before the disconnects (pmodels/mpich#6596 and its follow-up); docs/multinode.md. hrun
# accepts a run only if it exits 0, or if rank 0 logged "done:" (every step, checkpoint and
# output finished), the parameters were written, and 10 s later the job is still there with a
# rank blocked reading its PMI socket (the finalize barrier): then it ends the job and says so.
FINALIZE_HANGS=0
hrun() {
    local name=$1 world=$2 rc=0 t p stuck=0 done_at=""
    shift 2
    "$HMPIEXEC" -n "$world" "$SHARDVIT" train $TINY --out "$WORK/$name" --save-params "$WORK/$name.bin" "$@" \
        </dev/null >"$WORK/$name.log" 2>&1 &
    local mp=$!
    for t in $(seq 3000); do
        kill -0 $mp 2>/dev/null || break
        if [ -z "$done_at" ] && grep -q "done: final loss" "$WORK/$name.log" && [ -s "$WORK/$name.bin" ]; then
            done_at=$t
        fi
        [ -z "$done_at" ] || [ $((t - done_at)) -lt 100 ] || break
        sleep 0.1
    done
    if kill -0 $mp 2>/dev/null; then
        for t in $(seq 0 $((MH_HOSTS - 1))); do
            for p in $(host_procs "$t" "shardvit train"); do
                [ "$(cat "/proc/$p/wchan" 2>/dev/null)" != unix_stream_read_generic ] || stuck=$((stuck + 1))
            done
        done
        kill $mp 2>/dev/null || true
        wait $mp || true
        if [ -n "$done_at" ] && [ $stuck -gt 0 ]; then
            FINALIZE_HANGS=$((FINALIZE_HANGS + 1))
            echo "note: run $name finished its work, then hung in MPI_Finalize ($stuck ranks in the PMI" \
                "barrier: the MPICH 4.0.2 ch4:ucx finalize deadlock over TCP); job ended"
            return 0
        fi
        echo "FAIL: run $name (world $world, $*) did not finish:"
        tail -20 "$WORK/$name.log"
        exit 1
    fi
    wait $mp || rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: run $name (world $world, $*) failed (exit $rc):"
        tail -20 "$WORK/$name.log"
        exit 1
    fi
}

# brun JSON NRANKS PPN ARGS...: shardvit bench across the hosts, JSON result into the file JSON
brun() {
    local json=$1 n=$2 ppn=$3 t done_at=""
    shift 3
    rm -f "$json"
    PPN=$ppn "$HMPIEXEC" -n "$n" "$SHARDVIT" bench "$@" --json "$json" </dev/null >"$json.log" 2>&1 &
    local mp=$!
    for t in $(seq 6000); do
        kill -0 $mp 2>/dev/null || break
        [ -n "$done_at" ] || { [ -s "$json" ] && "$PY" -c "import json,sys; json.load(open(sys.argv[1]))" "$json" 2>/dev/null && done_at=$t; }
        [ -z "$done_at" ] || [ $((t - done_at)) -lt 100 ] || { echo "  (finalize hang after the result; job ended)" >&2; kill $mp; break; }
        sleep 0.1
    done
    wait $mp || true
    [ -s "$json" ] || { echo "bench failed:" >&2; tail -5 "$json.log" >&2; return 1; }
}
shape() { # shape "tc args" | shape "": set (or clear) the qdisc on both hosts' eth0
    local i
    for i in 0 1; do
        ip -n "${NETNS_NAME}h$i" link set eth0 up
        tc -n "${NETNS_NAME}h$i" qdisc del dev eth0 root 2>/dev/null || true
        [ -z "$1" ] || tc -n "${NETNS_NAME}h$i" qdisc add dev eth0 root $1 2>/dev/null || return 1
    done
}
tcp_probe() {
    local port=5201 rc=0 p
    (ip netns exec "${NETNS_NAME}h1" "$PY" "$MH/tcp_probe.py" serve $port 120 </dev/null >/dev/null 2>&1 &)
    ip netns exec "${NETNS_NAME}h0" "$PY" "$MH/tcp_probe.py" "$1" "${NETNS_SUBNET%.0/24}.2" $port "$2" || rc=$?
    for p in $(host_procs 1 "tcp_probe.py serve"); do kill "$p" 2>/dev/null || true; done
    for _ in $(seq 50); do [ -n "$(host_procs 1 "tcp_probe.py serve")" ] || break; sleep 0.05; done
    return $rc
}

# mh_probe_mechanisms: which link shapers this machine has (NETEM=1 when the kernel has netem;
# NO_LINK = why delay links cannot run, or ""); the hosts are on veth links afterwards
mh_probe_mechanisms() {
    NETEM=0
    shape "netem delay 1ms" && NETEM=1
    shape ""
    NO_LINK=$(bash "$MH/netns_hosts.sh" check --delay-link 2>&1 | tail -1) && NO_LINK=""
    MH_HOSTS_LINK="" # the link options of the hosts now (netns_hosts.sh up's; "" = veth)
}

mh_setting() {
    local how=$1 what=$2 link="" qdisc="$2"
    UNAVAILABLE=""
    case "$how" in
    tc) MECH=${what%% *} MECH=${MECH:-veth} ;;
    link) link=$what qdisc="" MECH="delay link" ;;
    delay) if [ "$NETEM" = 1 ]; then qdisc="netem delay ${what}ms" MECH=netem; else
        link="--delay-ms $what" qdisc="" MECH="delay link"; fi ;;
    esac
    if [ -n "$link" ] && [ -n "$NO_LINK" ]; then
        UNAVAILABLE="no netem in this kernel, and no delay link ($NO_LINK)"
        return
    fi
    if [ "$link" != "$MH_HOSTS_LINK" ]; then
        mh_relink $link >&2
        MH_HOSTS_LINK=$link
    fi
    shape "$qdisc" || UNAVAILABLE="this kernel has no '${qdisc%% *}' qdisc"
}
