#!/usr/bin/env bash
# shardvit GPU check: one script for a machine with an NVIDIA GPU (fits in about 10 minutes).
#
#   tests/gpu/run.sh [BUILD_DIR]        OUT=DIR (default ./gpu-report), JOBS=N (default: cores)
#
# 1. build: reuse BUILD_DIR (default build-gpu) when it holds a build, else configure and build
#    with -DSHARDVIT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 (MPI only when mpicc exists);
# 2. every backend op, CUDA vs CPU (tests/gpu/gpu_ops_vs_cpu, relative error per op), and the
#    NCCL transport on the node's GPUs (tests/gpu/gpu_comm_nccl, one rank per GPU);
# 3. tiny ViT, fp32: loss (forward) and grad norm (backward) per step, CUDA vs CPU;
# 4. FSDP training steps (2 blocks, bf16), CUDA vs CPU loss sequences; the same with
#    --attn-drop (fp32 loss + grad norm, bf16 losses: the CUDA fallback kernels' dropout);
# 5. `shardvit bench` on vit-b16 and vit-s16, bf16;
# then writes OUT/report.md and OUT/report.json. BUILD_DIR may also be a slim directory made by
# tests/gpu/pack.sh on another machine (binaries + the non-CUDA shared libraries they need).
# Each step is recorded as pass/fail/skip and a
# failing step does not stop the others. Exit status 0 only when no step failed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$PWD/gpu-report}
BUILD=${1:-$ROOT/build-gpu}
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
PY=$(command -v python3 || echo /usr/bin/python3)
mkdir -p "$OUT/logs" "$OUT/runs"
STEPS_TSV="$OUT/steps.tsv"
: > "$STEPS_TSV"
T_START=$(date +%s)

# record NAME STATUS(pass|fail|skip) SECONDS DETAIL
record() {
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(printf '%s' "$4" | tr '\t\n' '  ')" >> "$STEPS_TSV"
    printf '[gpu-check] %-28s %-5s %4ss  %s\n' "$1" "$2" "$3" "$4"
}

# ---- environment: CUDA libraries that come as Python wheels (cuDNN, NCCL, cuBLAS) ----
pip_nvidia_dir() {
    "$PY" -c 'import importlib, sys; m = importlib.import_module("nvidia." + sys.argv[1]); print(list(m.__path__)[0])' "$1" 2>/dev/null
}
for pkg in cudnn nccl cublas cuda_runtime; do
    d=$(pip_nvidia_dir "$pkg") || continue
    [ -d "$d/lib" ] && export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    case "$pkg" in
        cudnn) [ -f /usr/local/cuda/include/cudnn.h ] || export CUDNN_ROOT="${CUDNN_ROOT:-$d}" ;;
        nccl) [ -f /usr/local/cuda/include/nccl.h ] || export NCCL_ROOT="${NCCL_ROOT:-$d}" ;;
    esac
done
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH="$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)"
    echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (modified)')"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /' \
        || echo "gpu: (nvidia-smi not available)"
    nvcc --version 2>&1 | tail -1 | sed 's/^/nvcc: /'
    echo "LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-}"
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"

# ---- 1. build ----
SV=""
configure_and_build() { # DIR
    local mpi=ON
    command -v mpicc >/dev/null 2>&1 || mpi=OFF
    cmake -S "$ROOT" -B "$1" -DSHARDVIT_CUDA=ON -DSHARDVIT_MPI=$mpi -DCMAKE_CUDA_ARCHITECTURES=90 \
          -DCMAKE_BUILD_TYPE=Release && cmake --build "$1" -j"$JOBS"
}
t0=$(date +%s)
if [ -f "$BUILD/CMakeCache.txt" ] && grep -q "^CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT\$" "$BUILD/CMakeCache.txt"; then
    how="existing build dir $BUILD (refreshed)"
    cmake --build "$BUILD" -j"$JOBS" > "$OUT/logs/build.log" 2>&1
elif [ -x "$BUILD/app/shardvit" ]; then
    how="carried binaries in $BUILD (configured elsewhere; not rebuilt)"
    echo "$how" > "$OUT/logs/build.log"
else
    how="fresh configure + build in $BUILD"
    configure_and_build "$BUILD" > "$OUT/logs/build.log" 2>&1
fi
if ! "$BUILD/app/shardvit" --help > /dev/null 2>&1; then
    # Carried binaries that do not run here (missing libraries): build afresh once.
    FRESH="$ROOT/build-gpu-fresh"
    how="$how; unusable, so fresh build in $FRESH"
    configure_and_build "$FRESH" >> "$OUT/logs/build.log" 2>&1 && BUILD=$FRESH
fi
if "$BUILD/app/shardvit" --help > /dev/null 2>&1; then
    SV="$BUILD/app/shardvit"
    record build pass $(( $(date +%s) - t0 )) "$how"
else
    record build fail $(( $(date +%s) - t0 )) "$how; see logs/build.log: $(grep -m1 -iE 'error' "$OUT/logs/build.log")"
fi

