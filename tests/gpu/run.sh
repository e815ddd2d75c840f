#!/usr/bin/env bash
# shardvit GPU check: one short run on a machine with an NVIDIA GPU, under one deadline.
#
#   tests/gpu/run.sh [--deadline SECONDS] [--out DIR] [--only STAGE,...] [--device cuda|cpu] [--build] [BIN_DIR]
#
# BIN_DIR holds app/shardvit and tests/gpu/gpu_ops_vs_cpu (+ gpu_comm_nccl): the folder of an
# archive made by tests/gpu/pack.sh (the default when this script runs from one), or a build
# directory (default build-gpu, then build). Nothing is built unless --build is given (then
# BIN_DIR, default build-gpu, is configured with -DSHARDVIT_CUDA=ON and built first, inside the
# deadline). OUT (--out, or the OUT environment variable; default ./gpu-report) receives exactly
# five files, rewritten after every stage (and the report also when a stage starts), each by a
# rename, so that a kill at any moment leaves a complete report of what ran:
#   report.md, report.json  every stage with its status and key numbers (tests/gpu/gpu_report.py)
#   steps.tsv               stage, status, seconds, detail
#   environment.txt         host, glibc, nvidia-smi -q, library search path, ldd of every binary,
#                           the libraries a CUDA process really loaded, library versions
#   logs.tgz                every stage's log, ops.json, bench JSON, the runs' metrics
# Stages, in order of information per second (each with a time cap; the stage gets
# min(cap, time left), a command runs under `timeout -k 5`, and a stage that fails or times out
# does not stop the next one; a stage that no longer fits is "skipped: deadline"):
#   libs        every library the binaries and the CUDA module need resolves (ldd; cuDNN's
#               sub-libraries present); `shardvit version --cuda` loads the module
#   device      nvidia-smi, a first cuBLASLt call through `shardvit bench --op matmul`, the
#               CUDA runtime / driver / cuBLASLt / cuDNN / NCCL versions that process loaded
#   ops         tests/gpu/gpu_ops_vs_cpu: every backend op CUDA vs CPU (ops.json)
#   tiny_vit_fp32   tiny ViT, 4 steps fp32: loss (forward) and grad norm (backward) vs CPU, 1e-3
#   fsdp_bf16       20 FSDP steps bf16 (world 1): losses vs CPU, 5e-2
#   attn_drop_fp32  --attn-drop 0.2, fp32, 4 steps: loss and grad norm vs CPU, 1e-3
#   attn_drop_bf16  --attn-drop 0.2, bf16, 10 steps: losses vs CPU, 5e-2
#   nccl        tests/gpu/gpu_comm_nccl at world 1 (2 ranks when 2 GPUs and an mpiexec exist)
#   bench_vit-s16, bench_vit-b16   `shardvit bench`, bf16, batch 64: img/s, MFU, memory
#   sanitizer   compute-sanitizer memcheck of gpu_ops_vs_cpu, at most 90 s (optional: its timeout
#               does not fail the check; an op test that could not run its checks under it does)
# Exit status 0 only when no stage failed or timed out and none was skipped for the deadline.
# --only runs the named stages (the others are "skipped: not selected"), e.g. a second, shorter
# run of what failed.
# --device cpu runs every stage with the CPU backend in place of CUDA (comparisons CPU vs CPU,
# small benchmarks): a self-test of this script on a machine without a GPU.
# Without a python3 the report is the stage table alone (report.md, report.json) and the training
# comparisons fail.
# MPI start-up (MPICH over UCX) stays on this node: unless the caller set them, UCX_TLS=self,sm and
# UCX_MODULE_DIR=an empty folder, so the archive's UCX never loads transport plug-ins of another
# UCX version from the machine's own folders (environment.txt says which settings were used).
# Test hooks (tests/gpu/run_nogpu.sh): SV_GPU_CHECK_HANG=STAGE replaces that stage's commands by
# a sleep; SV_GPU_CHECK_PYTHON=none runs as if no python3 existed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEFAULT_DEADLINE=420
DEADLINE=$DEFAULT_DEADLINE DEVICE=cuda BUILD_FIRST=0 BIN="" ONLY=""
OUT=${OUT:-$PWD/gpu-report}
usage() {
    sed -n '3,4p' "$0" | sed 's/^# *//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --deadline) DEADLINE=${2:-}; shift 2 || usage ;;
        --out) OUT=${2:-}; shift 2 || usage ;;
        --device) DEVICE=${2:-}; shift 2 || usage ;;
        --only) ONLY=${2:-}; shift 2 || usage ;;
        --build) BUILD_FIRST=1; shift ;;
        -h | --help) usage ;;
        -*) echo "run.sh: unknown option $1" >&2 && usage ;;
        *) [ -z "$BIN" ] || usage; BIN=$1; shift ;;
    esac
