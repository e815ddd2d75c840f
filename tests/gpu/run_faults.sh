#!/usr/bin/env bash
# tests/gpu/run.sh's stages when their CUDA processes fail, on a machine without a GPU (exit 77
# where nvidia-smi lists one):
#  1. the training stages (tiny_vit_fp32, fsdp_bf16, attn_drop_fp32, attn_drop_bf16) and a
#     benchmark, run without the device stage: each `shardvit train/bench --device cuda` fails
#     with "no usable CUDA device", and the stage's detail names that error, not a line of the
#     resolved configuration every train log starts with (max-skipped-steps = -1);
#  2. library versions without device_op.json (--device cpu, a training stage only): report.md
#     takes them from the run's metrics.jsonl header and says so;
#  3. the time budget: the stage caps (sanitizer included) sum to less than the default deadline,
#     with room for the reports between stages;
#  4. the sanitizer stage with a stand-in compute-sanitizer (first on PATH) around the real
#     gpu_ops_vs_cpu: where the op test cannot create its CUDA backend (a preloaded stand-in of
#     cudart reports one GPU and refuses cudaSetDevice, as a device the sanitizer cannot attach
#     to would) it exits 1 with "ERROR SUMMARY: 0 errors" and the stage must fail naming the
#     backend's error; an op test whose checks ran and exited 1 (a value outside its tolerance)
#     passes; memcheck errors (exit 99) fail; the commands see UCX_TLS=self,sm and an empty
#     UCX_MODULE_DIR unless the caller set them;
#  5. gpu_comm_nccl under the same cudart stand-in: one rank with one GPU whose backend cannot
#     be created exits 1 with the backend's message (not 77); two ranks on a node with one GPU
#     exit 77 (with mpiexec).
# Parts 4 (the failing backend) and 5 need a C compiler for the stand-in (skipped without one).
#   run_faults.sh BUILD_DIR
set -u
NAME=run_faults.sh
source "$(dirname "$0")/nogpu_lib.sh"
unpack_logs() { mkdir -p "$1/x" && tar -xzf "$1/logs.tgz" -C "$1/x"; }

# ---- 1. failing CUDA training runs and benchmark: the stage names the program's error ----
TRAIN="tiny_vit_fp32 fsdp_bf16 attn_drop_fp32 attn_drop_bf16"
OUT=$T/o1 bash "$RUN" --deadline 120 --only "$(tr ' ' , <<< "$TRAIN"),bench_vit-s16" "$BUILD" > "$T/o1.log" 2>&1
unpack_logs "$T/o1"
grep -q '^max-skipped-steps = -1$' "$T/o1/x/logs/tiny_vit_fp32_dev.log" ||
    fail "the train log does not start with the resolved configuration the check is about"
# the error of a CUDA process here: no device, or (a build without CUDA) no CUDA backend
NOCUDA='error: (no usable CUDA device|this shardvit build has no CUDA backend)'
for s in $TRAIN; do
    st=$(status "$T/o1" "$s")
    echo "$s: $st"
    grep -qE "^fail: device run: shardvit train: $NOCUDA.*\(logs/${s}_dev\.log\)\$" <<< "$st" ||
        fail "$s does not name the run's error: $st"
    grep -qF "| $s | fail |" "$T/o1/report.md" || fail "report.md's stage table lacks $s as fail"
    grep -qE "^$s	fail	[0-9]+	device run: shardvit train: $NOCUDA" "$T/o1/steps.tsv" ||
        fail "steps.tsv's line of $s: $(grep "^$s	" "$T/o1/steps.tsv")"
done
grep -q 'skipped-steps' "$T/o1/report.md" "$T/o1/steps.tsv" && fail "a configuration line reached the report"
st=$(status "$T/o1" bench_vit-s16)
echo "bench_vit-s16: $st"
grep -qE "^fail: rc=1: shardvit bench: $NOCUDA" <<< "$st" || fail "bench_vit-s16: $st"
echo "1 ok: failed CUDA runs are reported with their own error"
# run.sh's first_error on its own: the real failed CUDA log above, and a real training log stopped
# by its time limit (as sv_run writes it: the command line, the output, "timed out")
eval "$(sed -n '/^first_error() {/,/^}$/p' "$RUN")"
declare -F first_error > /dev/null || fail "no first_error function in run.sh"
e=$(first_error "$T/o1/x/logs/tiny_vit_fp32_dev.log")
grep -qE "^shardvit train: $NOCUDA" <<< "$e" || fail "first_error of the CUDA log: '$e'"
L=$T/timeout.log
cmd=("$BUILD/app/shardvit" train --device cpu --data synthetic --out "$T/runs/slow" --log-every 1 --seed 7 --workers 2
    --model vit-28 --dim 64 --depth 2 --heads 2 --batch-size 32 --synth-samples 256 --steps 100000)
