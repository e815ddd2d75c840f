#!/usr/bin/env bash
# Predicted vs measured across fake hosts (docs/simulate.md "Across nodes"): two hosts, network
# namespaces on a bridge (tests/multihost/netns_hosts.sh), one rank per host, so every
# collective crosses the link between them. For each link setting:
#   1. `shardvit bench --comm` across the hosts (all_gather / reduce_scatter, 64 KiB .. 4 MiB);
#   2. `shardvit bench` of the training step across the hosts (measured step, exposed comm);
#   3. `shardvit plan --simulate --device cpu --world 2 --nodes 2 --inter-from <1's JSON>`
#      (ops timed on this machine with 2 co-running ranks; the inter-node link fitted to 1).
# Link settings shape the egress of both hosts' eth0 with tbf (each direction passes one qdisc).
# netem (added latency) is tried too and listed as not measured where the kernel lacks it.
# Never a test: it needs a quiet machine. Root only.
#
#   bash bench/fsdp/simulate_vs_measured_hosts.sh [SHARDVIT] [OUT_DIR]
#   env MODEL (vit-28), BATCH (global batch, 64), DTYPE (bf16), STEPS (6), WARMUP (2),
#       STRATEGIES ("full_shard no_shard"), SETTINGS (one "name|tc args" per line)
set -euo pipefail
SHARDVIT=$(realpath "${1:-build/app/shardvit}")
OUTDIR=${2:-$(mktemp -d /tmp/shardvit-simhosts.XXXXXX)}
source "$(dirname "$0")/../../tests/multihost/lib.sh"
mkdir -p "$OUTDIR"
MODEL=${MODEL:-vit-28}
BATCH=${BATCH:-64}
DTYPE=${DTYPE:-bf16}
STEPS=${STEPS:-6}
WARMUP=${WARMUP:-2}
STRATEGIES=${STRATEGIES:-full_shard no_shard}
DEFAULT_SETTINGS="none|
rate 1gbit|tbf rate 1gbit burst 512kb latency 200ms
rate 200mbit|tbf rate 200mbit burst 512kb latency 200ms
rate 50mbit|tbf rate 50mbit burst 256kb latency 500ms
delay 2ms|netem delay 2ms"
SETTINGS=${SETTINGS:-$DEFAULT_SETTINGS}
# --threads 1: each fake host is alone on its "node", so the default (cores / local ranks) would
# give every rank all the cores of the one real machine
RUN="--model $MODEL --batch-size $BATCH --param-dtype $DTYPE --threads 1 --comm-timeout 300"

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) vCPUs;" \
    "$(date -u +%Y-%m-%dT%H:%MZ); $MODEL batch $BATCH $DTYPE; 2 hosts x 1 rank; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "| %-12s | %-13s | %-26s | %9s | %9s | %6s | %8s | %8s | %6s |\n" link strategy "fitted inter link" "meas s" "pred s" \
    ratio "meas exp" "pred exp" "d pts"
echo "|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r name q; do
    [ -n "$name" ] || continue
    tag=$(echo "$name" | tr -c 'a-zA-Z0-9_.-' '_')
    if ! shape "$q"; then
        echo "| $name | not measured: this kernel has no '${q%% *}' qdisc | | | | | | | |"
        continue
    fi
    brun "$OUTDIR/$tag.comm.json" 2 1 --comm --comm-min 64K --comm-max 4M $RUN
    for s in $STRATEGIES; do
        brun "$OUTDIR/$tag.$s.meas.json" 2 1 $RUN --steps "$STEPS" --warmup "$WARMUP" --calib-seconds 0 --strategy "$s"
        "$LOCAL_MPIEXEC" -n 2 "$SHARDVIT" plan --simulate --json --device cpu $RUN --world 2 --nodes 2 \
            --inter-from "$OUTDIR/$tag.comm.json" --strategy "$s" >"$OUTDIR/$tag.$s.sim.json" 2>/dev/null </dev/null
        "$PY" - "$OUTDIR/$tag.$s.meas.json" "$OUTDIR/$tag.$s.sim.json" "$name" "$s" <<'PYEOF'
import json, sys
m, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sp = m["time_split"]
me = sp["comm_exposed_s"] / sum(sp[k] for k in ("compute_s", "comm_exposed_s", "data_wait_s", "optimizer_s", "other_s"))
pe = p["comm_exposed_frac"]
link = "%.0f us + %.3f GB/s, red x%.2f" % (p["inter_alpha_us"], p["inter_gbps"], p["inter_reduce_factor"])
ms, ps = m["step_time_s"], p["step_time_s"]
print("| %-12s | %-13s | %-26s | %9.4f | %9.4f | %5.2fx | %7.1f%% | %7.1f%% | %+6.1f |" %
      (sys.argv[3], sys.argv[4], link, ms, ps, ps / ms, 100 * me, 100 * pe, 100 * (pe - me)))
PYEOF
    done
done <<<"$SETTINGS"
shape ""
echo "JSON results in $OUTDIR"
