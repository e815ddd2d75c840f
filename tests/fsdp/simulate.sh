#!/usr/bin/env bash
# The step-time simulator (`plan --simulate`, docs/simulate.md) runs the engine's own schedule:
# its collective counts per communicator equal the trainer's counters for the same configuration,
# its memory equals `plan`'s, its timeline is a valid trace, and its model is monotonic (more
# bandwidth never slows a step, on serial and on shared links; a bigger unit never lowers
# memory; a transport CPU cost lengthens compute; a longer scheduler quantum never shortens an
# oversubscribed step). Also --suggest-wrap, --sweep and the flag errors.
SHARDVIT=$1
source "$(dirname "$0")/lib.sh"
S=2
PLAN_TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24"
sim_json() { "$SHARDVIT" plan --simulate --json "$@" 2>"$WORK/sim.err" || { cat "$WORK/sim.err"; exit 1; }; }

# 1. counts: trainer (S steps, real MPI ranks) vs simulator (per step) for each strategy and for
#    multi-block units, accumulation and recompute
CASES=("fs|2|--strategy full_shard" "sgo|2|--strategy shard_grad_op" "ns|2|--strategy no_shard"
    "hy|4|--strategy hybrid_shard --shard-group 2" "wrap2|2|--wrap auto:0.13" "acc|2|--accum 2 --accum-mode local"
    "rc|2|--recompute --param-dtype bf16 --reduce-dtype bf16")
for c in "${CASES[@]}"; do
    IFS='|' read -r name world args <<<"$c"
    run "$name" "$world" --steps $S $args </dev/null
    line=$(logline "$name" "collectives:")
    sim_json $PLAN_TINY --world "$world" --device cpu $args >"$WORK/$name.sim.json"
    "$PY" - "$line" "$WORK/$name.sim.json" $S <<'PYEOF' || exit 1
import json, re, sys
line, path, S = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = re.search(r"shard all_gather (\d+) reduce_scatter (\d+) all_reduce (\d+); replica all_reduce (\d+)", line)
real = tuple(int(x) for x in m.groups())
c = json.load(open(path))["collectives"]
sim = (S * c["shard"]["all_gather"], S * c["shard"]["reduce_scatter"], S * c["shard"]["all_reduce"],
       S * c["repl"]["all_reduce"])
assert real == sim, f"trainer {real} != simulated {sim}"
assert sum(sim) > 0
print("ok counts", path.rsplit("/", 1)[1], sim)
PYEOF
done