done
case "$DEADLINE" in '' | *[!0-9]*) echo "run.sh: --deadline takes whole seconds, not '$DEADLINE'" >&2 && exit 2 ;; esac
[ "$DEADLINE" -ge 20 ] || { echo "run.sh: --deadline $DEADLINE is too short (at least 20 s)" >&2; exit 2; }
case "$DEVICE" in cuda | cpu) ;; *) echo "run.sh: --device is cuda or cpu, not '$DEVICE'" >&2 && exit 2 ;; esac
[ -n "$OUT" ] || usage
T0=$(date +%s)
RESERVE=4 KILL_GRACE=5 MIN_STAGE=8 # seconds kept for the last report; timeout -k; the least a stage gets
T_END=$((T0 + DEADLINE))

if [ -z "$BIN" ]; then
    if [ -x "$ROOT/app/shardvit" ]; then BIN=$ROOT; elif [ $BUILD_FIRST = 1 ] || [ -x "$ROOT/build-gpu/app/shardvit" ]; then
        BIN=$ROOT/build-gpu
    else BIN=$ROOT/build; fi
fi
case "$BIN" in /*) ;; *) BIN=$PWD/$BIN ;; esac
SV=$BIN/app/shardvit
OPS=$BIN/tests/gpu/gpu_ops_vs_cpu
NCCLT=$BIN/tests/gpu/gpu_comm_nccl
MOD=$BIN/lib/libshardvit_cuda.so # the CUDA module the binaries load (core/cuda_module.h)
# ---------------------------------------------------------------- python, library search path
find_python() { # SV_GPU_CHECK_PYTHON: this interpreter first ("none": run without one)
    local p
    [ "${SV_GPU_CHECK_PYTHON:-}" = none ] && return 1
    for p in "${SV_GPU_CHECK_PYTHON:-}" "$(command -v python3 2> /dev/null)" /opt/torch/.venv/bin/python3 /usr/bin/python3; do
        [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import json' > /dev/null 2>&1 && echo "$p" && return 0
    done
    return 1
}
PY=$(find_python) || PY=""

# Folders with CUDA libraries: the nvidia-* wheels (nvidia/<pkg>/lib, CUDA 13's nvidia/cu13/lib)
# of every python3 found, then the toolkit.
cuda_lib_dirs() {
    local py sp d
    for py in "$(command -v python3 2> /dev/null)" /opt/torch/.venv/bin/python3 /usr/bin/python3; do
        [ -n "$py" ] && [ -x "$py" ] || continue
        timeout 10 "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' \
            2> /dev/null | while read -r sp; do
            for d in "$sp"/nvidia/*/lib "$sp"/nvidia/cu*/lib; do
                compgen -G "$d/lib*.so*" > /dev/null && echo "$d"
            done
        done
    done
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -d "$d" ] && echo "$d"
    done
}
LIB_DIRS=$( ([ -d "$BIN/lib" ] && echo "$BIN/lib"; cuda_lib_dirs) | awk '!seen[$0]++')
LD_LIBRARY_PATH=$(printf '%s\n' "$LIB_DIRS" ${LD_LIBRARY_PATH:+"$LD_LIBRARY_PATH"} | grep -v '^$' | paste -sd: -)
export LD_LIBRARY_PATH
export PATH="$PATH:/usr/local/cuda/bin"
# what the libraries say about their own failures (captured in every stage's log)
export CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=stderr CUBLASLT_LOG_LEVEL=2 NCCL_DEBUG=WARN

# ---------------------------------------------------------------- stages and their state
STAGES=(libs device ops tiny_vit_fp32 fsdp_bf16 attn_drop_fp32 attn_drop_bf16 nccl bench_vit-s16 bench_vit-b16 sanitizer)
[ $BUILD_FIRST = 1 ] && STAGES=(build "${STAGES[@]}")
# Time caps (s). Their sum stays below the default deadline with room for the final report, the
# kill grace and the reports written between stages (about 1 s per stage), so even stages that
# all run to their caps leave the last one its time (docs/gpu.md "Time budget";
# tests/gpu/run_faults.sh checks the sum).
declare -A CAP=([build]=1200 [libs]=15 [device]=30 [ops]=95 [tiny_vit_fp32]=25 [fsdp_bf16]=25 [attn_drop_fp32]=20
    [attn_drop_bf16]=20 [nccl]=20 [bench_vit-s16]=25 [bench_vit-b16]=30 [sanitizer]=90)
