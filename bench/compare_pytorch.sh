#!/bin/bash
# shardvit vs PyTorch training throughput, side by side in one go (docs/performance.md).
#
# Usage: bench/compare_pytorch.sh [BUILD_DIR] [OUT_DIR]
#   env SV (shardvit binary, default BUILD_DIR/app/shardvit), STEPS (timed steps, default 4), WARMUP (default 1),
#       REPEATS (runs per setting, both frameworks, best kept; default 2), ROUNDS (default 1: per model
#       and precision, that many rounds of PyTorch's runs followed by shardvit's, the best of all rounds
#       kept for every setting, so that a slow phase of a shared machine does not fall on one side only),
#       CASES (default "vit-28:128 vit-ti16:32"), DTYPES (default "fp32 bf16"), SCALING=1 (vit-ti16 at world 1/2/4),
#       MFU=1 (vit-s16 at 224, batch 32, world 2),
#       TORCH_PY (the Python interpreter whose torch is compared against; default Debian's /usr/bin/python3
#       with python3-torch 1.13; bench/torch_venv.sh makes a virtual environment with the newest PyPI torch
#       and prints the path to use), TORCH_COMPILE=1 (also time torch.compile and keep the better of eager
#       and compiled per setting; needs torch >= 2)
#
# For each model:batch case and each precision it runs, back to back on the same machine state:
#   PyTorch (TORCH_PY, default Debian /usr/bin/python3 + python3-torch; AdamW, label smoothing 0.1, grad clipping
#   1.0; the same ViT module code as tests/model/vit_ref.py) at torch.set_num_threads 1 and 2,
#   keeping its best setting; fp32, or bf16 = torch.autocast("cpu", bfloat16) with fp32
#   parameters; then shardvit bench (--param-dtype fp32|bf16) at 1 rank x 1 thread, 1 rank x 2
#   threads and mpiexec -n 2 (FSDP full_shard, 1 thread per rank), all on one fixed synthetic
#   batch. Prints img/s and each shardvit setting's ratio to PyTorch's best in the same precision,
#   the FSDP cost (2 ranks vs 1 rank x 2 threads), and the ceiling the machine sets: cores x the
#   per-core ISA peak of the GEMM engine the run uses (hw_peak_flops of shardvit bench: an
#   in-register loop of that engine's instruction, e.g. TDPBF16PS for amx-bf16) / FLOP per image,
#   i.e. the img/s of a step that did nothing but GEMMs at the hardware's peak, and what fraction of
#   it 2x PyTorch would need. The top of the output names the interpreter, its torch and oneDNN/MKL
#   build, and the CPU with its AVX-512/AMX flags. Every JSON result is kept in OUT_DIR (results.jsonl).
#
# OUT_DIR (default: a new /tmp/shardvit-compare.XXXXXX) must be a directory or not exist yet.
# results.jsonl is written under another name and renamed when the comparison has finished, so a
# failed or interrupted rerun leaves the earlier one as it was. STEPS, REPEATS and ROUNDS must be
# positive integers, WARMUP a non-negative one (>= 1 with TORCH_COMPILE=1); TORCH_PY set but empty
# (e.g. TORCH_PY=$(bench/torch_venv.sh) after that script failed) is refused. Ctrl-C (SIGINT) or
# SIGTERM stops the whole comparison at once (exit 130 / 143): the running step is killed and its
# unfinished outputs removed. -h / --help prints this text.
set -u
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
die() { echo "compare_pytorch: $*" >&2; exit 2; }
case "${1:-}" in
-h | --help) usage; exit 0 ;;
-*) die "unknown option '$1' (usage: bench/compare_pytorch.sh [BUILD_DIR] [OUT_DIR]; --help)" ;;
esac
[ $# -le 2 ] || die "at most two arguments, BUILD_DIR and OUT_DIR (got $#; --help)"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-}
SV=${SV:-$BUILD/app/shardvit}
STEPS=${STEPS:-4}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-2}
CASES=${CASES:-"vit-28:128 vit-ti16:32"}
DTYPES=${DTYPES:-"fp32 bf16"}
TORCH_COMPILE=${TORCH_COMPILE:-0}
PY=$(command -v python3 || echo /usr/bin/python3)
MPIEXEC=${MPIEXEC:-mpiexec}
ROUNDS=${ROUNDS:-1}
for v in STEPS REPEATS ROUNDS; do
    case "${!v}" in '' | *[!0-9]* | 0*) die "$v must be a positive integer (got '${!v}')" ;; esac