# 2. memory: the simulated arena is the planner's, byte for byte (CPU and GPU sizes)
for dev in "cpu|cpu" "h200|cuda"; do
    sd=${dev%|*} pd=${dev#*|}
    for args in "--strategy full_shard" "--strategy shard_grad_op --param-dtype bf16" "--recompute"; do
        want=$("$SHARDVIT" plan $PLAN_TINY --world 4 --device "$pd" $args | grep -E "^  total" | grep -oE "[0-9]+ bytes")
        got=$(sim_json $PLAN_TINY --world 4 --device "$sd" $args | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["mem_total_bytes"], "bytes")')
        [ "$want" = "$got" ] || { echo "FAIL: simulated memory ($sd $args) $got != plan $want"; exit 1; }
    done
done
echo "ok memory = plan"

# 3. the simulated timeline is a trace in the training format with well-nested tracks
sim_json $PLAN_TINY --world 2 --device cpu --trace "$WORK/sim_trace.json" >/dev/null
"$PY" "$HERE/check_trace.py" --tracks-only "$WORK/sim_trace.json" 1 3
# --trace-events caps it, with the warning train and bench give (it was cut silently)
sim_json $PLAN_TINY --world 2 --device cpu --trace "$WORK/sim_trace10.json" --trace-events 10 >/dev/null
grep -q "sim_trace10.json lacks the last [0-9]* events of rank 0: its buffer of 10 events filled" "$WORK/sim.err" ||
    { cat "$WORK/sim.err"; echo "FAIL: no warning for a full --trace-events buffer"; exit 1; }
echo "ok simulated trace (and its --trace-events warning)"

# 4. monotonic model on a GPU cluster (analytic device, nothing touches the buffers)
BIG="--model vit-b16 --world 64 --batch-size 2048 --param-dtype bf16 --device h200"
prev=""
for bw in 25 50 100 200 400 800; do
    t=$(sim_json $BIG --inter 5,$bw | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
    if [ -n "$prev" ]; then
        "$PY" -c "import sys; a,b=$prev,$t; sys.exit(0 if b <= a * (1 + 1e-12) else 1)" ||
            { echo "FAIL: more bandwidth ($bw GB/s) slowed the step: $prev -> $t"; exit 1; }
    fi
    prev=$t
done
"$PY" -c "import sys; sys.exit(0 if $prev > 0 else 1)"
prevm=0
for mb in 0.1 40 80 160 400; do
    w=auto:$mb
    m=$(sim_json $BIG --wrap "$w" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["mem_total_bytes"], d["units"])')
    set -- $m
    [ "$1" -ge "$prevm" ] || { echo "FAIL: bigger units ($w, $2 units) lowered memory $prevm -> $1"; exit 1; }
    prevm=$1
done
echo "ok monotonic (bandwidth -> step time, unit size -> memory)"
# the roofline bounds: step time >= model FLOPs / peak; MFU in (0, 1); exposed fraction in [0, 1]
sim_json $BIG | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert 0 < d["mfu"] < 1, d["mfu"]
assert 0 <= d["comm_exposed_frac"] <= 1
assert d["step_time_s"] >= d["compute_s"] > 0
print("ok bounds: step %.4f s, MFU %.3f, exposed %.3f" % (d["step_time_s"], d["mfu"], d["comm_exposed_frac"]))'

# 5. --suggest-wrap: the chosen candidate fits the budget and is the fastest of those that fit
out=$("$SHARDVIT" plan --suggest-wrap --model vit-h14 --world 64 --batch-size 2048 --param-dtype bf16 --device h200 --mem 12G 2>/dev/null)
"$PY" - "$out" <<'PYEOF' || { echo "$out"; exit 1; }
import re, sys
rows, chosen = [], None
for l in sys.argv[1].splitlines():
    m = re.match(r"\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s*(.*)$", l)
    if m:
        r = dict(s=m[1], img=float(m[5]), mib=float(m[8]), over="over budget" in m[9], chosen="chosen" in m[9])
        rows.append(r)
fit = [r for r in rows if not r["over"]]
best = [r for r in rows if r["chosen"]]
assert len(rows) > 10 and fit and len(best) == 1, (len(rows), len(fit), len(best))
assert best[0]["mib"] <= 12 * 1024, best
assert best[0]["img"] == max(r["img"] for r in fit), best
assert any(r["over"] for r in rows), "budget excluded nothing"
print("ok suggest-wrap:", best[0])
PYEOF

# 6. --sweep: one row per configuration; persistent state per rank falls ~1/N
"$SHARDVIT" plan --sweep "world=8,16,32 batch-per-rank=16" --model vit-b16 --param-dtype bf16 --device h200 \
    --format csv >"$WORK/sweep.csv" 2>"$WORK/sweep.err"
"$PY" - "$WORK/sweep.csv" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [int(r["world"]) for r in rows] == [8, 16, 32], rows
assert all(r["status"] == "ok" for r in rows)
assert [int(r["batch_size"]) for r in rows] == [128, 256, 512]
assert all(float(r["train_samples_per_sec"]) > 0 for r in rows)
print("ok sweep", [(r["world"], r["mem_per_rank_bytes"]) for r in rows])
PYEOF
"$SHARDVIT" plan --sweep "world=8,16,32" --model vit-b16 --batch-size 256 --device h200 >"$WORK/sweep.jsonl" 2>/dev/null
"$PY" - "$WORK/sweep.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3
p = [r["mem_params_bytes"] for r in rows]
assert abs(p[1] / p[0] - 0.5) < 0.02 and abs(p[2] / p[0] - 0.25) < 0.02, p
print("ok sweep jsonl: fp32 master shard per rank", p)
PYEOF

# 7. --net-from fits the link to a bench --comm result: exact on rows that follow a known
#    alpha-beta law, usable on a real measurement of this machine's MPI
"$PY" - "$WORK/law.json" <<'PYEOF'
import json, sys
n, a, bw, rbw = 2, 20e-6, 3e9, 1.5e9  # latency per step, all_gather and reduce_scatter bandwidth
rows = []
for s in [65536 * 4 ** k for k in range(5)]:
    for op, b in (("all_gather", bw), ("reduce_scatter", rbw)):
        rows.append({"op": op, "size_bytes": s, "time_us": ((n - 1) * a + s * (n - 1) / n / b) * 1e6})
json.dump({"mode": "comm", "world": n, "results": rows}, open(sys.argv[1], "w"))
PYEOF
sim_json $PLAN_TINY --world 2 --device cpu --net-from "$WORK/law.json" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert abs(d["intra_alpha_us"] - 20) < 1e-6 and abs(d["intra_gbps"] - 3) < 1e-9, d
assert abs(d["reduce_factor"] - 0.5) < 1e-9, d["reduce_factor"]
print("ok net-from: exact fit of a known law")'
# --inter-from: the same fit for the inter-node link (a bench --comm result with one rank per
# node); a world spanning 2 nodes then uses it, and a slower inter-node link makes the step
# slower (on the h200 roofline, whose op times are exact, not timed on this loaded CPU)
sim_json $PLAN_TINY --world 2 --nodes 2 --device cpu --inter-from "$WORK/law.json" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert abs(d["inter_alpha_us"] - 20) < 1e-6 and abs(d["inter_gbps"] - 3) < 1e-9, d
assert abs(d["inter_reduce_factor"] - 0.5) < 1e-9, d["inter_reduce_factor"]
print("ok inter-from: exact fit of a known law")'
# small messages (MPI's eager protocol) have their own latency: rows below 64 KiB that follow a
# faster law give it exactly, for collectives up to the largest of them; the large rows' fit is
# unchanged, and the step is never slower for it (h200 roofline: exact op times)
"$PY" - "$WORK/law.json" "$WORK/law_small.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
n, a_small, bw = 2, 4e-6, 3e9
for s in (1024, 4096, 16384):
    d["results"].append({"op": "all_gather", "size_bytes": s, "time_us": ((n - 1) * a_small + s * (n - 1) / n / bw) * 1e6})
json.dump(d, open(sys.argv[2], "w"))
PYEOF
sim_json $PLAN_TINY --world 2 --nodes 2 --device cpu --inter-from "$WORK/law_small.json" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert abs(d["inter_alpha_us"] - 20) < 1e-6 and abs(d["inter_gbps"] - 3) < 1e-9, d
assert abs(d["inter_small_alpha_us"] - 4) < 1e-6 and d["inter_small_bytes"] == 16384, d
print("ok inter-from: small-message latency %.1f us up to %d bytes" % (d["inter_small_alpha_us"], d["inter_small_bytes"]))'
sim_json $PLAN_TINY --world 2 --nodes 2 --device cpu --inter-from "$WORK/law.json" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert d["inter_small_bytes"] == 0 and d["inter_small_alpha_us"] == 0, d
print("ok inter-from: one regime without small rows")'
big=$(sim_json $PLAN_TINY --world 2 --nodes 2 --device h200 --inter-from "$WORK/law.json" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
small=$(sim_json $PLAN_TINY --world 2 --nodes 2 --device h200 --inter-from "$WORK/law_small.json" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
"$PY" -c "import sys; b, s = float(sys.argv[1]), float(sys.argv[2]); assert s <= b * (1 + 1e-12), (b, s); print('ok small-message latency: step %.6f -> %.6f s' % (b, s))" "$big" "$small"
"$PY" - "$WORK/law.json" "$WORK/slow.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    r["time_us"] *= 50
json.dump(d, open(sys.argv[2], "w"))
PYEOF
fast=$(sim_json $PLAN_TINY --world 2 --nodes 2 --device h200 --inter-from "$WORK/law.json" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
slow=$(sim_json $PLAN_TINY --world 2 --nodes 2 --device h200 --inter-from "$WORK/slow.json" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
"$PY" -c "import sys; f, s = float(sys.argv[1]), float(sys.argv[2]); assert s > f, (f, s); print('ok inter-from: 50x slower link, step %.4f -> %.4f s' % (f, s))" "$fast" "$slow"
# a bench --comm result of MPI makes the link shared (its collectives in flight share the
# bandwidth); one of unknown transport keeps them one at a time. On the shared link too, more
# bandwidth never slows the step; a transport CPU cost (--inter-cpu) lengthens compute and is
# reported
"$PY" - "$WORK/law.json" "$WORK" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["comm"] = "mpi"
for k in (1, 2, 4, 8, 16, 32):
    e = json.loads(json.dumps(d))
    for r in e["results"]:
        r["time_us"] *= 64 / k
    json.dump(e, open("%s/mpi%d.json" % (sys.argv[2], k), "w"))
PYEOF
step() { sim_json $PLAN_TINY --world 4 --nodes 2 --device h200 "$@" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["inter_shared"], d["step_time_s"], d["transport_cpu_s"], d["compute_s"])'; }
set -- $(step --inter-from "$WORK/law.json")
[ "$1" = False ] || { echo "FAIL: a bench --comm result without a transport made the link shared"; exit 1; }
prev=""
for k in 1 2 4 8 16 32; do
    set -- $(step --inter-from "$WORK/mpi$k.json")
    [ "$1" = True ] || { echo "FAIL: an MPI bench --comm result did not make the link shared"; exit 1; }
    [ "$3" = 0 ] || { echo "FAIL: transport CPU time $3 without --inter-cpu"; exit 1; }
    if [ -n "$prev" ]; then
        "$PY" -c "import sys; a,b=$prev,$2; sys.exit(0 if b <= a * (1 + 1e-12) else 1)" ||
            { echo "FAIL: shared link: more bandwidth (x$k) slowed the step: $prev -> $2"; exit 1; }
    fi
    prev=$2
done
base=$(step --inter-from "$WORK/mpi1.json")
cost=$(step --inter-from "$WORK/mpi1.json" --inter-cpu 2)
"$PY" - $base $cost <<'PYEOF'
import sys
_, s0, c0, k0, _, s1, c1, k1 = sys.argv[1:]
s0, c0, k0, s1, c1, k1 = map(float, (s0, c0, k0, s1, c1, k1))
# compute (the traced compute spans) grows, by at most the transport's CPU time (some ops, such
# as the optimizer's, lie outside those spans); the step may not: later issues can share less
assert c0 == 0 and c1 > 0 and k1 > k0, (s0, c0, k0, s1, c1, k1)
assert k1 - k0 <= c1 * (1 + 1e-9), (k1 - k0, c1)
print("ok shared inter-node link: monotonic in bandwidth; --inter-cpu 2: compute %.6f -> %.6f s, transport CPU %.6f s"
      % (k0, k1, c1))
PYEOF
# a token bucket in front of the link (--inter-burst) only ever speeds the step, more the larger it is
b0=$(step --inter-from "$WORK/mpi1.json" | cut -d' ' -f2)
b1=$(step --inter-from "$WORK/mpi1.json" --inter-burst 64K,1000 | cut -d' ' -f2)
b2=$(step --inter-from "$WORK/mpi1.json" --inter-burst 64M,1000 | cut -d' ' -f2)
"$PY" -c "import sys; a, b, c = map(float, sys.argv[1:]); assert c < a and b <= a and c <= b, (a, b, c); print('ok inter-burst: step %.6f -> %.6f (64K bucket) -> %.6f s (64M)' % (a, b, c))" "$b0" "$b1" "$b2"
timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" bench --comm --comm-min 64K --comm-max 4M --json "$WORK/comm.json" </dev/null >/dev/null 2>&1
sim_json $PLAN_TINY --world 2 --device cpu --net-from "$WORK/comm.json" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
assert d["intra_gbps"] > 0 and d["intra_alpha_us"] >= 0 and d["step_time_s"] > 0, d
print("ok net-from this machine: %.1f us + %.2f GB/s" % (d["intra_alpha_us"], d["intra_gbps"]))'

# 7b. oversubscribed CPU ranks (--cores 1: world 2 shares one core): the scheduler quantum is
#     measured here and reported; a longer --sched-quantum never shortens the step (each round of a
#     collective that overlaps compute waits one); without oversubscription there is no quantum
OV="$PLAN_TINY --world 2 --cores 1 --device cpu"
ov() { sim_json $OV "$@" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["step_time_s"], d["sched_round_us"])'; }
set -- $(ov)
"$PY" -c "import sys; q = float(sys.argv[1]); assert 50 < q < 1e6, q; print('ok probed scheduler quantum: %.2f ms' % (q / 1e3))" "$2"
# (the ops are timed for real in every run, so the quanta are far apart: each step between them
# adds far more than the timing noise of a sanitizer build; a busy machine can still stretch one
# run's op timings by more than that (seen: 0.48 s at 0.01 ms, 0.28 s at 50 ms, two tests beside
# each other under the sanitizers), so the three runs are tried up to three times and one
# increasing series must come out)
quanta_increasing() {
    local q runs=()
    for q in 0.01 50 400; do
        runs+=("$q" $(ov --sched-quantum $q))
    done
    # exit 2: a round that is not the quantum asked for (a failure); 1: not increasing (retried)
    "$PY" - "${runs[@]}" <<'EOF_PY'
import sys
try:
    v = [float(x) for x in sys.argv[1:]]
except ValueError:
    print("FAIL: a non-numeric field among (quantum, step, round): %s" % sys.argv[1:])
    sys.exit(2)
if len(v) != 9:
    print("FAIL: three runs of (quantum, step, round) expected, got %s" % sys.argv[1:])
    sys.exit(2)
series = [v[i:i + 3] for i in range(0, len(v), 3)]  # (quantum ms, step s, round us)
for q, t, r in series:
    if abs(r - 1e3 * q) >= 1e-6:
        print("FAIL: --sched-quantum %g ms reported a round of %g us" % (q, r))
        sys.exit(2)
for (q0, t0, _), (q1, t1, _) in zip(series, series[1:]):
    if not t1 > t0:
        print("note: --sched-quantum %g gave step %g s, not above %g s at %g (op timings of this run)" % (q1, t1, t0, q0))
        sys.exit(1)
print("ok --sched-quantum 0.01 .. 400 ms: step increasing, last %.4f s" % series[-1][1])
EOF_PY
    local rc=$?
    [ $rc -eq 2 ] && exit 1
    return $rc
}
quanta_increasing || quanta_increasing || quanta_increasing || { echo "FAIL: --sched-quantum 0.01, 50, 400 ms: the step did not increase in three tries"; exit 1; }
q0=$(sim_json $PLAN_TINY --world 2 --device cpu --cores 2 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sched_round_us"])')
[ "$q0" = 0 ] || [ "$q0" = 0.0 ] || { echo "FAIL: a quantum ($q0 us) without oversubscription"; exit 1; }
echo "ok no quantum without oversubscription"

# 8. bad flags: a clear error and exit 2
bad() {
    local rc=0
    "$SHARDVIT" plan "$@" >"$WORK/bad.out" 2>&1 || rc=$?
    [ "$rc" -eq 2 ] || { echo "FAIL: plan $* exited $rc (want 2)"; cat "$WORK/bad.out"; exit 1; }
    grep -qF -- "$BADMSG" "$WORK/bad.out" || { echo "FAIL: plan $*: no '$BADMSG'"; cat "$WORK/bad.out"; exit 1; }
}
BADMSG="name the simulated device" bad --simulate --device cuda
BADMSG="must divide" bad --simulate --device h200 --world 8 --nodes 3
BADMSG="--net 'bogus'" bad --simulate --device h200 --world 8 --net bogus
BADMSG="ALPHA_US,GBPS" bad --simulate --device h200 --world 8 --intra fast
BADMSG="needs an inter-node network" bad --simulate --device cpu --world 4 --nodes 2
BADMSG="unknown key" bad --sweep "colour=red" --device h200
BADMSG="need --simulate" bad --net nvlink
BADMSG="need --simulate" bad --inter-burst 64K,100
BADMSG="need --simulate" bad --sched-quantum 4
BADMSG="need --simulate" bad --steps 5
BADMSG="modes of their own: give one" bad --simulate --suggest-wrap --device h200 --world 8
BADMSG="modes of their own: give one" bad --simulate --sweep "world=8,16" --device h200
BADMSG="--sched-quantum: invalid value" bad --simulate --device cpu --sched-quantum -1
BADMSG="--inter-burst 'x'" bad --simulate --device h200 --world 16 --nodes 2 --inter-burst x
BADMSG="above the link" bad --simulate --device h200 --world 16 --nodes 2 --inter-burst 64K,0.001
mkfifo "$WORK/fifo"
BADMSG="--trace" bad --simulate --device h200 --world 8 --trace "$WORK/fifo"
echo '{"mode":"comm","world":1,"results":[]}' >"$WORK/w1.json"
BADMSG="2 to 16777216 ranks" bad --simulate --device cpu --net-from "$WORK/w1.json"
# a file whose times fit no real link (every time x 1e290) is refused as --intra 1e300,1 is (it gave
# a step time of 290 digits), and so is a world of 1e15
"$PY" - "$WORK/law.json" "$WORK/huge.json" "$WORK/wbig.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    r["time_us"] *= 1e290
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
d["world"] = 10 ** 15
json.dump(d, open(sys.argv[3], "w"))
PYEOF
BADMSG="is outside what --intra / --inter accept" bad --simulate --device cpu --world 2 --net-from "$WORK/huge.json"
BADMSG="2 to 16777216 ranks" bad --simulate --device cpu --world 2 --net-from "$WORK/wbig.json"
# the split of a long simulated run (270 trace events a step x 1000 steps, past the tracer's
# 65536-event buffer) equals a short run's: the lanes are summed over every event
sim_json --model vit-28 --dim 32 --depth 48 --heads 2 --world 2 --batch-size 32 --device h200 --steps 10 >"$WORK/s10.json"
sim_json --model vit-28 --dim 32 --depth 48 --heads 2 --world 2 --batch-size 32 --device h200 --steps 1000 >"$WORK/s1000.json"
"$PY" - "$WORK/s10.json" "$WORK/s1000.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("compute_s", "comm_issue_to_complete_s", "other_s"):
    assert abs(a[k] - b[k]) <= 0.01 * abs(a[k]) + 1e-9, (k, a[k], b[k])
print("ok long run split: compute %.1f us, other %.1f us per step at 10 and 1000 steps" % (b["compute_s"] * 1e6, b["other_s"] * 1e6))
PYEOF
echo "simulate: all passed"