declare -A MINS=([sanitizer]=60) # a stage with less time left than this is not started (default MIN_STAGE)
CAPS_SUM=0
for s in "${STAGES[@]}"; do [ "$s" = build ] || CAPS_SUM=$((CAPS_SUM + CAP[$s])); done
declare -A STATUS SECS DETAIL
for s in "${STAGES[@]}"; do STATUS[$s]=pending SECS[$s]=0 DETAIL[$s]=""; done
for s in ${ONLY//,/ }; do
    [ -n "${STATUS[$s]:-}" ] || { echo "run.sh: --only: no stage '$s' (stages: ${STAGES[*]})" >&2; exit 2; }
done
CUR="" CHILD="" STAGE_END=0 STAGE_T0=0 STAGE_TIMED_OUT=0 NO_GPU=""
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-gpu-check.XXXXXX") || exit 2
mkdir -p "$WORK/logs" "$WORK/runs"
ENVF=$WORK/environment.txt
# MPICH starts UCX in every MPI process (training runs, the NCCL test's bootstrap). The runs here
# are on one node: self and shared-memory transports, and no module folder of this machine (the
# archive's UCX would load the machine's libuct_*.so plug-ins, possibly of another UCX version).
# A caller's own UCX_TLS / UCX_MODULE_DIR is kept.
if [ -n "${UCX_TLS:-}" ]; then UCX_NOTE="UCX_TLS=$UCX_TLS (the caller's)"; else
    export UCX_TLS=self,sm
    UCX_NOTE="UCX_TLS=self,sm (set by run.sh: one node)"
fi
if [ -n "${UCX_MODULE_DIR:-}" ]; then UCX_NOTE="$UCX_NOTE, UCX_MODULE_DIR=$UCX_MODULE_DIR (the caller's)"; else
    mkdir -p "$WORK/ucx-modules"
    export UCX_MODULE_DIR=$WORK/ucx-modules
    UCX_NOTE="$UCX_NOTE, UCX_MODULE_DIR=an empty folder (set by run.sh: no UCX plug-ins from this machine)"
fi

write_steps() { # -> WORK/steps.tsv (every stage of the plan, in order)
    local s
    for s in "${STAGES[@]}"; do
        printf '%s\t%s\t%s\t%s\n' "$s" "${STATUS[$s]}" "${SECS[$s]}" "$(printf '%s' "${DETAIL[$s]}" | tr '\t\n' '  ')"
    done > "$WORK/steps.tsv"
}
put() { # SRC NAME: copy into OUT by a rename, so OUT never holds a half-written NAME
    cp "$1" "$OUT/.$2.tmp" && mv -f "$OUT/.$2.tmp" "$OUT/$2"
}
# publish STATE [logs]: steps.tsv, report.md/json, environment.txt (+ logs.tgz) into OUT.
publish() {
    write_steps
    local now
    now=$(date +%s)
    if [ -n "$PY" ]; then
        "$PY" "$HERE/gpu_report.py" report "$WORK" "$OUT" --state "$1" --deadline "$DEADLINE" \
            --elapsed $((now - T0)) --device "$DEVICE" --bin "$BIN" > /dev/null 2>> "$WORK/logs/report.log" ||
            fallback_report "$1" $((now - T0))
    else
        fallback_report "$1" $((now - T0))
    fi
    put "$WORK/steps.tsv" steps.tsv
    put "$ENVF" environment.txt
    if [ "${2:-}" = logs ]; then
        tar -C "$WORK" --exclude=checkpoints --exclude=ucx-modules --exclude='*.tfevents.*' -czf "$OUT/.logs.tgz.tmp" . 2> /dev/null &&
            mv -f "$OUT/.logs.tgz.tmp" "$OUT/logs.tgz"
    fi
}
# Without a python3: the stage table alone (report.md) and a minimal report.json.
fallback_report() { # STATE ELAPSED
    awk -F'\t' -v state="$1" -v el="$2" -v dl="$DEADLINE" -v md="$OUT/.report.md.tmp" -v jsn="$OUT/.report.json.tmp" '
        function js(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
        BEGIN { print "# shardvit GPU check\n\nState: " state " after " el " s of a " dl " s deadline " \
                      "(no python3: stage table only).\n\n| stage | status | seconds | detail |\n|---|---|---|---|" > md
                printf "{\"state\":%s,\"elapsed_s\":%d,\"deadline_s\":%d,\"stages\":[", js(state), el, dl > jsn }
        { gsub(/\|/, "/", $4); print "| " $1 " | " $2 " | " $3 " | " $4 " |" > md
          printf "%s{\"name\":%s,\"status\":%s,\"seconds\":%d,\"detail\":%s}", (NR > 1 ? "," : ""), js($1), js($2), $3,
                 js($4) > jsn }
        END { print "]}" > jsn }' "$WORK/steps.tsv" &&
        mv -f "$OUT/.report.md.tmp" "$OUT/report.md" && mv -f "$OUT/.report.json.tmp" "$OUT/report.json"
}
finish() { # final report and exit status
    publish final logs
    echo "[gpu-check] report: $OUT/report.md ($(($(date +%s) - T0)) s of $DEADLINE)"
    rm -rf "$WORK"
    local s bad=0
    for s in "${STAGES[@]}"; do
        case "${STATUS[$s]}" in fail) bad=1 ;; timeout) [ "$s" = sanitizer ] || bad=1 ;; esac
        case "${STATUS[$s]}:${DETAIL[$s]}" in skipped:deadline*) [ "$s" = sanitizer ] || bad=1 ;; esac
    done
    exit $bad
}
on_signal() { # SIGNAL: stop the running command, record it, write the report, exit
    trap '' TERM INT
    if [ -n "$CHILD" ]; then
        kill -TERM "$CHILD" 2> /dev/null
        for _ in 1 2 3 4 5 6; do kill -0 "$CHILD" 2> /dev/null || break; sleep 0.5; done
        kill -KILL "$CHILD" 2> /dev/null
    fi
    if [ -n "$CUR" ]; then
        STATUS[$CUR]=fail SECS[$CUR]=$(($(date +%s) - STAGE_T0)) DETAIL[$CUR]="stopped by SIG$1 ${DETAIL[$CUR]}"
    fi
    publish "stopped by SIG$1" logs
    rm -rf "$WORK"
    exit $((128 + $2))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT

# sv_run LOG CMD...: CMD (stdout + stderr appended to LOG) under the stage's time budget.
# Returns CMD's status; 124 when the budget ran out (STAGE_TIMED_OUT=1).
sv_run() {
    local log=$1 t rc
    shift
    t=$((STAGE_END - $(date +%s)))
    if [ $t -lt 1 ]; then
        echo "[gpu-check] not started, the stage's time is used up: $*" >> "$log"
        STAGE_TIMED_OUT=1
        return 124
    fi
    [ "${SV_GPU_CHECK_HANG:-}" = "$CUR" ] && set -- sleep 100000
    echo "[gpu-check] $(date -u +%H:%M:%S) (limit ${t}s) $*" >> "$log"
    timeout -k $KILL_GRACE $t "$@" >> "$log" 2>&1 < /dev/null &
    CHILD=$!
    wait $CHILD
    rc=$?
    CHILD=""
    if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ "$(date +%s)" -ge $((STAGE_END - 1)) ]; }; then
        STAGE_TIMED_OUT=1
        echo "[gpu-check] timed out after ${t}s" >> "$log"
        return 124
    fi
    return $rc
}
line() { # KIND FILES...: a one-line summary by gpu_report.py
    [ -n "$PY" ] && "$PY" "$HERE/gpu_report.py" line "$@" 2>> "$WORK/logs/report.log"
}
# first_error LOG: the line of LOG that says what went wrong: the program's own error line
# ("shardvit train: error: ..."), else the first line naming an error, a failure, something not
# found, a skip, an abort or a timeout. Never the command line sv_run wrote, nor the resolved
# configuration every `shardvit train` prints first (the `key = value` lines after "resolved
# configuration:", where max-skipped-steps = -1 would pass for a skip).
first_error() {
    awk '
        /^\[gpu-check\] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] \(limit [0-9]+s\) / { cfg = 0; next }
        /resolved configuration:$/ { cfg = 1; next }
        cfg && /^[A-Za-z0-9_.-]+ = / { next }
        { cfg = 0 }
        own == "" && /(^|[^A-Za-z0-9_])error: / { own = $0 }
        any == "" && tolower($0) ~ /error|fail|not found|cannot|skip|abort|timed out/ { any = $0 }
        END { s = own != "" ? own : any; if (s != "") print substr(s, 1, 300) }' "$1" 2> /dev/null
}
run_error() { # RUN: why a training run failed
    local e
    e=$(first_error "$WORK/logs/$1.log")
    echo "${e:-$(tail -1 "$WORK/logs/$1.log" | cut -c1-300)} (logs/$1.log)"
}

