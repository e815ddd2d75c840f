#!/usr/bin/env bash
# Predicted vs measured across fake hosts (docs/fsdp.md "Predicted vs measured across hosts"): two hosts, network
# namespaces on a bridge (tests/multihost/netns_hosts.sh), one rank per host, so every
# collective crosses the link between them. For each link setting:
#   1. `shardvit bench --comm` across the hosts (all_gather / reduce_scatter, 1 KiB .. 4 MiB: the
#      sizes below 64 KiB give the small-message latency, the larger ones the latency and rate);
#   2. the CPU cost of TCP over that link: `tcp_probe.py cpu` streams for CPU_SECONDS from host 0
#      to host 1 and counts the machine's busy CPU time per byte sent or received by one host;
#   3. `shardvit bench` of the training step across the hosts (measured step, exposed comm);
#   4. `shardvit plan --simulate --device cpu --world 2 --nodes 2 --inter-from <1's JSON>
#      --inter-cpu <2's ns per byte>` (ops timed on this machine with 2 co-running ranks; the
#      inter-node link fitted to 1, its transport CPU cost measured by 2; a tbf setting's bucket
#      with --inter-burst, leaving at the unshaped row's fitted rate).
# Settings: "name|how|what", how = tc (a root qdisc "what" on both hosts' eth0, so each
# direction passes one qdisc; "" = none), link (hosts on delay links with netns_hosts.sh up's
# options "what"), delay (one-way delay "what" ms: `netem delay` where the kernel has netem, else
# delay links: tests/multihost/delaylink.c holds each frame a host sends for "what" ms). A row no
# mechanism here can make is listed as not measured.
# Never a test: it needs a quiet machine. Root only.
#
#   bash bench/fsdp/simulate_vs_measured_hosts.sh [SHARDVIT] [OUT_DIR]
#   env MODEL (vit-28), BATCH (global batch, 64), DTYPE (bf16), STEPS (6), WARMUP (2),
#       STRATEGIES ("full_shard no_shard"), SETTINGS (one "name|how|what" per line),
#       CPU_SECONDS (4), DELAYLINK (default: the delaylink of SHARDVIT's build tree)
set -euo pipefail
source "$(dirname "$0")/../../scripts/usage.sh" "$@"
case "${1:-}" in -*) sv_usage_refuse "unknown option '$1'" ;; esac
SHARDVIT=$(realpath "${1:-build/app/shardvit}")
OUTDIR=${2:-$(mktemp -d /tmp/shardvit-simhosts.XXXXXX)}
DELAYLINK=$(realpath -m "${DELAYLINK:-$(dirname "$SHARDVIT")/../tests/multihost/delaylink}")
export DELAYLINK
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
source "$(dirname "$0")/../../tests/multihost/lib.sh"
mkdir -p "$OUTDIR"
MODEL=${MODEL:-vit-28}
BATCH=${BATCH:-64}
DTYPE=${DTYPE:-bf16}
STEPS=${STEPS:-6}
WARMUP=${WARMUP:-2}
CPU_SECONDS=${CPU_SECONDS:-4}
STRATEGIES=${STRATEGIES:-full_shard no_shard}
DEFAULT_SETTINGS="none|tc|
rate 1gbit|tc|tbf rate 1gbit burst 512kb latency 200ms
rate 200mbit|tc|tbf rate 200mbit burst 512kb latency 200ms
rate 50mbit|tc|tbf rate 50mbit burst 256kb latency 500ms
delay link, 0 ms|link|--delay-ms 0
delay 1 ms|delay|1
delay 5 ms|delay|5"
SETTINGS=${SETTINGS:-$DEFAULT_SETTINGS}
# --threads 1: each fake host is alone on its "node", so the default (cores / local ranks) would
# give every rank all the cores of the one real machine
RUN="--model $MODEL --batch-size $BATCH --param-dtype $DTYPE --threads 1 --comm-timeout 300"

mh_probe_mechanisms # NETEM, NO_LINK (tests/multihost/lib.sh)
VETH_GBPS="" # the unshaped link's fitted rate (the "none" row; tbf buckets leave at it)