echo "[gpu-check] $(date -u +%H:%M:%S) (limit 3s) ${cmd[*]}" > "$L"
timeout -k 5 3 "${cmd[@]}" >> "$L" 2>&1
echo "[gpu-check] timed out after 3s" >> "$L"
grep -q '^max-skipped-steps = -1$' "$L" || fail "the slow run's log lacks its configuration"
e=$(first_error "$L")
[ "$e" = "[gpu-check] timed out after 3s" ] || fail "first_error of a timed-out training log: '$e'"
echo "1b ok: first_error names the program's error / the time limit, never the configuration"

# ---- 2. library versions without device_op.json ----
OUT=$T/o2 bash "$RUN" --device cpu --deadline 60 --only tiny_vit_fp32 "$BUILD" > "$T/o2.log" 2>&1 ||
    fail "run.sh --device cpu --only tiny_vit_fp32: $(tail -3 "$T/o2.log")"
unpack_logs "$T/o2"
[ ! -e "$T/o2/x/device_op.json" ] || fail "device_op.json exists though the device stage did not run"
grep -q '^| library versions from | runs/tiny_vit_fp32_dev/metrics.jsonl (not device_op.json' "$T/o2/report.md" ||
    fail "report.md does not say where the versions came from: $(grep -i 'versions from' "$T/o2/report.md")"
grep -qE '^\| OpenBLAS / MPI \| OpenBLAS [0-9]' "$T/o2/report.md" ||
    fail "report.md lacks the OpenBLAS version: $(grep 'OpenBLAS' "$T/o2/report.md")"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; assert s["openblas"] and s["commit"], s' \
    "$T/o2/report.json" || fail "report.json's summary lacks the versions"
echo "2 ok: versions from the training run's metrics.jsonl header when device_op.json is missing"

# ---- 3. the stage caps fit the default deadline ----
budget=$(grep -m1 '^time budget:' "$T/o2/environment.txt")
echo "$budget"
caps=$(sed -n 's/^time budget: the stage caps sum to \([0-9]*\)s;.*/\1/p' <<< "$budget")
deflt=$(sed -n 's/.*(default \([0-9]*\)s).*/\1/p' <<< "$budget")
[ -n "$caps" ] && [ -n "$deflt" ] || fail "environment.txt lacks the time budget line"
# room: the final report (4 s), one kill grace (5 s) and ~1 s of reports per stage (11 stages)
[ $((caps + 4 + 5 + 11)) -le "$deflt" ] || fail "stage caps $caps s leave no room in the default deadline $deflt s"
echo "3 ok: the stage caps ($caps s) fit the default deadline ($deflt s) with $((deflt - caps)) s left"

# ---- 4. the sanitizer stage with a stand-in compute-sanitizer ----
mkdir -p "$T/bin"
cat > "$T/bin/compute-sanitizer" << 'EOF'
#!/usr/bin/env bash
# stand-in: SV_STUB=noattach | tolerance | errors | env (see run_faults.sh)
env | grep '^UCX_' > "$SV_STUB_ENV"
while [ $# -gt 0 ]; do
    case "$1" in --tool | --print-limit | --error-exitcode) shift 2 ;; --*) shift ;; *) break ;; esac