# run_stage NAME FUNCTION: the stage under min(its cap, time left); FUNCTION sets RES / RES_DETAIL.
run_stage() {
    local name=$1 fn=$2 now left budget
    now=$(date +%s)
    left=$((T_END - now - RESERVE - KILL_GRACE))
    if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then
        STATUS[$name]=skipped DETAIL[$name]="not selected (--only $ONLY)"
        return
    fi
    if [ -n "$NO_GPU" ] && [ "$name" != libs ] && [ "$name" != device ] && [ "$name" != build ]; then
        STATUS[$name]=skipped DETAIL[$name]="$NO_GPU"
        return
    fi
    if [ $left -lt "${MINS[$name]:-$MIN_STAGE}" ]; then
        STATUS[$name]=skipped DETAIL[$name]="deadline: $((left > 0 ? left : 0))s left of ${DEADLINE}s"
        return
    fi
    budget=${CAP[$name]}
    [ "$budget" -le $left ] || budget=$left
    STAGE_END=$((now + budget)) STAGE_T0=$now STAGE_TIMED_OUT=0 CUR=$name
    STATUS[$name]=running DETAIL[$name]="started $(date -u +%H:%M:%S), limit ${budget}s"
    echo "[gpu-check] $name (limit ${budget}s)"
    publish running
    RES=fail RES_DETAIL=""
    "$fn"
    [ $STAGE_TIMED_OUT = 1 ] && [ "$RES" != pass ] && RES=timeout RES_DETAIL="limit ${budget}s reached; $RES_DETAIL"
    STATUS[$name]=$RES SECS[$name]=$(($(date +%s) - now)) DETAIL[$name]=$RES_DETAIL CUR=""
    printf '[gpu-check] %-16s %-8s %4ss  %s\n' "$name" "$RES" "${SECS[$name]}" "$RES_DETAIL"
    publish running logs
}