# setup HOW WHAT: mh_setting (MECH, UNAVAILABLE), and BURST_ARG: tbf without a peak rate lets a
# full bucket leave at the link's own speed, so a tbf setting's simulated link gets its bucket
# (tc's "kb" = KiB) at the unshaped row's fitted rate
setup() {
    mh_setting "$1" "$2"
    BURST_ARG=""
    local b
    b=$(sed -n 's/.*tbf .*burst \([0-9]*\)kb.*/\1/p' <<<"$2")
    if [ "$1" = tc ] && [ -n "$b" ] && [ -n "$VETH_GBPS" ]; then BURST_ARG="--inter-burst ${b}K,$VETH_GBPS"; fi
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model" \
    "$(lscpu | sed -n 's/^Model: *//p')), $(nproc) vCPUs; $(date -u +%Y-%m-%dT%H:%MZ); $MODEL batch $BATCH $DTYPE;" \
    "2 hosts x 1 rank; load at the start $LOAD0"
printf "| %-16s | %-10s | %-13s | %-34s | %9s | %9s | %6s | %8s | %8s | %6s |\n" link "shaped by" strategy \
    "fitted inter link, TCP CPU cost" "meas s" "pred s" ratio "meas exp" "pred exp" "d pts"
echo "|---|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r name how what; do
    [ -n "$name" ] || continue
    tag=$(echo "$name" | tr -c 'a-zA-Z0-9_.-' '_')
    setup "$how" "$what"
    if [ -n "$UNAVAILABLE" ]; then
        echo "| $name | not measured: $UNAVAILABLE | | | | | | | | |"
        continue
    fi
    brun "$OUTDIR/$tag.comm.json" 2 1 --comm --comm-min 1K --comm-max 4M $RUN
    tcp_probe cpu "$CPU_SECONDS" >"$OUTDIR/$tag.cpu.json"
    cpu_ns=$("$PY" -c 'import json, sys; print("%.4f" % json.load(open(sys.argv[1]))["cpu_ns_per_byte"])' \
        "$OUTDIR/$tag.cpu.json")
    for s in $STRATEGIES; do
        brun "$OUTDIR/$tag.$s.meas.json" 2 1 $RUN --steps "$STEPS" --warmup "$WARMUP" --calib-seconds 0 --strategy "$s"
        "$LOCAL_MPIEXEC" -n 2 "$SHARDVIT" plan --simulate --json --device cpu $RUN --world 2 --nodes 2 \
            --inter-from "$OUTDIR/$tag.comm.json" --inter-cpu "$cpu_ns" $BURST_ARG --strategy "$s" \
            >"$OUTDIR/$tag.$s.sim.json" 2>/dev/null </dev/null
        "$PY" - "$OUTDIR/$tag.$s.meas.json" "$OUTDIR/$tag.$s.sim.json" "$name" "$MECH" "$s" <<'PYEOF'
import json, sys
m, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sp = m["time_split"]
me = sp["comm_exposed_s"] / sum(sp[k] for k in ("compute_s", "comm_exposed_s", "data_wait_s", "optimizer_s", "other_s"))
pe = p["comm_exposed_frac"]
link = "%.0f us + %.3f GB/s, red x%.2f, %.2f ns/B" % (p["inter_alpha_us"], p["inter_gbps"], p["inter_reduce_factor"],
                                                   p["inter_cpu_ns_per_byte"])
if p.get("inter_small_bytes", 0) > 0:
    link += ", <= %.0fK: %.0f us" % (p["inter_small_bytes"] / 1024, p["inter_small_alpha_us"])
if p.get("inter_burst_bytes", 0) > 0:
    link += ", bucket %.0fK at %.2f GB/s" % (p["inter_burst_bytes"] / 1024, p["inter_peak_gbps"])
ms, ps = m["step_time_s"], p["step_time_s"]
print("| %-16s | %-10s | %-13s | %-34s | %9.4f | %9.4f | %5.2fx | %7.1f%% | %7.1f%% | %+6.1f |" %
      (sys.argv[3], sys.argv[4], sys.argv[5], link, ms, ps, ps / ms, 100 * me, 100 * pe, 100 * (pe - me)))
PYEOF
    done
    if [ "$how" = tc ] && [ -z "$what" ]; then
        VETH_GBPS=$("$PY" -c 'import json, sys; print("%.4f" % json.load(open(sys.argv[1]))["inter_gbps"])' \
            "$OUTDIR/$tag.$s.sim.json")
    fi
done <<<"$SETTINGS"
shape ""
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg); JSON results in $OUTDIR"