done
case "$WARMUP" in '' | *[!0-9]* | 0?*) die "WARMUP must be a non-negative integer (got '$WARMUP')" ;; esac
[ "$TORCH_COMPILE" = 1 ] && [ "$WARMUP" = 0 ] && die "TORCH_COMPILE=1 needs WARMUP >= 1 (the compilation must not be timed)"
[ -x "$SV" ] || die "no shardvit binary at $SV (build first, or pass BUILD_DIR)"
if [ -n "${TORCH_PY+set}" ] && [ -z "$TORCH_PY" ]; then
    die "TORCH_PY is set but empty (did bench/torch_venv.sh fail?): unset it for Debian's /usr/bin/python3, or name an interpreter"
fi
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
"$TORCH_PY" -c "import torch" 2>/dev/null || {
    echo "PyTorch missing for TORCH_PY=$TORCH_PY: apt-get install python3-torch, or run bench/torch_venv.sh and" \
        "pass the interpreter it prints as TORCH_PY" >&2
    exit 2
}
TORCH_FLAGS=()
[ "$TORCH_COMPILE" = 1 ] && TORCH_FLAGS=(--compile)
MADE_OUT=""
if [ -n "$OUT" ]; then
    [ ! -e "$OUT" ] || [ -d "$OUT" ] || die "OUT_DIR $OUT exists and is not a directory"
    mkdir -p "$OUT" 2>/dev/null || die "cannot make OUT_DIR $OUT"
else
    OUT=$(mktemp -d /tmp/shardvit-compare.XXXXXX) || die "cannot make a directory in /tmp"
    MADE_OUT=1
fi
RESULTS=$OUT/results.jsonl
RES_TMP=$OUT/results.jsonl.partial # renamed to results.jsonl at the end: a failed rerun keeps the earlier one
: >"$RES_TMP" 2>/dev/null || die "cannot write in OUT_DIR $OUT"