# ---------------------------------------------------------------- the stages
stage_build() {
    local mpi=ON
    command -v mpicc > /dev/null 2>&1 || mpi=OFF
    sv_run "$WORK/logs/build.log" cmake -S "$ROOT" -B "$BIN" -DSHARDVIT_CUDA=ON -DSHARDVIT_MPI=$mpi \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release &&
        sv_run "$WORK/logs/build.log" cmake --build "$BIN" -j"$(nproc 2> /dev/null || echo 4)" &&
        RES=pass RES_DETAIL="built $BIN (MPI $mpi)" && return
    RES_DETAIL="$(first_error "$WORK/logs/build.log")"
}

stage_libs() {
    local bin missing="" n=0 f cudnn_dir sub lacking=""
    {
        echo "== library search path (LD_LIBRARY_PATH)"
        printf '%s\n' "$LIB_DIRS" | sed 's/^/  /'
    } >> "$ENVF"
    for bin in "$SV" "$MOD" "$OPS" "$NCCLT"; do
        [ -e "$bin" ] || continue
        f=$WORK/logs/ldd_$(basename "$bin").txt
        sv_run "$f" ldd "$bin"
        { echo "== ldd ${bin#"$BIN"/}"; grep -v '^\[gpu-check\]' "$f"; } >> "$ENVF"
        n=$((n + 1))
        missing="$missing$(grep 'not found' "$f" | sed -E 's/^[[:space:]]*//; s/ => not found//' |
            sed "s|\$| (${bin##*/})|" | tr '\n' ';')"
    done
    [ $n -gt 0 ] || { RES_DETAIL="no binaries in $BIN (app/shardvit, tests/gpu/gpu_ops_vs_cpu)"; return; }
    # cuDNN loads its engines from sub-libraries next to libcudnn.so.9 at run time (ldd cannot see them)
    cudnn_dir=$(cat "$WORK/logs/ldd_libshardvit_cuda.so.txt" "$WORK/logs/ldd_shardvit.txt" 2> /dev/null |
        awk '$1 == "libcudnn.so.9" && $3 ~ /^\// {print $3; exit}')
    if [ -n "$cudnn_dir" ]; then
        cudnn_dir=$(dirname "$(readlink -f "$cudnn_dir")")
        for sub in graph ops heuristic engines_precompiled engines_runtime_compiled; do
            [ -e "$cudnn_dir/libcudnn_$sub.so.9" ] || lacking="$lacking libcudnn_$sub.so.9"
        done
    fi
    local nvrtc="no libnvrtc.so.13 on the search path (cuDNN's runtime-compiled engines need it)"
    for f in $LIB_DIRS; do [ -e "$f/libnvrtc.so.13" ] && nvrtc="libnvrtc in $f" && break; done
    echo "== $nvrtc" >> "$ENVF"
    # a CUDA-enabled build's binaries load the CUDA backend from its module (core/cuda_module.h):
    # `shardvit version --cuda` loads it and says from where, with the CUDA library versions
    # (after the ldd lines above, which stay on record if this first CUDA initialisation hangs)
    if [ -x "$SV" ]; then
        local vrc
        sv_run "$WORK/logs/version.txt" "$SV" version --cuda
        vrc=$?
        { echo "== shardvit version --cuda (exit $vrc)"; grep -v '^\[gpu-check\]' "$WORK/logs/version.txt"; } >> "$ENVF"
        if [ $vrc -ne 0 ]; then
            missing="${missing}shardvit version --cuda exited $vrc;"
        elif grep -q '^build: .*CUDA on' "$WORK/logs/version.txt" && ! grep -q '^cuda: module /' "$WORK/logs/version.txt"; then
            [ -e "$MOD" ] || missing="$missing${MOD#"$BIN"/} (the CUDA module of this CUDA-enabled build);"
            missing="$missing$(grep -m1 '^cuda: module not loaded' "$WORK/logs/version.txt" | cut -c1-300 || echo 'the CUDA module was not loaded');"
        fi
    fi
    if [ -n "$missing" ] || [ -n "$lacking" ]; then
        RES_DETAIL="${missing:+not found: $missing}${lacking:+ cuDNN sub-libraries missing in $cudnn_dir:$lacking}"
        echo "[gpu-check] libraries: $RES_DETAIL" >&2
        return
    fi
    RES=pass RES_DETAIL="$n binaries, every library resolves; $nvrtc; $(grep -m1 '^cuda: module /' "$WORK/logs/version.txt" 2> /dev/null | cut -c1-200)"
}

