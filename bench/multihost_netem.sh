#!/usr/bin/env bash
# Link latency / bandwidth between two fake hosts (tests/multihost/netns_hosts.sh) against
# `shardvit bench --comm` bus bandwidth (1 rank per host) and the exposed communication of
# `shardvit bench` (2 hosts x 2 ranks, full_shard over all 4 vs hybrid_shard with the shard group
# = one host). Not a test: the numbers depend on the machine. Root only.
#
#   bash bench/multihost_netem.sh [SHARDVIT] [OUT.md]     (defaults: build/app/shardvit, stdout)
#
# Each setting shapes the egress of both hosts' eth0, so each direction of the link passes one
# qdisc: "rate R" = `tc qdisc add dev eth0 root tbf rate R burst 512kb latency 200ms`, "delay D" =
# `tc qdisc add dev eth0 root netem delay D` (one-way; a round trip adds 2 D). Settings whose qdisc
# this kernel lacks (netem: CONFIG_NET_SCH_NETEM) are listed as not measured. Every bench run that
# printed its JSON and then hung in MPI_Finalize (the MPICH 4.0.2 ch4:ucx finalize deadlock over
# TCP, docs/multinode.md) is ended after 10 s and counted as measured.
set -euo pipefail
SHARDVIT=$(realpath "${1:-build/app/shardvit}")
OUT=${2:-/dev/stdout}
source "$(dirname "$0")/../tests/multihost/lib.sh"
MODEL="--model vit-28 --batch-size 32 --steps 6 --warmup 2 --calib-seconds 0 --comm-timeout 120"
SETTINGS=("none|" "rate 1gbit|tbf rate 1gbit burst 512kb latency 200ms" "rate 200mbit|tbf rate 200mbit burst 512kb latency 200ms"
    "delay 1ms|netem delay 1ms" "delay 5ms|netem delay 5ms")

field() { "$PY" - "$@" <<'PYEOF'
import json, sys
path, what = sys.argv[1], sys.argv[2]
d = json.load(open(path))
if what == "busbw":  # GB/s of all_gather / reduce_scatter at the one size measured
    r = {x["op"]: x["busbw_gbps"] for x in d["results"]}
    print(f'{r["all_gather"]:.3f} / {r["reduce_scatter"]:.3f}')
else:  # step time, exposed-comm share of the time split
    s = d["time_split"]
    tot = sum(s.values())
    print(f'{d["step_time_s"] * 1e3:.0f} ms, {100 * s["comm_exposed_s"] / tot:.0f}%')
PYEOF
}

{
    echo "| link (each direction) | bench --comm busbw GB/s, 4 MiB all_gather / reduce_scatter (1 rank per host) | full_shard 2x2: step, exposed comm | hybrid_shard 2x2 (--shard-group 2): step, exposed comm |"
    echo "|---|---|---|---|"
} >"$WORK/table"
for s in "${SETTINGS[@]}"; do
    name=${s%%|*} q=${s#*|}
    if ! shape "$q"; then
        echo "| $name | not measured: this kernel has no '${q%% *}' qdisc | | |" >>"$WORK/table"
        echo "$name: qdisc '${q%% *}' unavailable" >&2
        continue
    fi
    echo "$name ..." >&2
    brun "$WORK/c.json" 2 1 --comm --comm-min 4M --comm-max 4M $MODEL
    brun "$WORK/f.json" 4 2 $MODEL --strategy full_shard
    brun "$WORK/h.json" 4 2 $MODEL --strategy hybrid_shard --shard-group 2
    echo "| $name | $(field "$WORK/c.json" busbw) | $(field "$WORK/f.json" split) | $(field "$WORK/h.json" split) |" >>"$WORK/table"
done
shape ""
{
    echo "Date $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) vCPUs;"
    echo "$(mpichversion | sed -n "s/^MPICH Version:[[:space:]]*/MPICH /p") (ch4:ucx), kernel $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Command: \`bash bench/multihost_netem.sh\` ($MODEL)."
    echo
    cat "$WORK/table"
} >"$OUT"