# Every long step runs in the background (bench/lib.sh), so that SIGINT / SIGTERM stop it at once.
source "$HERE/lib.sh"
PARTIAL=() # the files the running step writes: removed when it is interrupted
DONE=0
run_step() { sv_bg_run "$@"; } # CMD...: its exit status
on_exit() {
    [ "$DONE" = 1 ] || rm -f "$RES_TMP"
    [ -z "$MADE_OUT" ] || rmdir "$OUT" 2>/dev/null # only when nothing was written
}
on_stop() { # SIGNAL: after the running step was stopped
    [ ${#PARTIAL[@]} = 0 ] || rm -f "${PARTIAL[@]}"
    echo "compare_pytorch: interrupted ($1): stopped; the unfinished step's outputs removed," \
        "$RESULTS left as it was" >&3
}
trap on_exit EXIT
sv_bg_traps on_stop

field() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get(sys.argv[2]))" "$1" "$2"; }
keep_best() { # DEST FILE...: copy the JSON with the highest img_per_s (and its .log) to DEST.json / DEST.log
    local dest=$1 best
    shift
    best=$("$PY" -c "import json,sys; print(max(sys.argv[1:], key=lambda f: json.load(open(f))['img_per_s']))" "$@") || return 1
    cp "$best" "$dest.json"
    cp "${best%.json}.log" "$dest.log"
}
record() { # TAG FILE
    "$PY" -c "import json,sys; d=json.load(open(sys.argv[2])); d['tag']=sys.argv[1]; print(json.dumps(d))" "$1" "$2" \
        >>"$RES_TMP"
}
sv_bench() { # TAG NRANKS THREADS MODEL BATCH [extra flags]; best of REPEATS runs, as for PyTorch
    local tag=$1 n=$2 th=$3 model=$4 batch=$5 i best=""
    shift 5
    rm -f "$OUT/$tag.json" "$OUT/$tag.log" # a reused OUT_DIR must not report an older run
    local launch=()
    [ "$n" -gt 1 ] && launch=("$MPIEXEC" -n "$n")
    for i in $(seq "$REPEATS"); do
        PARTIAL=("$OUT/$tag.run$i.json" "$OUT/$tag.run$i.log")
        run_step "${launch[@]}" "$SV" bench --model "$model" --batch-size "$batch" --steps "$STEPS" --warmup "$WARMUP" \
            --threads "$th" --device cpu --json "$OUT/$tag.run$i.json" "$@" 2>"$OUT/$tag.run$i.log" \
            || { echo "shardvit bench failed ($tag): see $OUT/$tag.run$i.log" >&2; tail -3 "$OUT/$tag.run$i.log" >&2; return 1; }
        PARTIAL=()
        if [ -z "$best" ] || "$PY" -c "import json,sys; a,b=(json.load(open(f))['img_per_s'] for f in sys.argv[1:]); sys.exit(0 if a>b else 1)" \
            "$OUT/$tag.run$i.json" "$best"; then best="$OUT/$tag.run$i.json"; fi
    done
    cp "$best" "$OUT/$tag.json"
    cp "${best%.json}.log" "$OUT/$tag.log"
    record "$tag" "$OUT/$tag.json"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC')  $(uptime | sed 's/.*load/load/')"
echo "# img/s: mean over the timed steps, best of $REPEATS runs x $ROUNDS round(s) (both frameworks; a round = PyTorch's"
echo "# runs, then shardvit's, per model and precision); ratio: img/s / PyTorch's best;"
echo "# mfu: fraction of the hardware peak: cores x the per-core ISA peak of the GEMM engine the run uses"
echo "# (shardvit bench hw_peak_flops; mfu_gemm in the JSON is the fraction of the measured GEMM peak);"
echo "# best-step: global batch / fastest step. PyTorch '1 thr' = torch.set_num_threads(1); Debian's torch 1.13"
echo "# runs fp32 GEMMs on OpenBLAS (pthread), which still uses every core, so it is its best setting on both cores."
cpu_field() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'; }
echo "# CPU: $(cpu_field 'model name') ($(cpu_field vendor_id) family $(cpu_field 'cpu family') model $(cpu_field model)), $(nproc) cores;" \
    "flags:$(for f in avx512f avx512_bf16 amx_bf16 amx_tile; do cpu_field flags | grep -qw "$f" && printf ' %s' "$f" || printf ' no-%s' "$f"; done)"
"$TORCH_PY" - "$TORCH_PY" "$TORCH_COMPILE" <<'PYEOF' | sed 's/^/# /'
import sys
import torch
comp = ""
if sys.argv[2] == "1":
    comp = (", torch.compile tried as well (TORCH_COMPILE=1)" if hasattr(torch, "compile") else
            ", TORCH_COMPILE=1 but torch.compile is not available in this torch: eager only")
print("PyTorch: %s (interpreter %s), torch %s%s" % (sys.argv[1], sys.executable, torch.__version__, comp))
print("mkldnn (oneDNN) available: %s, MKL available: %s" % (torch.backends.mkldnn.is_available(),
      torch.backends.mkl.is_available()))
cfg = [l.strip() for l in torch.__config__.show().splitlines() if l.strip()]
keep = [l for l in cfg if any(k in l for k in ("oneDNN", "MKL", "Intel(R) Math", "OpenMP", "CPU capability", "BLAS_INFO"))]
for l in (keep or cfg[:6])[:8]:
    print("  " + l[:160])
PYEOF
printf "%-10s %5s  %-26s %10s %8s %7s %11s\n" model batch setting img/s ratio mfu best-step
for c in $CASES; do
    model=${c%%:*}
    batch=${c##*:}
    for dt in $DTYPES; do
    rm -f "$OUT/torch-$model-$dt".round*.* "$OUT/sv-$model-$dt-"r?t?.round*.*
    for round in $(seq "$ROUNDS"); do
        tj=$OUT/torch-$model-$dt.round$round # written as .json.tmp, renamed when complete
        PARTIAL=("$tj.json.tmp" "$tj.log")
        run_step "$TORCH_PY" "$HERE/train/torch_vit_train.py" --model "$model" --batch-size "$batch" --steps "$STEPS" \
            --warmup "$WARMUP" --repeats "$REPEATS" --threads 1,2 --dtypes "$dt" "${TORCH_FLAGS[@]}" \
            >"$tj.json.tmp" 2>"$tj.log" \
            || { rm -f "$tj.json.tmp"; echo "PyTorch run failed: see $tj.log" >&2; tail -3 "$tj.log" >&2; exit 1; }
        mv -f "$tj.json.tmp" "$tj.json"
        PARTIAL=()
        for cfg in "1 1" "1 2" "2 1"; do
            set -- $cfg
            sv_bench "sv-$model-$dt-r$1t$2.round$round" "$1" "$2" "$model" "$batch" --param-dtype "$dt" || true
        done
    done
    keep_best "$OUT/torch-$model-$dt" "$OUT/torch-$model-$dt".round*.json || exit 1
    record "torch-$model-$dt" "$OUT/torch-$model-$dt.json"
    tb=$(field "$OUT/torch-$model-$dt.json" img_per_s)
    tt=$(field "$OUT/torch-$model-$dt.json" best_threads)
    tm=$(field "$OUT/torch-$model-$dt.json" best_mode) # eager | compile (TORCH_COMPILE=1)
    tl="pytorch $dt best ($tt thr)"
    [ "$TORCH_COMPILE" = 1 ] && tl="pytorch $dt best ($tt thr, $tm)"
    printf "%-10s %5s  %-26s %10.1f %8s %7s %11s\n" "$model" "$batch" "$tl" "$tb" "1.00" "-" "-"
    note=$(field "$OUT/torch-$model-$dt.json" compile_note) # e.g. no torch.compile in this torch: eager only
    [ -z "$note" ] || [ "$note" = None ] || printf "%-10s %s pytorch note: %s\n" "$model" "$dt" "$note"
    [ "$TORCH_COMPILE" = 1 ] && "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); e=d.get('img_per_s_eager_compile') or {}; \
e and print('%-10s %s pytorch eager vs torch.compile (img/s per setting): %s; %s won' % (sys.argv[2], sys.argv[3], \
', '.join('%s %s' % (k, ' / '.join('%.1f' % v for v in vs)) for k, vs in e.items()), d.get('best_mode')))" \
        "$OUT/torch-$model-$dt.json" "$model" "$dt"
    for cfg in "1 1" "1 2" "2 1"; do
        set -- $cfg
        tag="sv-$model-$dt-r$1t$2"
        rm -f "$OUT/$tag.json" "$OUT/$tag.log"
        ls "$OUT/$tag".round*.json >/dev/null 2>&1 || continue # every round of this setting failed
        keep_best "$OUT/$tag" "$OUT/$tag".round*.json || continue
        ips=$(field "$OUT/$tag.json" img_per_s)
        mfu=$(field "$OUT/$tag.json" mfu)
        best=$(field "$OUT/$tag.json" img_per_s_best_step)
        label="shardvit $dt ${1}r x ${2}t"
        [ "$1" -gt 1 ] && label="$label (FSDP)"
        "$PY" -c "import sys; i,t,m,b=float(sys.argv[1]),float(sys.argv[2]),sys.argv[3],float(sys.argv[7]); \
print('%-10s %5s  %-26s %10.1f %8.2f %7s %11.1f' % (sys.argv[4], sys.argv[5], sys.argv[6], i, i/t, \
'-' if m=='None' else '%.2f' % float(m), b))" "$ips" "$tb" "$mfu" "$model" "$batch" "$label" "$best"
    done
    if [ -f "$OUT/sv-$model-$dt-r1t2.json" ] && [ -f "$OUT/sv-$model-$dt-r2t1.json" ]; then
        "$PY" -c "import json,sys; a=json.load(open(sys.argv[1]))['img_per_s']; b=json.load(open(sys.argv[2]))['img_per_s']; \
print('%-10s %s FSDP 2 ranks vs 1 rank x 2 threads: %+.1f%% time per image' % (sys.argv[3], sys.argv[4], 100*(a/b-1)))" \
            "$OUT/sv-$model-$dt-r1t2.json" "$OUT/sv-$model-$dt-r2t1.json" "$model" "$dt"
    fi
    if [ -f "$OUT/sv-$model-$dt-r2t1.json" ]; then # the ceiling the hardware sets (ISA peak of the GEMM engine)
        "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); t=float(sys.argv[2]) if sys.argv[2] != 'None' else 0; h=d.get('hw_peak_flops'); \
c=h/d['flops_per_image'] if h and t > 0 else 0; g=d.get('gemm_peak_per_core_flops'); \
print('%-10s %s ceiling: %g cores x %.1f GFLOP/s (ISA peak of gemm %s) / %.3f GFLOP per image = %.1f img/s = %.2fx PyTorch; 2x PyTorch needs %.1f%% of it%s' \
% (sys.argv[3], sys.argv[4], d['cores_used'], d['hw_peak_per_core_flops']/1e9, d['hw_peak_engine'], d['flops_per_image']/1e9, c, c/t, 200*t/c, \
'' if not g else ' (measured %s GEMM: %.1f GFLOP/s per core)' % (d['gemm_peak_dtype'], g/1e9))) if c else \
print('%-10s %s ceiling: no hardware peak measured (hw_peak_flops is null)' % (sys.argv[3], sys.argv[4]))" \
            "$OUT/sv-$model-$dt-r2t1.json" "$tb" "$model" "$dt"
    fi
    done
done

if [ "${MFU:-1}" = 1 ]; then
    sv_bench sv-vit-s16-r2t1 2 1 vit-s16 32 && "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); \
print('vit-s16 224 batch 32, 2 ranks x 1 thread: %.1f img/s, %.1f GFLOP/s = %.1f%% of the ISA peak (gemm %s: %.1f GFLOP/s per core x %g cores), %.0f%% of the measured %s GEMM peak (%.1f GFLOP/s per core)' \
% (d['img_per_s'], d['tflops']*1e3, 100*(d['mfu'] or 0), d['hw_peak_engine'], (d['hw_peak_per_core_flops'] or 0)/1e9, d['cores_used'], \
100*(d['mfu_gemm'] or 0), d['gemm_peak_dtype'], (d['gemm_peak_per_core_flops'] or 0)/1e9))" "$OUT/sv-vit-s16-r2t1.json"
fi

if [ "${SCALING:-1}" = 1 ]; then
    echo "# scaling: vit-ti16 at 224, global batch 32, FSDP full_shard, 1 thread per rank"
    printf "%6s %10s %12s %14s %s\n" world img/s img/s/rank exposed-comm note
    for n in 1 2 4; do
        th=1
        [ "$n" = 1 ] && th=2
        tag="sv-vit-ti16-scale$n"
        sv_bench "$tag" "$n" "$th" vit-ti16 32 --calib-seconds 0 || continue
        "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); ts=d['time_split']; w=d['step_time_s']*d['steps']; \
print('%6d %10.1f %12.1f %13.1f%% %s' % (d['world'], d['img_per_s'], d['img_per_s']/d['world'], \
100*ts['comm_exposed_s']/w, ('1 rank x 2 threads' if d['world']==1 else '') + \
(' OVERSUBSCRIBED (%d ranks on %d cores)' % (d['world'], int(sys.argv[2])) if d['oversubscribed'] else '')))" \
            "$OUT/$tag.json" "$(nproc)"
    done
fi
mv -f "$RES_TMP" "$RESULTS" || exit 1
DONE=1
echo "# results: $RESULTS  ($(uptime | sed 's/.*load/load/') at the end)"
