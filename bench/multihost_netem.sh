#!/usr/bin/env bash
# Link latency / bandwidth between two fake hosts (tests/multihost/netns_hosts.sh) against the
# TCP round trip and bulk rate between them (tests/multihost/tcp_probe.py), `shardvit bench
# --comm` bus bandwidth (1 rank per host) and the exposed communication of `shardvit bench` (2
# hosts x 2 ranks, full_shard over all 4 vs hybrid_shard with the shard group = one host). Not a
# test: the numbers depend on the machine. Root only.
#
#   bash bench/multihost_netem.sh [SHARDVIT] [OUT.md]     (defaults: build/app/shardvit, stdout)
#
# Each setting shapes the egress of both hosts, so each direction of the link is shaped once:
# "rate R" = `tc qdisc add dev eth0 root tbf rate R burst 512kb latency 200ms` on both hosts'
# eth0; "delay D" (one-way; a round trip adds 2 D) = `tc qdisc add dev eth0 root netem delay D`
# where the kernel has netem (CONFIG_NET_SCH_NETEM), else hosts on delay links
# (`netns_hosts.sh up ... --delay-ms D`: tests/multihost/delaylink.c, a user-space forwarder
# between each host and the bridge that holds what the host sends for D); "delay link, 0 ms" =
# delay links without delay, the forwarder's own cost. The table says which mechanism shaped each
# row; a row neither can shape is listed as not measured. DELAYLINK (default: the delaylink next
# to SHARDVIT's build tree, build/tests/multihost/delaylink) is the forwarder. Every bench run
# that printed its JSON and then hung in MPI_Finalize (the MPICH 4.0.2 ch4:ucx finalize deadlock
# over TCP, docs/multinode.md) is ended after 10 s and counted as measured.
set -euo pipefail
source "$(dirname "$0")/../scripts/usage.sh" "$@"
case "${1:-}" in -*) sv_usage_refuse "unknown option '$1'" ;; esac
SHARDVIT=$(realpath "${1:-build/app/shardvit}")
OUT=${2:-/dev/stdout}
DELAYLINK=$(realpath -m "${DELAYLINK:-$(dirname "$SHARDVIT")/../tests/multihost/delaylink}")
export DELAYLINK
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
source "$(dirname "$0")/../tests/multihost/lib.sh"
MODEL="--model vit-28 --batch-size 32 --steps 6 --warmup 2 --calib-seconds 0 --comm-timeout 120"
# "name|how|what": how = tc (a root qdisc "what" on both hosts' eth0, "" for none), link (hosts
# on delay links with netns_hosts.sh up's options "what"), delay (one-way delay "what" ms: netem
# or a delay link, as above)
SETTINGS=("none|tc|" "rate 1gbit|tc|tbf rate 1gbit burst 512kb latency 200ms"
    "rate 200mbit|tc|tbf rate 200mbit burst 512kb latency 200ms" "delay link, 0 ms|link|--delay-ms 0"
    "delay 0.2 ms|delay|0.2" "delay 1 ms|delay|1" "delay 5 ms|delay|5")

field() { "$PY" - "$@" <<'PYEOF'
import json, sys
path, what = sys.argv[1], sys.argv[2]
d = json.load(open(path))
if what == "rtt":  # tcp_probe.py rtt's median
    print(f'{d["median_ms"]:.3f}')
elif what == "bulk":  # tcp_probe.py bulk's rate
    print(f'{d["mbit_s"]:.0f}')
elif what == "busbw":  # GB/s of all_gather / reduce_scatter at the one size measured
    r = {x["op"]: x["busbw_gbps"] for x in d["results"]}
    print(f'{r["all_gather"]:.3f} / {r["reduce_scatter"]:.3f}')
else:  # step time, exposed-comm share of the time split
    s = d["time_split"]
    tot = sum(s.values())
    print(f'{d["step_time_s"] * 1e3:.0f} ms, {100 * s["comm_exposed_s"] / tot:.0f}%')
PYEOF
}

mh_probe_mechanisms # NETEM, NO_LINK (tests/multihost/lib.sh)

{
    echo "| link (each direction) | shaped by | TCP h0-h1: round trip, median ms | TCP h0->h1: 64 MB, Mbit/s | bench --comm busbw GB/s, 4 MiB all_gather / reduce_scatter (1 rank per host) | full_shard 2x2: step, exposed comm | hybrid_shard 2x2 (--shard-group 2): step, exposed comm |"
    echo "|---|---|---|---|---|---|---|"
} >"$WORK/table"
for s in "${SETTINGS[@]}"; do
    IFS='|' read -r name how what <<<"$s"
    mh_setting "$how" "$what"
    if [ -n "$UNAVAILABLE" ]; then
        echo "| $name | not measured: $UNAVAILABLE | | | | | |" >>"$WORK/table"
        echo "$name: $UNAVAILABLE" >&2
        continue
    fi
    echo "$name ($MECH) ..." >&2
    tcp_probe rtt 200 >"$WORK/rtt.json"
    tcp_probe bulk 64000000 >"$WORK/bulk.json"
    brun "$WORK/c.json" 2 1 --comm --comm-min 4M --comm-max 4M $MODEL
    brun "$WORK/f.json" 4 2 $MODEL --strategy full_shard
    brun "$WORK/h.json" 4 2 $MODEL --strategy hybrid_shard --shard-group 2
    echo "| $name | $MECH | $(field "$WORK/rtt.json" rtt) | $(field "$WORK/bulk.json" bulk) | $(field "$WORK/c.json" busbw) | $(field "$WORK/f.json" split) | $(field "$WORK/h.json" split) |" >>"$WORK/table"
done
shape ""
{
    echo "Date $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) vCPUs;"
    echo "$(mpichversion | sed -n "s/^MPICH Version:[[:space:]]*/MPICH /p") (ch4:ucx), kernel $(uname -r); load average at the start: $LOAD0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Command: \`bash bench/multihost_netem.sh\` ($MODEL)."
    echo
    cat "$WORK/table"
} >"$OUT"