done
json=""
[ "${2:-}" = --json ] && json=$3
echo "========= COMPUTE-SANITIZER"
case "$SV_STUB" in
    noattach) # the op test itself, with a cudart whose device cannot be used
        LD_PRELOAD=$SV_STUB_SHIM LD_LIBRARY_PATH=$SV_STUB_DRV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"
        rc=$? ;;
    tolerance) # an op test whose checks ran, one value outside its tolerance
        [ -n "$json" ] && printf '%s\n' '{"results":[' \
            '{"op":"gelu","variant":"fp32","output":"out","rel_err":0,"tol":0,"ok":true},' \
            '{"op":"layernorm","variant":"bf16","output":"dx","rel_err":0.05,"tol":0.03,"ok":false}' \
            '],"checks":2,"failures":1,"aborted":false}' > "$json"
        echo "1 of 2 checks failed"
        rc=1 ;;
    errors)
        echo "========= Invalid __global__ read of size 4 bytes"
        echo "========= ERROR SUMMARY: 1 error"
        exit 99 ;;
    *) rc=0 ;;
esac
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
EOF
chmod +x "$T/bin/compute-sanitizer"
sanitize() { # MODE OUT [ENV...]: the sanitizer stage alone with the stand-in
    local mode=$1 out=$2
    shift 2
    env PATH="$T/bin:$PATH" SV_STUB="$mode" SV_STUB_ENV="$out.env" SV_STUB_SHIM="$T/shim.so" SV_STUB_DRV="$T/drv" "$@" \
        OUT="$out" bash "$RUN" --deadline 90 --only sanitizer "$BUILD" > "$out.log" 2>&1
}
sanitize tolerance "$T/s_tol"
st=$(status "$T/s_tol" sanitizer)
echo "op test ran, 1 value outside tolerance: $st"
case "$st" in "pass: memcheck of gpu_ops_vs_cpu: ERROR SUMMARY: 0 errors; the op test ran (exit 1: 2 checks, 1 outside"*) ;;
    *) fail "sanitizer with an op test that ran: $st" ;; esac
sanitize errors "$T/s_err"
st=$(status "$T/s_err" sanitizer)
echo "memcheck errors: $st"
case "$st" in "fail: memcheck found errors: ERROR SUMMARY: 1 error; Invalid __global__ read"*) ;;
    *) fail "sanitizer with memcheck errors: $st" ;; esac
# UCX settings the stage's commands see
grep -qx 'UCX_TLS=self,sm' "$T/s_err.env" || fail "UCX_TLS in the stage: $(cat "$T/s_err.env")"
mods=$(sed -n 's/^UCX_MODULE_DIR=//p' "$T/s_err.env")
case "$mods" in "${TMPDIR:-/tmp}"/shardvit-gpu-check.*/ucx-modules) ;; *) fail "UCX_MODULE_DIR in the stage: '$mods'" ;; esac
grep -q '^MPI transport: UCX_TLS=self,sm (set by run.sh: one node), UCX_MODULE_DIR=an empty folder' \
    "$T/s_err/environment.txt" || fail "environment.txt does not say how UCX was set: $(grep -i ucx "$T/s_err/environment.txt")"
sanitize errors "$T/s_env" UCX_TLS=tcp,self UCX_MODULE_DIR=/nonexistent
grep -qx 'UCX_TLS=tcp,self' "$T/s_env.env" && grep -qx 'UCX_MODULE_DIR=/nonexistent' "$T/s_env.env" ||
    fail "the caller's UCX settings were not kept: $(cat "$T/s_env.env")"
grep -q "^MPI transport: UCX_TLS=tcp,self (the caller's), UCX_MODULE_DIR=/nonexistent (the caller's)" \
    "$T/s_env/environment.txt" || fail "environment.txt with the caller's UCX: $(grep -i ucx "$T/s_env/environment.txt")"
echo "4a ok: sanitizer pass / fail by the op test's own report and memcheck's; UCX one-node settings (or the caller's)"

CC=$(command -v cc || command -v gcc || true)
if [ -z "$CC" ]; then
    echo "4b, 5: SKIP: no C compiler for the cudart stand-in"
    exit 0