# ---- 2. every op, CUDA vs CPU ----
t0=$(date +%s)
OPS="$BUILD/tests/gpu/gpu_ops_vs_cpu"
if [ -x "$OPS" ]; then
    timeout 300 "$OPS" --json "$OUT/ops.json" > "$OUT/logs/ops.log" 2>&1
    rc=$?
    summary=$(grep -E 'checks failed' "$OUT/logs/ops.log" | tail -1)
    case $rc in
        0) record ops_cuda_vs_cpu pass $(( $(date +%s) - t0 )) "$summary" ;;
        77) record ops_cuda_vs_cpu skip $(( $(date +%s) - t0 )) "$(grep -m1 SKIP "$OUT/logs/ops.log")" ;;
        *) record ops_cuda_vs_cpu fail $(( $(date +%s) - t0 )) "rc=$rc ${summary:-$(tail -1 "$OUT/logs/ops.log")}; failing: $(grep -E 'FAIL' "$OUT/logs/ops.log" | awk '{print $1" "$2}' | sort -u | head -8 | tr '\n' ';')" ;;
    esac
else
    record ops_cuda_vs_cpu fail 0 "no test binary at $OPS"
fi

# ---- 2b. NCCL transport on this node's GPUs (one rank per GPU) ----
t0=$(date +%s)
NCCLT="$BUILD/tests/gpu/gpu_comm_nccl"
if [ -x "$NCCLT" ]; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    [ "$ngpu" -ge 1 ] 2>/dev/null || ngpu=1
    [ "$ngpu" -le 8 ] || ngpu=8
    if command -v mpiexec >/dev/null 2>&1; then
        timeout 120 mpiexec -n "$ngpu" "$NCCLT" > "$OUT/logs/nccl.log" 2>&1
    else
        ngpu=1
        timeout 120 "$NCCLT" > "$OUT/logs/nccl.log" 2>&1 # MPI singleton
    fi
    rc=$?
    case $rc in
        0) record nccl_comm pass $(( $(date +%s) - t0 )) "$ngpu rank(s): $(tail -1 "$OUT/logs/nccl.log")" ;;
        77) record nccl_comm skip $(( $(date +%s) - t0 )) "$(grep -m1 SKIP "$OUT/logs/nccl.log")" ;;
        *) record nccl_comm fail $(( $(date +%s) - t0 )) "rc=$rc: $(grep -m1 -E 'CHECK|error' "$OUT/logs/nccl.log")" ;;
    esac
else
    record nccl_comm skip 0 "no $NCCLT (build without MPI)"
fi

