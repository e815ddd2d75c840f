#!/bin/bash
# Predicted (shardvit plan --simulate --device cpu) vs measured (mpiexec -n W shardvit bench) step
# time and exposed-communication fraction, same machine, same configuration, back to back
# (docs/simulate.md "Predicted vs measured on this machine"). Never a test: it needs a quiet machine.
#
# Usage: bench/fsdp/simulate_vs_measured.sh [BUILD_DIR] [OUT_DIR]
#   env MODEL (default vit-28), BATCH (global batch, default 64), DTYPE (fp32|bf16, default bf16),
#       STEPS (timed steps, default 4), WARMUP (default 2), REPEATS (rounds per case, each a
#       measured run and then a simulation; the row compares the medians; default 3), CASES (one
#       per line: "WORLD|flags"; default: worlds 1, 2, 4, every strategy, blocks and pairs of
#       blocks as units), NET (plan --net/--intra flags, default the shm preset),
#       SIM_CORUN (1: simulate under mpiexec -n min(W, cores) so ops are timed with co-running
#       ranks, as in the measured run; 0: one process)
# Prints one row per case: median measured and median predicted step time, their ratio, median
# exposed communication (% of the step) measured and predicted and the difference in points,
# and each round's own step ratio; world 4 on a 2-core machine is oversubscribed and labelled so.
# Every JSON is kept in OUT_DIR (results.jsonl: one line per case with all its rounds).
set -u
source "$(dirname "$0")/../../scripts/usage.sh" "$@"
case "${1:-}" in -*) sv_usage_refuse "unknown option '$1'" ;; esac
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
REPEATS=${REPEATS:-3}
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
printf "%-5s %-44s %10s %10s %6s %9s %9s %6s   %s\n" world config "meas s" "pred s" ratio "meas exp" "pred exp" "d pts" \
    "ratio per round"
while IFS='|' read -r W FLAGS; do
    [ -n "$W" ] || continue
    FLAGS=${FLAGS//WRAP2/$WRAP2}
    tag=$(echo "w$W $FLAGS" | tr -c 'a-zA-Z0-9_.-' '_')
    R=$(( W < CORES ? W : CORES ))
    [ "${SIM_CORUN:-1}" = 1 ] || R=1
    # Rounds of (measured run, simulation) back to back: each simulation calibrates its ops right
    # after the run it is compared with, and the row compares the medians over the rounds, so one
    # round caught in a slow phase of the machine does not decide the row.
    meas=() sims=()
    for rep in $(seq "$REPEATS"); do # a round counts only when both halves ran (the pairs stay aligned)
        timeout 600 mpiexec -n "$W" "$SV" bench --model "$MODEL" --batch-size "$BATCH" --param-dtype "$DTYPE" \
            --steps "$STEPS" --warmup "$WARMUP" $FLAGS --json "$OUT/$tag.meas$rep.json" </dev/null >/dev/null 2>&1 ||
            { echo "measure failed: w$W $FLAGS"; continue; }
        timeout 600 mpiexec -n "$R" "$SV" plan --simulate --json --device cpu --model "$MODEL" --batch-size "$BATCH" \
            --param-dtype "$DTYPE" --world "$W" $NET $FLAGS >"$OUT/$tag.sim$rep.json" 2>/dev/null </dev/null ||
            { echo "simulate failed: w$W $FLAGS"; continue; }
        meas+=("$OUT/$tag.meas$rep.json")
        sims+=("$OUT/$tag.sim$rep.json")
    done
    [ ${#meas[@]} -gt 0 ] || continue
    "$PY" - "$W" "$FLAGS" "$CORES" "${meas[*]}" "${sims[*]}" "$OUT/results.jsonl" <<'PYEOF' | tee -a "$OUT/table.txt"
import json, statistics, sys
w, flags, cores = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ms = [json.load(open(f)) for f in sys.argv[4].split()]
ss = [json.load(open(f)) for f in sys.argv[5].split()]
def exposed(m):
    sp = m["time_split"]
    return sp["comm_exposed_s"] / sum(sp[k] for k in ("compute_s", "comm_exposed_s", "data_wait_s", "optimizer_s", "other_s"))
mt = statistics.median(m["step_time_s"] for m in ms)
st = statistics.median(s["step_time_s"] for s in ss)
me = statistics.median(exposed(m) for m in ms)
pe = statistics.median(s["comm_exposed_frac"] for s in ss)
rounds = " ".join("%.2f" % (s["step_time_s"] / m["step_time_s"]) for m, s in zip(ms, ss))
label = flags + (" (oversubscribed)" if w > cores else "")
print("%-5d %-44s %10.4f %10.4f %6.2f %8.1f%% %8.1f%% %6.1f   %s" % (w, label[:44], mt, st, st / mt, 100 * me,
      100 * pe, 100 * (pe - me), rounds))
with open(sys.argv[6], "a") as f:
    f.write(json.dumps({"world": w, "flags": flags, "measured": ms, "simulated": ss}) + "\n")
PYEOF
done <<<"$CASES"
echo "results: $OUT/results.jsonl"