stage_device() {
    [ -x "$SV" ] || { RES_DETAIL="no $SV" NO_GPU="no shardvit binary"; return; }
    local log=$WORK/logs/device.log q=name,pci.bus_id,driver_version,memory.total,clocks.max.sm,clocks.max.memory
    q=$q,power.limit,compute_cap,pcie.link.gen.max
    if command -v nvidia-smi > /dev/null 2>&1; then
        sv_run "$WORK/logs/nvidia-smi-q.txt" nvidia-smi -q
        sv_run "$WORK/nvidia-smi.csv" nvidia-smi --query-gpu=$q --format=csv
        sv_run "$WORK/logs/nvidia-smi-L.txt" nvidia-smi -L
        { echo "== nvidia-smi --query-gpu"; grep -v '^\[gpu-check\]' "$WORK/nvidia-smi.csv"; } >> "$ENVF"
    else
        echo "== nvidia-smi: not found" >> "$ENVF"
    fi
    # A first CUDA process: cuBLASLt GEMMs, with the loader listing every library it loads.
    LD_DEBUG=libs LD_DEBUG_OUTPUT=$WORK/logs/ld_debug sv_run "$log" "$SV" bench --op matmul --model vit-s16 \
        --batch-size 8 --steps 3 --warmup 1 --device "$DEVICE" --param-dtype bf16 --json "$WORK/device_op.json"
    local rc=$?
    {
        echo "== libraries loaded by 'shardvit bench --op matmul --device $DEVICE' (LD_DEBUG=libs)"
        cat "$WORK"/logs/ld_debug.* 2> /dev/null | sed -n 's/.*calling init: //p' | awk '!seen[$0]++' | sed 's/^/  /'
        echo "== versions: $(line device "$WORK/device_op.json")"
        grep -v '^\[gpu-check\]' "$WORK/logs/nvidia-smi-q.txt" 2> /dev/null
    } >> "$ENVF"
    if [ $rc -eq 0 ] && { [ "$DEVICE" = cpu ] || grep -q '"gpu":{' "$WORK/device_op.json" 2> /dev/null; }; then
        RES=pass RES_DETAIL="$(line device "$WORK/device_op.json")"
        return
    fi
    local why ngpu
    why=$(grep -m1 -E 'error' "$log" | cut -c1-240)
    ngpu=$(grep -c '^GPU' "$WORK/logs/nvidia-smi-L.txt" 2> /dev/null)
    command -v nvidia-smi > /dev/null 2>&1 || why="nvidia-smi not found; $why"
    if [ "${ngpu:-0}" -gt 0 ] && ! grep -q 'no usable CUDA device' "$log"; then
        # a GPU is there but the first CUDA process failed: the later stages say more
        RES_DETAIL="nvidia-smi lists $ngpu GPU(s), but: ${why:-rc=$rc, see logs/device.log}"
        return
    fi
    RES_DETAIL="no CUDA device: ${why:-rc=$rc, see logs/device.log}"
    NO_GPU="no CUDA device"
}

stage_ops() {
    [ -x "$OPS" ] || { RES_DETAIL="no $OPS"; return; }
    sv_run "$WORK/logs/ops.log" "$OPS" --json "$WORK/ops.json"
    case $? in
        0) RES=pass ;;
        77) RES=skipped RES_DETAIL="$(grep -m1 SKIP "$WORK/logs/ops.log")" && return ;;
    esac
    RES_DETAIL="$(line ops "$WORK/ops.json")"
    [ $RES = pass ] || RES_DETAIL="$RES_DETAIL; $(grep -m1 -E 'CHECK|rror' "$WORK/logs/ops.log" | cut -c1-200)"
}