# ---- helpers for training runs ----
# train NAME DEVICE EXTRA_FLAGS...: one run into $OUT/runs/NAME; returns shardvit's status.
train() {
    local name=$1 dev=$2
    shift 2
    rm -rf "$OUT/runs/$name"
    timeout 240 "$SV" train --device "$dev" --data synthetic --out "$OUT/runs/$name" --log-every 1 \
        --seed 7 --workers 2 "$@" > "$OUT/logs/$name.log" 2>&1
}
# compare NAME KEY TOL A B: compare_losses.py on two runs' metrics.jsonl; records the result.
compare() {
    local name=$1 key=$2 tol=$3 a=$4 b=$5
    local res
    res=$("$PY" "$ROOT/tests/gpu/compare_losses.py" "$OUT/runs/$a/metrics.jsonl" "$OUT/runs/$b/metrics.jsonl" \
          --tol "$tol" --key "$key" --name "$name")
    local rc=$?
    echo "$res" > "$OUT/$name.json"
    local worst
    worst=$(echo "$res" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print("steps %s, max rel diff %.3g (tol %s)" % (r.get("steps"), r.get("max_rel_diff", float("nan")), r.get("tol")))' 2>/dev/null)
    [ $rc -eq 0 ] && record "$name" pass $(( $(date +%s) - t0 )) "$worst" \
                  || record "$name" fail $(( $(date +%s) - t0 )) "${worst:-$res}"
}
run_pair() { # NAME FLAGS... -> runs NAME_cuda and NAME_cpu; 0 when both ran
    local name=$1
    shift
    local ok=0
    train "${name}_cuda" cuda "$@" || { record "${name}_cuda_run" fail $(( $(date +%s) - t0 )) "$(tail -1 "$OUT/logs/${name}_cuda.log")"; ok=1; }
    train "${name}_cpu" cpu "$@" || { record "${name}_cpu_run" fail $(( $(date +%s) - t0 )) "$(tail -1 "$OUT/logs/${name}_cpu.log")"; ok=1; }
    return $ok
}

TINY="--model vit-28 --dim 64 --depth 2 --heads 2 --batch-size 32 --synth-samples 256"
if [ -n "$SV" ]; then
    # ---- 3. tiny ViT forward/backward, fp32: loss = forward, grad norm = backward ----
    t0=$(date +%s)
    if run_pair tiny_fp32 $TINY --param-dtype fp32 --steps 4 --lr 1e-3 --warmup 0; then
        compare tiny_fwd_loss loss 1e-3 tiny_fp32_cuda tiny_fp32_cpu
        compare tiny_bwd_grad_norm grad_norm 1e-3 tiny_fp32_cuda tiny_fp32_cpu
    fi
    # ---- 4. several FSDP training steps, bf16 ----
    t0=$(date +%s)
    if run_pair fsdp_bf16 $TINY --param-dtype bf16 --steps 20 --lr 1e-3 --warmup 2; then
        compare fsdp_bf16_loss loss 5e-2 fsdp_bf16_cuda fsdp_bf16_cpu
    fi
    # ---- 4b. attention-probability dropout: on CUDA the fallback kernels with the mask ----
    t0=$(date +%s)
    if run_pair attn_drop_fp32 $TINY --param-dtype fp32 --steps 4 --lr 1e-3 --warmup 0 --attn-drop 0.2; then
        compare attn_drop_fwd_loss loss 1e-3 attn_drop_fp32_cuda attn_drop_fp32_cpu
        compare attn_drop_bwd_grad_norm grad_norm 1e-3 attn_drop_fp32_cuda attn_drop_fp32_cpu
    fi
    t0=$(date +%s)
    if run_pair attn_drop_bf16 $TINY --param-dtype bf16 --steps 10 --lr 1e-3 --warmup 2 --attn-drop 0.2; then
        compare attn_drop_bf16_loss loss 5e-2 attn_drop_bf16_cuda attn_drop_bf16_cpu
    fi
    # ---- 5. benchmarks ----
    for m in vit-b16 vit-s16; do
        t0=$(date +%s)
        timeout 180 "$SV" bench --model $m --batch-size 64 --steps 20 --device cuda --param-dtype bf16 \
            --json "$OUT/bench_$m.json" > "$OUT/logs/bench_$m.log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && [ -s "$OUT/bench_$m.json" ]; then
            record "bench_$m" pass $(( $(date +%s) - t0 )) "$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print("img/s %s, TFLOP/s %s, MFU %s, peak mem %s" % tuple(r.get(k) for k in ("img_per_s","tflops","mfu","peak_mem_bytes")))' "$OUT/bench_$m.json" 2>&1)"
        else
            record "bench_$m" fail $(( $(date +%s) - t0 )) "rc=$rc: $(tail -1 "$OUT/logs/bench_$m.log")"
        fi
    done
else
    for s in tiny_fwd_loss tiny_bwd_grad_norm fsdp_bf16_loss attn_drop_fwd_loss attn_drop_bwd_grad_norm \
             attn_drop_bf16_loss bench_vit-b16 bench_vit-s16; do
        record "$s" skip 0 "no shardvit binary (build failed)"
    done
fi

# ---- report ----
"$PY" - "$OUT" "$(( $(date +%s) - T_START ))" <<'PYEOF'
import json, os, sys
out, total = sys.argv[1], int(sys.argv[2])
steps = []
with open(os.path.join(out, "steps.tsv")) as f:
    for line in f:
        name, status, secs, detail = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
        steps.append({"name": name, "status": status, "seconds": int(secs or 0), "detail": detail})
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None
env = open(os.path.join(out, "environment.txt")).read()
report = {"environment": env, "total_seconds": total, "steps": steps,
          "ops": load("ops.json"),
          "comparisons": {n: load(n + ".json") for n in ("tiny_fwd_loss", "tiny_bwd_grad_norm", "fsdp_bf16_loss",
                                                          "attn_drop_fwd_loss", "attn_drop_bwd_grad_norm",
                                                          "attn_drop_bf16_loss")},
          "bench": {m: load("bench_%s.json" % m) for m in ("vit-b16", "vit-s16")},
          "failed": sum(s["status"] == "fail" for s in steps)}
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f, indent=1)
md = ["# shardvit GPU check", "", "```", env.strip(), "```", "",
      "| step | status | seconds | detail |", "|---|---|---|---|"]
md += ["| %s | %s | %d | %s |" % (s["name"], s["status"], s["seconds"], s["detail"].replace("|", "/")) for s in steps]
ops = report["ops"]
if ops:
    md += ["", "## Ops, CUDA vs CPU (relative error max|cuda-cpu|/max|cpu|)", "",
           "| op | variant | output | rel err | tol | ok |", "|---|---|---|---|---|---|"]
    def row(r):  # a compared output, or an op call that failed ("error": its message)
        if "error" in r:
            return "| %s | %s | %s | error: %s | | **FAIL** |" % (r["op"], r["variant"], r["output"],
                                                                 r["error"].replace("|", "/"))
        return "| %s | %s | %s | %.2e | %.0e | %s |" % (r["op"], r["variant"], r["output"], r["rel_err"], r["tol"],
                                                       "ok" if r["ok"] else "**FAIL**")
    md += [row(r) for r in ops.get("results", [])]
    if ops.get("aborted"):
        md += ["", "**The op test stopped early (a CHECK failed; see logs/ops.log).**"]
md += ["", "Total time: %d s. Failed steps: %d." % (total, report["failed"])]
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md[:8 + len(steps)]))
PYEOF
echo "[gpu-check] report: $OUT/report.md, $OUT/report.json"
! grep -q $'\tfail\t' "$STEPS_TSV"
