#!/bin/bash
# Predicted (shardvit plan --simulate --device cpu) vs measured (mpiexec -n W shardvit bench) step
# time and exposed-communication fraction, same machine, same configuration, back to back
# (docs/simulate.md "Proof"). Never a test: it needs a quiet machine.
#
# Usage: bench/fsdp/simulate_vs_measured.sh [BUILD_DIR] [OUT_DIR]
#   env MODEL (default vit-28), BATCH (global batch, default 64), DTYPE (fp32|bf16, default bf16),
#       STEPS (timed steps, default 4), WARMUP (default 2), REPEATS (measured runs per case, best kept;
#       default 2), CASES (one per line: "WORLD|flags"; default: worlds 1, 2, 4, every strategy,
#       blocks and pairs of blocks as units), NET (plan --net/--intra flags, default the shm preset),
#       SIM_CORUN (1: simulate under mpiexec -n min(W, cores) so ops are timed with co-running
#       ranks, as in the measured run; 0: one process)
# Prints one row per case: measured and predicted step time, their ratio, exposed communication
# (% of the step) measured and predicted and the difference in points; world 4 on a 2-core
# machine is oversubscribed and labelled so. Every JSON is kept in OUT_DIR.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$(mktemp -d /tmp/shardvit-simvs.XXXXXX)}
SV=${SV:-$BUILD/app/shardvit}
MODEL=${MODEL:-vit-28}
BATCH=${BATCH:-64}
DTYPE=${DTYPE:-bf16}
STEPS=${STEPS:-4}
WARMUP=${WARMUP:-2}
REPEATS=${REPEATS:-2}
NET=${NET:-}
PY=$(command -v python3)
CORES=$(nproc)
DEFAULT_CASES="1|--strategy full_shard
2|--strategy full_shard
2|--strategy shard_grad_op
2|--strategy no_shard
2|--strategy full_shard --wrap auto:WRAP2
2|--strategy shard_grad_op --wrap auto:WRAP2
4|--strategy full_shard
4|--strategy hybrid_shard --shard-group 2
4|--strategy no_shard
4|--strategy full_shard --wrap auto:WRAP2"
CASES=${CASES:-$DEFAULT_CASES}
mkdir -p "$OUT"
# two blocks per unit: the auto-wrap budget of 2.5 blocks' fp32 parameters
params() { "$SV" info --model "$MODEL" --depth "$1" 2>/dev/null | sed -n 's/^parameters: //p'; }
WRAP2=$("$PY" -c "print('%.4f' % (($(params 2) - $(params 1)) * 4 * 2.5 / 1048576))")
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $CORES cores; $(date -u +%Y-%m-%dT%H:%MZ); $MODEL batch $BATCH $DTYPE"
printf "%-5s %-44s %10s %10s %6s %9s %9s %6s\n" world config "meas s" "pred s" ratio "meas exp" "pred exp" "d pts"
while IFS='|' read -r W FLAGS; do
    [ -n "$W" ] || continue
    FLAGS=${FLAGS//WRAP2/$WRAP2}
    tag=$(echo "w$W $FLAGS" | tr -c 'a-zA-Z0-9_.-' '_')
    best=""
    for rep in $(seq "$REPEATS"); do
        timeout 600 mpiexec -n "$W" "$SV" bench --model "$MODEL" --batch-size "$BATCH" --param-dtype "$DTYPE" \
            --steps "$STEPS" --warmup "$WARMUP" $FLAGS --json "$OUT/$tag.meas$rep.json" </dev/null >/dev/null 2>&1 ||
            { echo "measure failed: w$W $FLAGS"; continue; }
        best=$("$PY" - "$OUT/$tag.meas$rep.json" "$best" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
prev = sys.argv[2]
if prev:
    p = json.load(open(prev))
    if p["step_time_s"] <= d["step_time_s"]:
        print(prev); sys.exit()
print(sys.argv[1])
PYEOF
)
    done
    R=$(( W < CORES ? W : CORES ))
    [ "${SIM_CORUN:-1}" = 1 ] || R=1
    mpiexec -n "$R" "$SV" plan --simulate --json --device cpu --model "$MODEL" --batch-size "$BATCH" --param-dtype "$DTYPE" \
        --world "$W" $NET $FLAGS >"$OUT/$tag.sim.json" 2>/dev/null </dev/null || { echo "simulate failed: w$W $FLAGS"; continue; }
    [ -n "$best" ] || continue
    "$PY" - "$best" "$OUT/$tag.sim.json" "$W" "$FLAGS" "$CORES" <<'PYEOF' | tee -a "$OUT/table.txt"
import json, sys
m, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
w, flags, cores = int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
sp = m["time_split"]
me = sp["comm_exposed_s"] / sum(sp[k] for k in ("compute_s", "comm_exposed_s", "data_wait_s", "optimizer_s", "other_s"))
pe = s["comm_exposed_frac"]
label = flags + (" (oversubscribed)" if w > cores else "")
print("%-5d %-44s %10.4f %10.4f %6.2f %8.1f%% %8.1f%% %6.1f" % (w, label[:44], m["step_time_s"], s["step_time_s"],
      s["step_time_s"] / m["step_time_s"], 100 * me, 100 * pe, 100 * (pe - me)))
PYEOF
    echo "{\"measured\": $(cat "$best"), \"simulated\": $(cat "$OUT/$tag.sim.json")}" >>"$OUT/results.jsonl"
done <<<"$CASES"
echo "results: $OUT/results.jsonl"