TINY="--model vit-28 --dim 64 --depth 2 --heads 2 --batch-size 32 --synth-samples 256"
train() { # NAME DEVICE FLAGS...: one run into WORK/runs/NAME
    local name=$1 dev=$2
    shift 2
    sv_run "$WORK/logs/$name.log" "$SV" train --device "$dev" --data synthetic --out "$WORK/runs/$name" \
        --log-every 1 --seed 7 --workers 2 "$@"
}
# pair NAME "KEY:TOL ..." FLAGS...: NAME_dev on $DEVICE and NAME_cpu on the CPU, then each
# KEY (loss = forward, grad_norm = backward) compared within TOL by compare_losses.py.
pair() {
    local name=$1 keys=$2 k ok=1 parts=""
    shift 2
    train "${name}_dev" "$DEVICE" "$@" || { RES_DETAIL="device run: $(run_error "${name}_dev")"; return; }
    train "${name}_cpu" cpu "$@" || { RES_DETAIL="CPU reference run: $(run_error "${name}_cpu")"; return; }
    [ -n "$PY" ] || { RES_DETAIL="no python3 to compare the runs"; return; }
    for k in $keys; do
        "$PY" "$HERE/compare_losses.py" "$WORK/runs/${name}_dev/metrics.jsonl" "$WORK/runs/${name}_cpu/metrics.jsonl" \
            --key "${k%%:*}" --tol "${k#*:}" --name "${name}_${k%%:*}" > "$WORK/cmp_${name}_${k%%:*}.json" || ok=0
        parts="$parts${parts:+; }$(line compare "$WORK/cmp_${name}_${k%%:*}.json")"
    done
    RES_DETAIL=$parts
    [ $ok = 1 ] && RES=pass
}
stage_tiny_vit_fp32() { pair tiny_vit_fp32 "loss:1e-3 grad_norm:1e-3" $TINY --param-dtype fp32 --steps 4 --lr 1e-3 --warmup 0; }
stage_fsdp_bf16() { pair fsdp_bf16 "loss:5e-2" $TINY --param-dtype bf16 --steps 20 --lr 1e-3 --warmup 2; }
stage_attn_drop_fp32() {
    pair attn_drop_fp32 "loss:1e-3 grad_norm:1e-3" $TINY --param-dtype fp32 --steps 4 --lr 1e-3 --warmup 0 --attn-drop 0.2
}
stage_attn_drop_bf16() {
    pair attn_drop_bf16 "loss:5e-2" $TINY --param-dtype bf16 --steps 10 --lr 1e-3 --warmup 2 --attn-drop 0.2
    [ "$DEVICE" = cuda ] || return
    case "$RES_DETAIL" in "device run:"*) return ;; esac # it failed: its error, no note count
    local n
    n=$(grep -c 'attention dropout: training attention runs the plain CUDA kernels' "$WORK/logs/attn_drop_bf16_dev.log")
    RES_DETAIL="$RES_DETAIL; routing note logged ${n}x (expected once)"
}

stage_nccl() {
    [ -x "$NCCLT" ] || { RES=skipped RES_DETAIL="no gpu_comm_nccl (a build without MPI)"; return; }
    sv_run "$WORK/logs/nccl.log" "$NCCLT"
    case $? in
        0) RES=pass RES_DETAIL="1 rank: $(tail -1 "$WORK/logs/nccl.log" | cut -c1-160)" ;;
        77) RES=skipped RES_DETAIL="$(grep -m1 SKIP "$WORK/logs/nccl.log")" && return ;;
        *) RES_DETAIL="1 rank: $(first_error "$WORK/logs/nccl.log")" && return ;;
    esac
    local ngpu mpiexec
    ngpu=$(grep -c '^GPU' "$WORK/logs/nvidia-smi-L.txt" 2> /dev/null)
    mpiexec=$(command -v mpiexec 2> /dev/null)
    if [ "${ngpu:-0}" -lt 2 ]; then
        RES_DETAIL="$RES_DETAIL; 2 ranks skipped: one GPU"
    elif [ -z "$mpiexec" ]; then
        RES_DETAIL="$RES_DETAIL; 2 ranks skipped: no mpiexec"
    elif sv_run "$WORK/logs/nccl_2ranks.log" "$mpiexec" -n 2 "$NCCLT"; then
        RES_DETAIL="$RES_DETAIL; 2 ranks: pass"
    else
        RES=fail RES_DETAIL="$RES_DETAIL; 2 ranks: $(first_error "$WORK/logs/nccl_2ranks.log")"
    fi
}

bench() { # MODEL
    local size="--batch-size 64 --steps 20 --warmup 3"
    [ "$DEVICE" = cpu ] && size="--batch-size 2 --steps 1 --warmup 0 --calib-seconds 0 --img 64"
    # cuBLASLt's per-call trace would slow the timed steps: errors only here
    CUBLASLT_LOG_LEVEL=1 sv_run "$WORK/logs/bench_$1.log" "$SV" bench --model "$1" $size --device "$DEVICE" \
        --param-dtype bf16 --json "$WORK/bench_$1.json"
    local rc=$?
    if [ $rc -eq 0 ] && [ -s "$WORK/bench_$1.json" ]; then
        RES=pass RES_DETAIL="$(line bench "$WORK/bench_$1.json")"
    else
        RES_DETAIL="rc=$rc: $(first_error "$WORK/logs/bench_$1.log")"
    fi
}
stage_bench_vit-s16() { bench vit-s16; }
stage_bench_vit-b16() { bench vit-b16; }