fi
# A cudart stand-in, preloaded: N GPUs (SV_SHIM_GPUS, default 1) whose cudaSetDevice fails with
# cudaErrorDevicesUnavailable (46), as on a device that another process or a sanitizer cannot use.
cat > "$T/shim.c" << 'EOF'
#include <stdlib.h>
#include <string.h>
static int count(void) {
    const char *s = getenv("SV_SHIM_GPUS");
    return s ? atoi(s) : 1;
}
int cudaGetDeviceCount(int *n) {
    *n = count();
    return 0;
}
int cudaSetDevice(int d) { return d >= 0 && d < count() ? 46 : 101; }
int cudaGetDeviceProperties(void *prop, int d) {
    if (d < 0 || d >= count()) return 101;
    memset(prop, 0, 256); /* cudaDeviceProp starts with char name[256] */
    strcpy((char *)prop, "stand-in GPU");
    return 0;
}
int cudaGetDeviceProperties_v2(void *prop, int d) { return cudaGetDeviceProperties(prop, d); }
EOF
"$CC" -shared -fPIC -o "$T/shim.so" "$T/shim.c" || fail "cannot compile the cudart stand-in"
# ... and the same file as the driver's library, libcuda.so.1, first on LD_LIBRARY_PATH: without
# one a CUDA-enabled build answers "no CUDA device" before it loads its CUDA module
# (core/cuda_module.h), as on a machine without the NVIDIA driver
mkdir -p "$T/drv" && cp "$T/shim.so" "$T/drv/libcuda.so.1"
SHIM_LLP=$T/drv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SHIM=(LD_PRELOAD="$T/shim.so" LD_LIBRARY_PATH="$SHIM_LLP")
OPS=$BUILD/tests/gpu/gpu_ops_vs_cpu
if ! env "${SHIM[@]}" "$OPS" --json "$T/probe.json" > "$T/probe.log" 2>&1 &&
    grep -q 'sv_backend_create on cuda' "$T/probe.log"; then
    sanitize noattach "$T/s_na"
    st=$(status "$T/s_na" sanitizer)
    echo "op test without a usable backend under the sanitizer: $st"
    case "$st" in
        "fail: under compute-sanitizer the op test exited 1 without running its checks (memcheck checked nothing):"*"cudaErrorDevicesUnavailable"*"ERROR SUMMARY: 0 errors"*) ;;
        *) fail "sanitizer around an op test that could not create its backend: $st" ;;
    esac
    echo "4b ok: an op test that could not create its backend under the sanitizer is a failure, with its error"
elif grep -q '^SHARDVIT_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" 2> /dev/null; then
    fail "the cudart stand-in does not reach gpu_ops_vs_cpu's CUDA backend in this CUDA-enabled build: $(tail -3 "$T/probe.log")"
else
    echo "4b: SKIP: a build without CUDA: the cudart stand-in has no backend to reach: $(tail -1 "$T/probe.log")"
fi

NCCLT=$BUILD/tests/gpu/gpu_comm_nccl
if [ -x "$NCCLT" ]; then
    env "${SHIM[@]}" timeout 60 "$NCCLT" > "$T/nccl1.log" 2>&1
    rc=$?
    echo "gpu_comm_nccl, 1 rank, 1 GPU, backend fails: rc $rc: $(grep -m1 'error:' "$T/nccl1.log")"
    [ $rc -eq 1 ] || fail "gpu_comm_nccl with one rank on one GPU whose backend fails exited $rc: $(cat "$T/nccl1.log")"
    grep -q '^gpu_comm_nccl: error: rank 0 .*cudaErrorDevicesUnavailable' "$T/nccl1.log" ||
        fail "gpu_comm_nccl does not name the backend's error: $(cat "$T/nccl1.log")"
    if command -v mpiexec > /dev/null 2>&1; then
        timeout 60 mpiexec -n 2 -env LD_PRELOAD "$T/shim.so" -env LD_LIBRARY_PATH "$SHIM_LLP" "$NCCLT" > "$T/nccl2.log" 2>&1
        rc=$?
        echo "gpu_comm_nccl, 2 ranks, 1 GPU: rc $rc: $(grep -m1 SKIP "$T/nccl2.log")"
        [ $rc -eq 77 ] || fail "gpu_comm_nccl with 2 ranks on one GPU exited $rc, not 77: $(cat "$T/nccl2.log")"
        grep -q 'SKIP: not every rank has its own GPU (2 ranks, 1 GPUs on this node)' "$T/nccl2.log" ||
            fail "gpu_comm_nccl's skip reason: $(cat "$T/nccl2.log")"
    else
        echo "5: 2 ranks not checked: no mpiexec"
    fi
    echo "5 ok: gpu_comm_nccl skips only where ranks outnumber GPUs"
else
    echo "5: SKIP: no gpu_comm_nccl (a build without MPI or CUDA)"
fi