# compute-sanitizer returns the op test's own exit status when memcheck found nothing (99 when it
# found errors). The op test exits 1 for a value outside its tolerance (the ops stage judges those)
# but also when it could not create its CUDA backend, e.g. where the sanitizer cannot attach to the
# device; memcheck then checked nothing. So exit 1 passes only when the op test's own report
# (sanitizer_ops.json) shows that its checks ran.
stage_sanitizer() {
    local cs log=$WORK/logs/sanitizer.log js=$WORK/sanitizer_ops.json
    cs=$(command -v compute-sanitizer 2> /dev/null)
    [ -n "$cs" ] || { RES=skipped RES_DETAIL="no compute-sanitizer"; return; }
    [ -x "$OPS" ] || { RES_DETAIL="no $OPS"; return; }
    sv_run "$log" "$cs" --tool memcheck --print-limit 50 --error-exitcode 99 "$OPS" --json "$js"
    local rc=$? summary ran="" own
    summary=$(grep -m1 'ERROR SUMMARY' "$log" | sed 's/^=* *//')
    # what the sanitizer itself said went wrong (it cannot attach, the target ended early, ...)
    own=$(grep -m1 -E '^=+ +(Error|Internal Sanitizer Error)' "$log" | sed 's/^=* *//' | cut -c1-200)
    [ -n "$PY" ] && ran=$(line sanitized_ops "$js")
    if [ -z "$ran" ]; then # no python3: the op test's own lines (backend failures, its last line)
        if grep -q 'sv_backend_create on' "$log"; then
            ran="not run: $(grep -m1 'sv_backend_create on' "$log" | sed 's/  *FAIL$//; s/  */ /g' | cut -c1-200)"
        elif grep -qE '^[0-9]+ of [0-9]+ checks failed' "$log"; then
            ran="ran: $(grep -m1 -E '^[0-9]+ of [0-9]+ checks failed' "$log")"
        else
            ran="unknown: no report of the op test"
        fi
    fi
    case $rc in
        0) RES=pass RES_DETAIL="memcheck of gpu_ops_vs_cpu: ${summary:-no summary}; the op test: ${ran#*: }" ;;
        1) if [ "${ran%%:*}" = ran ]; then
            RES=pass
            RES_DETAIL="memcheck of gpu_ops_vs_cpu: ${summary:-no summary}; the op test ran (exit 1: ${ran#*: };"
            RES_DETAIL="$RES_DETAIL the ops stage judges its values)"
        else
            RES_DETAIL="under compute-sanitizer the op test exited 1 without running its checks (memcheck checked"
            RES_DETAIL="$RES_DETAIL nothing): ${ran#*: }${own:+; sanitizer: $own}; memcheck ${summary:-no summary}"
            [ "${ran%%:*}" = unknown ] && RES_DETAIL="$RES_DETAIL; $(first_error "$log")"
        fi ;;
        77) RES=skipped RES_DETAIL="$(grep -m1 SKIP "$log")" ;;
        124)
            RES_DETAIL="memcheck unfinished: ${summary:-no summary yet}; $(grep -c '^=* *Invalid' "$log")"
            RES_DETAIL="$RES_DETAIL invalid-access reports so far; the op test so far: ${ran#*: }" ;;
        99) RES_DETAIL="memcheck found errors: ${summary:-no summary}; $(grep -m1 -E '^=+ +(Invalid|Program hit|Uninit|Leaked)' "$log" |
            sed 's/^=* *//' | cut -c1-200)" ;;
        *) RES_DETAIL="compute-sanitizer rc=$rc: ${own:-${summary:-$(first_error "$log")}}; the op test: ${ran#*: }" ;;
    esac
}

# ---------------------------------------------------------------- run
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)  kernel: $(uname -r)"
    echo "glibc: $(getconf GNU_LIBC_VERSION 2> /dev/null)  python3: ${PY:-none}  device: $DEVICE  deadline: ${DEADLINE}s"
    echo "binaries: $BIN"
    [ -f "$BIN/build-info.txt" ] && sed 's/^/  /' "$BIN/build-info.txt"
    [ -f "$BIN/build-info.txt" ] || echo "  $("$SV" --version 2>&1 | head -1)"
    echo "diagnostics: CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=stderr CUBLASLT_LOG_LEVEL=2 (1 in bench) NCCL_DEBUG=WARN"
    echo "MPI transport: $UCX_NOTE"
    echo "time budget: the stage caps sum to ${CAPS_SUM}s; deadline ${DEADLINE}s (default ${DEFAULT_DEADLINE}s)$(
        [ "$DEADLINE" -ge $((CAPS_SUM + RESERVE + KILL_GRACE + ${#STAGES[@]})) ] ||
            echo ": the last stages may be skipped for the deadline")"
} > "$ENVF"
publish running
for s in "${STAGES[@]}"; do run_stage "$s" "stage_$s"; done
finish
