#!/bin/bash
# shellcheck disable=SC2034 # st, D, svv: read inside the eval strings of check
# Usage: scripts.sh SHARDVIT GEMM_F32_BENCH BENCH_DATA [SOURCE_DIR]
# The benchmark helper scripts' argument checks and cheap failure paths (docs/performance.md
# "PyTorch reference", docs/data.md "Benchmark"), with stand-ins for PyTorch, torchvision,
# mpiexec and shardvit bench where a real run would take minutes: bench/compare_pytorch.sh
# (--help, refused settings, an empty TORCH_PY, OUT_DIR a file, results.jsonl kept on a failed
# rerun, the torch.compile header and note, SIGINT / SIGTERM stop the whole comparison and remove
# the unfinished step's outputs), bench/data/compare_torchvision.sh (--help, usage, bad N / REPS /
# ROUNDS, an empty TORCH_PY, the image count and binary named in the header, a set with fewer than
# N images made again, failing steps named with their logs, SIGTERM / SIGINT during a step stop it
# and the script), bench/torch_venv.sh (--help, options
# refused; never installs anything), bench/gemm_f32_bench (unknown engine or layout refused, n/a
# without OpenBLAS, the bf16 note on its own line, a missing engine named), bench_data (a corrupt
# JPEG named, --help, bad arguments refused), `shardvit bench-compare` (its notes on stdout),
# scripts/main_job.sh (STEPS read as decimal, bad settings refused before the install and build,
# a training stopped before its end never exported,
# OUT and DATA with a trailing slash moved aside on the next run; stand-ins for setup, build,
# shardvit and mpiexec), scripts/bitwise_hashes.sh (--help, options refused before mpiexec),
# bench/fsdp/vit_s16_fsdp.sh (a TMPDIR with a space and a quote; stand-ins for shardvit and
# mpiexec) and the LeakSanitizer options of scripts/sanitize.sh and tests/fuzz/run_fuzz.sh in a
# checkout path with a space and a quote (a tiny ASan program; left out without an ASan compiler).
# PYTHON: the python3 to use.
set -u
SV=$1
GEMM=$2
BD=$3
SRC=${4:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=${PYTHON:-$(command -v python3 || true)}
[ -n "$PY" ] || { echo "FAIL: no python3"; exit 1; }
TMP=$(mktemp -d)
FAILS=0
PGIDS=()
cleanup() {
    for g in "${PGIDS[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
ok() { echo "ok $*"; }
bad() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { # DESCRIPTION CMD...: ok when CMD succeeds; $st: the exit status of the command before
    st=$?
    local d=$1
    shift
    if "$@"; then ok "$d"; else bad "$d"; fi
}
has() { grep -q -- "$2" "$1"; }
hasnt() { ! grep -q -- "$2" "$1"; }

# ---- stand-ins ----
F=$TMP/fake
mkdir -p "$F/mods/torch" "$F/mods/torchvision" "$F/mods/PIL" "$TMP/build/app" "$TMP/build/bench/data"
cat >"$F/mods/torch/__init__.py" <<'EOF'
import os, types
__version__ = "0.0-fake"
backends = types.SimpleNamespace(mkldnn=types.SimpleNamespace(is_available=lambda: False),
                                 mkl=types.SimpleNamespace(is_available=lambda: False))
__config__ = types.SimpleNamespace(show=lambda: "fake build")
if os.environ.get("FAKE_TORCH_COMPILE") == "1":
    compile = lambda m: m
EOF
echo '__version__ = "0.0-fake"' >"$F/mods/torchvision/__init__.py"
echo '__version__ = "0.0-fake"' >"$F/mods/PIL/__init__.py"
# TORCH_PY: the training and torchvision scripts are answered here (FAKE_TORCH=ok|fail|hang,
# FAKE_TV=ok|fail|hang); anything else runs in python3 with the fake torch / torchvision / PIL.
{
    echo '#!/bin/bash'
    printf 'F=%q\nPY=%q\n' "$F" "$PY" # quoted: TMPDIR may hold a space or a quote
} >"$F/torchpy"
cat >>"$F/torchpy" <<'EOF'
case "${1:-}" in
*/torch_vit_train.py)
    case "${FAKE_TORCH:-ok}" in
    fail) echo "fake torch: boom" >&2; exit 1 ;;
    hang) printf '{"partial'; : >"$F/torch.started"; exec sleep 30 ;;
    esac
    comp=""
    case " $* " in *" --compile "*)
        if [ "${FAKE_TORCH_COMPILE:-0}" = 1 ]; then
            comp=', "img_per_s_eager_compile": {"1": [100.0, 90.0]}, "compile_note": null'
        else
            comp=', "img_per_s_eager_compile": {}, "compile_note": "torch 0.0-fake has no torch.compile: eager only"'
        fi ;;
    esac
    echo "{\"framework\": \"pytorch\", \"img_per_s\": 100.0, \"best_threads\": 1, \"best_mode\": \"eager\"$comp}"
    exit 0 ;;
*/bench_torchvision.py)
    [ "${FAKE_TV:-ok}" = fail ] && { echo "fake torchvision: Traceback boom" >&2; exit 1; }
    [ "${FAKE_TV:-ok}" = hang ] && { : >"$F/tv.started"; exec sleep 30; }
    n=$(find "$2/train" -name '*.jpg' | head -n "$3" | wc -l)
    echo "torchvision+PIL, $n images, best of $4 (process CPU time)"
    for p in "RRC224 + flip + normalize (bilinear)" "RRC224 + flip + normalize (bicubic)" \
        "RRC224 + flip + RandAugment(2, 9) + normalize" "resize 256 + center crop 224 + normalize (eval)"; do
        printf 'decode + %-48s: %8.1f img/s/core\n' "$p" 100
    done
    exit 0 ;;
esac
PYTHONPATH=$F/mods exec "$PY" "$@"
EOF
# shardvit bench: writes the --json result at once
cat >"$F/sv" <<'EOF'
#!/bin/bash
json=""
while [ $# -gt 0 ]; do [ "$1" = --json ] && json=$2; shift; done
[ -n "$json" ] || exit 1
echo '{"img_per_s": 50.0, "mfu": 0.1, "img_per_s_best_step": 60.0, "hw_peak_flops": 1e11, "flops_per_image": 1e9,
 "cores_used": 2, "hw_peak_per_core_flops": 5e10, "hw_peak_engine": "fake", "gemm_peak_per_core_flops": null,
 "gemm_peak_dtype": "fp32"}' >"$json"
echo "fake bench" >&2
EOF
# mpiexec: FAKE_MPI=hang waits (SIGINT ends it with exit 1, as mpiexec's own handler does)
cat >"$F/mpiexec" <<EOF
#!$PY
import os, signal, sys, time
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpiexec.started"), "w").close()
if os.environ.get("FAKE_MPI") == "hang":
    signal.signal(signal.SIGINT, lambda *a: sys.exit(1))
    time.sleep(30)
    sys.exit(1)
a = sys.argv[1:]
if a[:1] == ["-n"]:
    a = a[2:]
os.execvp(a[0], a)
EOF
# a new session with SIGINT / SIGTERM at their defaults (as from a terminal); its pid in a file
cat >"$F/launch" <<EOF
#!$PY
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.setsid()
open(sys.argv[1], "w").write(str(os.getpid()))
os.execvp(sys.argv[2], sys.argv[2:])
EOF
chmod +x "$F/torchpy" "$F/sv" "$F/mpiexec" "$F/launch"
ln -s "$SV" "$TMP/build/app/shardvit"
ln -s "$BD" "$TMP/build/bench/data/bench_data"

CP=$SRC/bench/compare_pytorch.sh
TV=$SRC/bench/data/compare_torchvision.sh
VENV=$SRC/bench/torch_venv.sh
cp_env=(env SV="$F/sv" MPIEXEC="$F/mpiexec" TORCH_PY="$F/torchpy" CASES=vit-28:8 DTYPES=fp32 STEPS=1 WARMUP=1
    REPEATS=1 ROUNDS=1 MFU=0 SCALING=0)

# ---- compare_pytorch.sh ----
bash "$CP" --help >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch --help prints the usage, exit 0" eval '[ $st = 0 ] && has "$TMP/o" "Usage: bench/compare_pytorch.sh"'
bash "$CP" --frob >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch refuses an unknown option" eval '[ $st = 2 ] && has "$TMP/e" "unknown option"'
n0=$(ls -d /tmp/shardvit-compare.* 2>/dev/null | wc -l)
"${cp_env[@]}" TORCH_PY= bash "$CP" "$TMP/build" >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch refuses an empty TORCH_PY" eval '[ $st = 2 ] && has "$TMP/e" "TORCH_PY is set but empty"'
for bad in STEPS=0 STEPS=x WARMUP=x WARMUP=-1 REPEATS=0 ROUNDS=x; do
    "${cp_env[@]}" "$bad" bash "$CP" "$TMP/build" >"$TMP/o" 2>"$TMP/e"
    check "compare_pytorch refuses $bad" eval '[ $st = 2 ] && has "$TMP/e" "${bad%%=*} must be a"'
done
"${cp_env[@]}" TORCH_COMPILE=1 WARMUP=0 bash "$CP" "$TMP/build" >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch refuses TORCH_COMPILE=1 with WARMUP=0" eval '[ $st = 2 ] && has "$TMP/e" "needs WARMUP >= 1"'
n1=$(ls -d /tmp/shardvit-compare.* 2>/dev/null | wc -l)
check "compare_pytorch leaves no /tmp/shardvit-compare.* after a refusal ($n0 -> $n1)" test "$n1" -le "$n0"
: >"$TMP/afile"
"${cp_env[@]}" bash "$CP" "$TMP/build" "$TMP/afile" >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch refuses an OUT_DIR that is a file" eval '[ $st = 2 ] && has "$TMP/e" "not a directory"'

OUT=$TMP/cmp
"${cp_env[@]}" bash "$CP" "$TMP/build" "$OUT" >"$TMP/o" 2>"$TMP/e"
rc=$?
check "compare_pytorch completes with stand-ins (exit $rc)" eval '[ $rc = 0 ] && [ "$(wc -l <"$OUT/results.jsonl")" = 4 ] && [ ! -e "$OUT/results.jsonl.partial" ]'
[ $rc = 0 ] || cat "$TMP/e"
cp "$OUT/results.jsonl" "$TMP/earlier.jsonl"
"${cp_env[@]}" FAKE_TORCH=fail bash "$CP" "$TMP/build" "$OUT" >"$TMP/o" 2>"$TMP/e"
rc=$?
check "compare_pytorch keeps the earlier results.jsonl when a rerun fails (exit $rc)" \
    eval '[ $rc = 1 ] && cmp -s "$OUT/results.jsonl" "$TMP/earlier.jsonl" && has "$TMP/e" "PyTorch run failed"'
"${cp_env[@]}" TORCH_COMPILE=1 bash "$CP" "$TMP/build" "$OUT" >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch TORCH_COMPILE=1 without torch.compile: header says so, the note is shown" \
    eval 'hasnt "$TMP/o" "torch.compile tried as well" && has "$TMP/o" "torch.compile is not available" && has "$TMP/o" "pytorch note: torch 0.0-fake has no torch.compile"'
"${cp_env[@]}" TORCH_COMPILE=1 FAKE_TORCH_COMPILE=1 bash "$CP" "$TMP/build" "$OUT" >"$TMP/o" 2>"$TMP/e"
check "compare_pytorch TORCH_COMPILE=1 with torch.compile: header says it is tried" \
    eval 'has "$TMP/o" "torch.compile tried as well" && hasnt "$TMP/o" "pytorch note"'

# sig_run NAME SIGNAL WHOM(group|script) MARKER [env...]: start compare_pytorch in its own session,
# send SIGNAL when MARKER appears; leaves rc, elapsed seconds in sig_rc, sig_s
sig_run() {
    local name=$1 sig=$2 whom=$3 marker=$4 pid g t0
    shift 4
    rm -f "$marker" "$TMP/pgid"
    mkdir -p "$TMP/$name"
    echo '{"earlier": 1}' >"$TMP/$name/results.jsonl"
    timeout -s KILL 40 "${cp_env[@]}" "$@" "$F/launch" "$TMP/pgid" bash "$CP" "$TMP/build" "$TMP/$name" \
        >"$TMP/$name.o" 2>"$TMP/$name.e" &
    pid=$!
    for _ in $(seq 200); do [ -e "$marker" ] && [ -s "$TMP/pgid" ] && break; sleep 0.05; done
    g=$(cat "$TMP/pgid" 2>/dev/null)
    [ -n "$g" ] && PGIDS+=("$g")
    sleep 0.3
    t0=$(date +%s.%N)
    if [ "$whom" = group ]; then kill "-$sig" -- "-$g"; else kill "-$sig" "$g"; fi
    (sleep 12; kill -KILL -- "-$g" 2>/dev/null) & # an old script that does not stop
    local guard=$!
    wait $pid
    sig_rc=$?
    sig_s=$("$PY" -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")
    kill $guard 2>/dev/null
    sleep 0.2
    sig_left=$(ps -o pid= -g "$g" 2>/dev/null | wc -l)
}
sig_run int_mpi INT group "$F/mpiexec.started" FAKE_MPI=hang
D=$TMP/int_mpi
check "compare_pytorch: SIGINT to the group during mpiexec stops it (exit $sig_rc, ${sig_s}s, $sig_left processes left)" \
    eval '[ $sig_rc = 130 ] && [ $sig_left = 0 ] && has "$TMP/int_mpi.e" "interrupted"'
check "compare_pytorch: after SIGINT the earlier results.jsonl is kept, the unfinished run removed" \
    eval 'has "$D/results.jsonl" earlier && [ ! -e "$D/results.jsonl.partial" ] && ! ls "$D"/sv-vit-28-fp32-r2t1.round1.run1.* >/dev/null 2>&1'
check "compare_pytorch: after SIGINT no table line of a later stage" hasnt "$TMP/int_mpi.o" "ceiling"
sig_run int_torch INT group "$F/torch.started" FAKE_TORCH=hang
D=$TMP/int_torch
check "compare_pytorch: SIGINT during the PyTorch step stops it, no partial torch JSON (exit $sig_rc)" \
    eval '[ $sig_rc = 130 ] && [ $sig_left = 0 ] && ! ls "$D"/torch-vit-28-fp32.round1.json* >/dev/null 2>&1 && has "$D/results.jsonl" earlier'
sig_run term_mpi TERM script "$F/mpiexec.started" FAKE_MPI=hang
check "compare_pytorch: SIGTERM to the script alone stops it at once (exit $sig_rc, ${sig_s}s, $sig_left processes left)" \
    eval '[ $sig_rc = 143 ] && [ $sig_left = 0 ] && "$PY" -c "import sys; sys.exit(float(sys.argv[1]) > 5)" "$sig_s"'

# ---- torch_venv.sh (argument handling only: never creates an environment here) ----
PIP_NO_INDEX=1 bash "$VENV" --help >"$TMP/o" 2>"$TMP/e"
check "torch_venv --help prints its own usage, exit 0" \
    eval '[ $st = 0 ] && has "$TMP/o" "Usage: bench/torch_venv.sh" && hasnt "$TMP/o" "usage: venv"'
PIP_NO_INDEX=1 bash "$VENV" --upgrade-deps >"$TMP/o" 2>"$TMP/e"
check "torch_venv refuses other options" eval '[ $st = 2 ] && [ ! -s "$TMP/o" ] && [ ! -e ./--upgrade-deps ]'

# ---- compare_torchvision.sh ----
bash "$TV" --help >"$TMP/o" 2>"$TMP/e"
check "compare_torchvision --help prints the usage, exit 0" eval '[ $st = 0 ] && has "$TMP/o" "Usage: bench/data/compare_torchvision.sh"'
bash "$TV" >"$TMP/o" 2>"$TMP/e"
check "compare_torchvision without arguments: usage, exit 2" eval '[ $st = 2 ] && has "$TMP/e" "Usage:" && hasnt "$TMP/e" "1: usage"'
tv_env=(env TORCH_PY="$F/torchpy" ROUNDS=1 N=10 REPS=1)
W=$TMP/tv
"${tv_env[@]}" TORCH_PY= bash "$TV" "$TMP/build" "$W" >"$TMP/o" 2>"$TMP/e"
check "compare_torchvision refuses an empty TORCH_PY" eval '[ $st = 2 ] && has "$TMP/e" "TORCH_PY is set but empty"'
for bad in N=abc N=0 REPS=0 ROUNDS=0 ROUNDS=x; do
    "${tv_env[@]}" "$bad" bash "$TV" "$TMP/build" "$W" >"$TMP/o" 2>"$TMP/e"
    check "compare_torchvision refuses $bad" eval '[ $st = 2 ] && has "$TMP/e" "${bad%%=*} must be a positive integer"'
done
"${tv_env[@]}" bash "$TV" "$TMP/build" "$W" >"$TMP/o" 2>"$TMP/e"
rc=$?
svv=$("$SV" version | sed -n 1p)
check "compare_torchvision runs (N=10, exit $rc), names the binary's version" \
    eval '[ $rc = 0 ] && has "$TMP/o" "# 10 images" && grep -qF "$svv" "$TMP/o" && [ "$(grep -c x$ "$TMP/o")" = 8 ]'
[ $rc = 0 ] || cat "$TMP/e"
"${tv_env[@]}" N=20 bash "$TV" "$TMP/build" "$W" >"$TMP/o" 2>"$TMP/e"
rc=$?
check "compare_torchvision N=20 after N=10: the set is made again, 20 images measured (exit $rc)" \
    eval '[ $rc = 0 ] && has "$TMP/o" "# 20 images" && grep -q "^images: 20 " "$W/sv.plain.1.log"'
FAKE_TV=fail "${tv_env[@]}" bash "$TV" "$TMP/build" "$W" >"$TMP/o" 2>"$TMP/e"
check "compare_torchvision names a failing torchvision step and its log" \
    eval '[ $st = 1 ] && has "$TMP/e" "bench_torchvision.py" && has "$TMP/e" "tv.plain.1.log" && has "$TMP/e" "Traceback boom"'
# SIGTERM to the script alone, and SIGINT to its process group (Ctrl-C), during a step: the step is
# stopped and the script ends at once with 143 / 130 (without a trap it died and left the step running)
for sg in TERM:143:script INT:130:group; do
    IFS=: read -r sig want whom <<<"$sg"
    rm -f "$F/tv.started" "$TMP/pgid"
    FAKE_TV=hang timeout -s KILL 40 "${tv_env[@]}" "$F/launch" "$TMP/pgid" bash "$TV" "$TMP/build" "$W" \
        >"$TMP/o" 2>"$TMP/e" &
    pid=$!
    for _ in $(seq 300); do [ -e "$F/tv.started" ] && [ -s "$TMP/pgid" ] && break; sleep 0.05; done
    g=$(cat "$TMP/pgid" 2>/dev/null)
    [ -n "$g" ] && PGIDS+=("$g")
    t0=$SECONDS
    if [ "$whom" = group ]; then kill "-$sig" -- "-$g"; else kill "-$sig" "$g"; fi
    wait $pid
    rc=$?
    sleep 0.3
    left=$(pgrep -g "$g" 2>/dev/null | wc -l)
    check "compare_torchvision: SIG$sig to the $whom during a step stops it (exit $rc, $((SECONDS - t0)) s, $left processes left)" \
        eval '[ $rc = $want ] && [ $((SECONDS - t0)) -le 8 ] && [ "$left" = 0 ] && has "$TMP/e" "interrupted (SIG$sig)"'
    [ $rc = "$want" ] || cat "$TMP/e"
done
f=$(find "$W/plain/train" -name '*.jpg' | sort | sed -n 3p)
printf 'not a jpeg' >"$f"
"${tv_env[@]}" bash "$TV" "$TMP/build" "$W" >"$TMP/o" 2>"$TMP/e"
check "compare_torchvision names a failing bench_data and shows its error (a corrupt JPEG)" \
    eval '[ $st = 1 ] && has "$TMP/e" "bench_data" && has "$TMP/e" "sv.plain.1.log" && has "$TMP/e" "TurboJPEG"'
"$BD" "$W/plain" 10 1 >"$TMP/o" 2>"$TMP/e"
check "bench_data: a corrupt JPEG is named with TurboJPEG's error" eval '[ $st = 1 ] && has "$TMP/e" "file [0-9]* of .*TurboJPEG: "'
(cd "$TMP" && "$BD" --help >"$TMP/o" 2>"$TMP/e")
check "bench_data --help: usage on stdout, exit 0, no image set made (it used to write one into ./--help)" \
    eval '[ $st = 0 ] && has "$TMP/o" "usage: bench_data" && [ ! -e "$TMP/--help" ]'
for args in "-x" "$TMP/bdset abc" "$TMP/bdset 10 0" "$TMP/bdset 10 1 6" "$TMP/bdset 10 1 x" "$TMP/bdset 1 1 1 1"; do
    # shellcheck disable=SC2086 # the words are the arguments
    "$BD" $args >"$TMP/o" 2>"$TMP/e"
    check "bench_data $args: refused (exit 2, usage), nothing made" \
        eval '[ $st = 2 ] && has "$TMP/e" "usage: bench_data" && [ ! -e "$TMP/bdset" ]'
done

# ---- gemm_f32_bench ----
GEMM_BENCH_ENGINES=foo "$GEMM" 1 fwd:16,16,16 >"$TMP/o" 2>"$TMP/e"
check "gemm_f32_bench refuses an unknown engine" eval '[ $st = 2 ] && has "$TMP/e" "unknown engine .foo."'
"$GEMM" 1 dw:16,16,16 >"$TMP/o" 2>"$TMP/e"
check "gemm_f32_bench refuses an unknown layout" eval '[ $st = 2 ] && has "$TMP/e" "unknown layout .dw."'
"$GEMM" 1 fwd:16,16 >"$TMP/o" 2>"$TMP/e"
check "gemm_f32_bench refuses a malformed LAYOUT:M,N,K" eval '[ $st = 2 ]'
GEMM_BENCH_NO_BLAS=1 GEMM_BENCH_BF16=1 "$GEMM" 1 fwd:16,16,16 >"$TMP/o" 2>"$TMP/e"
check "gemm_f32_bench without OpenBLAS: n/a, not 0.0; the bf16 note on its own line" \
    eval '[ $st = 0 ] && grep -q "n/a *n/a$" "$TMP/o" && hasnt "$TMP/o" "GFLOP/s:;" && grep -q "^bf16 engines read bf16 operands" "$TMP/o"'
missing=""
for e in amx-bf16 avx512-bf16 avx512-f32 avx2-f32; do
    "$SV" version | grep "gemm engines available" | grep -qw -- "$e" || missing=$e
done
if [ -n "$missing" ]; then
    GEMM_BENCH_ENGINES=$missing "$GEMM" 1 fwd:16,16,16 >"$TMP/o" 2>"$TMP/e"
    check "gemm_f32_bench names what $missing lacks here" \
        eval '[ $st = 0 ] && grep -q "^$missing: skipped, .*\(lack\|refused\)" "$TMP/o" && hasnt "$TMP/o" " 0\.0 "'
else
    echo "skip: every GEMM engine runs here (no missing-feature line to check)"
fi

# ---- shardvit bench-compare: every note on stdout ----
"$SV" bench --op gelu --model vit-28 --dim 32 --depth 2 --heads 2 --batch-size 4 --steps 2 --warmup 1 --threads 1 \
    --device cpu --json "$TMP/a.json" >/dev/null 2>&1 || bad "bench --op"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); d['results']=d['results'][:1]; json.dump(d, open(sys.argv[2], 'w'))" \
    "$TMP/a.json" "$TMP/b.json"
"$SV" bench-compare "$TMP/a.json" "$TMP/b.json" >"$TMP/o" 2>"$TMP/e"
check "bench-compare: 'variant ... is only in' goes to stdout" \
    eval '[ $st = 0 ] && has "$TMP/o" "is only in" && hasnt "$TMP/e" "is only in"'

# ---- scripts/main_job.sh (settings and moving earlier outputs aside; nothing installed, built
# or trained: stand-ins for scripts/setup.sh, scripts/build.sh, shardvit and mpiexec) ----
MJ="$TMP/main job"
mkdir -p "$MJ/scripts" "$MJ/build/app" "$MJ/bin"
cp "$SRC/scripts/main_job.sh" "$MJ/scripts/"
printf '#!/bin/bash\necho "$(basename "$0")" >>"$MJ_LOG"\n' >"$MJ/scripts/setup.sh"
cp "$MJ/scripts/setup.sh" "$MJ/scripts/build.sh"
cat >"$MJ/build/app/shardvit" <<'EOF'
#!/bin/bash
# each command line into $MJ_LOG; prep and train write what main_job.sh reads next
echo "shardvit $*" >>"$MJ_LOG"
out="" prev=""
for a in "$@"; do
    [ "$prev" = --out ] && out=$a
    prev=$a
done
case "$1" in
prep) # a finished import is reused unless MJ_PREP_REUSE=fail (files changed since)
    if [ -f "$out/.shardvit-prep" ]; then [ "${MJ_PREP_REUSE:-ok}" = ok ]; exit; fi
    mkdir -p "$out/train" "$out/test" && : >"$out/.shardvit-prep" ;;
train) # MJ_TRAIN_STOPPED=1: stopped by a signal before its end (no eval.json), mpiexec reporting 0
    mkdir -p "$out"
    [ -n "${MJ_TRAIN_STOPPED:-}" ] || echo '{"top1": 0.9, "top5": 0.99, "num_samples": 10000}' >"$out/eval.json" ;;
esac
EOF
printf '#!/bin/bash\nshift 2\nexec "$@"\n' >"$MJ/bin/mpiexec" # mpiexec -n N CMD...
# date: a fixed time when MJ_FIXED_DATE is set (moves "within one second"), else the real one
printf '#!/bin/bash\n[ -n "${MJ_FIXED_DATE:-}" ] && { echo "$MJ_FIXED_DATE"; exit 0; }\nexec /bin/date "$@"\n' >"$MJ/bin/date"
chmod +x "$MJ/build/app/shardvit" "$MJ/bin/mpiexec" "$MJ/bin/date"
# mj NAME [VAR=VALUE...]: main_job.sh with the stand-ins (OUT, DATA in $MJ unless given); its
# output in $TMP/NAME.o / .e, the commands it ran in $TMP/NAME.log
mj() {
    local name=$1
    shift
    : >"$TMP/$name.log"
    env PATH="$MJ/bin:$PATH" MJ_LOG="$TMP/$name.log" OUT="$MJ/out" DATA="$MJ/data" "$@" \
        bash "$MJ/scripts/main_job.sh" >"$TMP/$name.o" 2>"$TMP/$name.e"
}
mj mj_08 STEPS=08
check "main_job STEPS=08: 8 steps, warmup 0 (it was read as octal: 'value too great for base')" \
    eval '[ $st = 0 ] && grep -q -- "--steps 8 .*--warmup 0 " "$TMP/mj_08.log" && hasnt "$TMP/mj_08.e" "value too great"'
mj mj_010 STEPS=010 OUT="$MJ/out010"
check "main_job STEPS=010: 10 steps, warmup 1 (octal gave warmup 0)" \
    eval '[ $st = 0 ] && grep -q -- "--steps 10 .*--warmup 1 " "$TMP/mj_010.log"'
for bad in STEPS=12x STEPS=-1 OUT=/ OUT=// DATA=/ OUT=. OUT=.. OUT=./ DATA=..; do
    mj mj_bad "$bad"
    check "main_job refuses $bad before installing or building anything" \
        eval '[ $st = 2 ] && has "$TMP/mj_bad.e" "main_job.sh: ${bad%%=*}" && [ ! -s "$TMP/mj_bad.log" ]'
done
# a run into OUT/ (and DATA/) again: the earlier one is moved aside to OUT.prev-* (mv refused to
# move OUT/ into OUT/.prev-*, a directory inside itself, after the build and the data import)
mj mj_slash1 OUT="$MJ/sl/" DATA="$MJ/d1/"
mj mj_slash2 OUT="$MJ/sl//" DATA="$MJ/d1/"
rc=$?
check "main_job OUT=DIR/ a second time: the first run moved to DIR.prev-*, the second in DIR (exit $rc)" \
    eval '[ $rc = 0 ] && [ -s "$MJ/sl/eval.json" ] && [ "$(ls -d "$MJ"/sl.prev-*/eval.json | wc -l)" = 1 ]'
[ $rc = 0 ] || cat "$TMP/mj_slash2.e"
mj mj_data_changed OUT="$MJ/o2" DATA="$MJ/d1/" MJ_PREP_REUSE=fail
rc=$?
check "main_job DATA=DIR/ whose import changed: moved to DIR.prev-*, imported again (exit $rc)" \
    eval '[ $rc = 0 ] && [ -f "$MJ/d1/.shardvit-prep" ] && [ "$(ls -d "$MJ"/d1.prev-*/.shardvit-prep | wc -l)" = 1 ]'
[ $rc = 0 ] || cat "$TMP/mj_data_changed.e"
mkdir -p "$MJ/d2"
: >"$MJ/d2/partial"
mj mj_data_partial OUT="$MJ/o3" DATA="$MJ/d2///"
rc=$?
check "main_job DATA=DIR/ holding an unfinished import: moved to DIR.prev-*, imported again (exit $rc)" \
    eval '[ $rc = 0 ] && [ -f "$MJ/d2/.shardvit-prep" ] && [ "$(ls -d "$MJ"/d2.prev-*/partial | wc -l)" = 1 ]'
[ $rc = 0 ] || cat "$TMP/mj_data_partial.e"
# DATA holding only what a killed prep left (its work directory): not moved aside, prep imports
# into it (the real prep removes the work directory first: faults_hostile_cli_outputs)
mkdir -p "$MJ/d3/.prep.tmp-0a1b2c3d/train"
mj mj_data_killed OUT="$MJ/o4" DATA="$MJ/d3"
rc=$?
check "main_job DATA holding a killed prep's work directory: left to prep, not moved aside (exit $rc)" \
    eval '[ $rc = 0 ] && [ -f "$MJ/d3/.shardvit-prep" ] && ! ls -d "$MJ"/d3.prev-* >/dev/null 2>&1 &&
        grep -q "shardvit prep fashion-mnist --out $MJ/d3\$" "$TMP/mj_data_killed.log"'
[ $rc = 0 ] || cat "$TMP/mj_data_killed.e"
# three runs into one OUT within a second: each earlier run gets a name of its own (the same
# .prev-<time> made the second move put the directory inside the first one)
mj mj_fast1 OUT="$MJ/fast" MJ_FIXED_DATE=20261207-000000
mj mj_fast2 OUT="$MJ/fast" MJ_FIXED_DATE=20261207-000000
mj mj_fast3 OUT="$MJ/fast" MJ_FIXED_DATE=20261207-000000
rc=$?
check "main_job three times into one OUT: two earlier runs beside it, none inside another (exit $rc)" \
    eval '[ $rc = 0 ] && [ "$(ls -d "$MJ"/fast.prev-*/eval.json | wc -l)" = 2 ] && [ -z "$(ls -d "$MJ"/fast.prev-*/fast.prev-* 2>/dev/null)" ]'
mj mj_stopped OUT="$MJ/stopped" MJ_TRAIN_STOPPED=1
rc=$?
check "main_job whose training stopped early while mpiexec reported 0: exit 75, nothing exported (exit $rc)" \
    eval '[ $rc = 75 ] && has "$TMP/mj_stopped.e" "training stopped before its end" && ! grep -q "shardvit export" "$TMP/mj_stopped.log"'

# ---- --help of every script a user runs (scripts/usage.sh): the header comment, exit 0, nothing
# done (sanitize.sh configured a tree in ./--help, fashion_mnist_94.sh started the multi-hour job,
# build.sh a full build, format.sh reformatted the tree); arguments a script does not take: exit 2
# and nothing done ----
before=$(cd "$SRC" && git status --porcelain --untracked-files=no 2>/dev/null)
for f in scripts/build.sh scripts/fashion_mnist_94.sh scripts/format.sh scripts/sanitize.sh scripts/setup.sh \
    scripts/test.sh scripts/test_venv.sh bench/multihost_netem.sh bench/fsdp/simulate_vs_measured.sh \
    bench/fsdp/simulate_vs_measured_hosts.sh bench/fsdp/vit_s16_fsdp.sh tests/gpu/pack.sh; do
    want=$(awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$SRC/$f")
    (cd "$TMP" && bash "$SRC/$f" --help >"$TMP/o" 2>"$TMP/e")
    check "$f --help: its header, exit 0" eval '[ $st = 0 ] && [ "$(cat "$TMP/o")" = "$want" ] && [ ! -s "$TMP/e" ]'
done
for a in "scripts/sanitize.sh --bogus" "scripts/format.sh --frob" "scripts/fashion_mnist_94.sh now" \
    "scripts/test.sh -x" "scripts/setup.sh all" "scripts/test_venv.sh x" "bench/fsdp/vit_s16_fsdp.sh -n" \
    "tests/gpu/pack.sh --frob"; do
    (cd "$TMP" && bash "$SRC/${a%% *}" "${a#* }" >"$TMP/o" 2>"$TMP/e")
    check "$a: refused (exit 2), named" eval '[ $st = 2 ] && has "$TMP/e" "(see .* --help)"'
done
# scripts/slurm/train.sbatch adds --resume auto itself: a --resume of the caller's is refused
# before srun (a stand-in srun leaves a mark if it runs; before, the caller's checkpoint was
# silently replaced by `auto`)
mkdir -p "$TMP/sb"
printf '#!/bin/bash\n: >"$(dirname "$0")/srun.ran"\nexit 1\n' >"$TMP/sb/srun"
chmod +x "$TMP/sb/srun"
for a in "--resume $TMP/x" "--resume=$TMP/x" "--resume auto"; do
    rm -f "$TMP/sb/srun.ran"
    (cd "$TMP" && PATH="$TMP/sb:$PATH" bash "$SRC/scripts/slurm/train.sbatch" --out "$TMP/sbrun" $a >"$TMP/o" 2>"$TMP/e")
    check "train.sbatch $a: refused (exit 2) before srun" \
        eval '[ $st = 2 ] && has "$TMP/e" "do not pass --resume" && [ ! -e "$TMP/sb/srun.ran" ]'
done
after=$(cd "$SRC" && git status --porcelain --untracked-files=no 2>/dev/null)
check "the --help and refused runs changed nothing in the tree, made no ./--help" \
    eval '[ "$before" = "$after" ] && [ ! -e "$TMP/--help" ] && [ ! -e "$SRC/--help" ]'

# ---- scripts/bitwise_hashes.sh (arguments only: a stand-in mpiexec leaves a mark if it runs) ----
mkdir -p "$TMP/bh"
printf '#!/bin/bash\n: >"$(dirname "$0")/mpiexec.ran"\nexit 1\n' >"$TMP/bh/mpiexec"
chmod +x "$TMP/bh/mpiexec"
BH=$SRC/scripts/bitwise_hashes.sh
for h in --help -h; do
    rm -f "$TMP/bh/mpiexec.ran"
    PATH="$TMP/bh:$PATH" bash "$BH" "$h" >"$TMP/o" 2>"$TMP/e"
    check "bitwise_hashes $h prints the usage, exit 0, runs nothing" \
        eval '[ $st = 0 ] && has "$TMP/o" "Usage: bash scripts/bitwise_hashes.sh" && [ ! -s "$TMP/e" ] && [ ! -e "$TMP/bh/mpiexec.ran" ]'
done
bh_refused() { # ARGS...: bitwise_hashes.sh refuses them (exit 2) before mpiexec starts
    rm -f "$TMP/bh/mpiexec.ran"
    PATH="$TMP/bh:$PATH" bash "$BH" "$@" >"$TMP/o" 2>"$TMP/e"
    check "bitwise_hashes $*: refused (exit 2), mpiexec not started" \
        eval '[ $st = 2 ] && has "$TMP/e" "unknown option" && [ ! -s "$TMP/o" ] && [ ! -e "$TMP/bh/mpiexec.ran" ]'
}
bh_refused --frob
bh_refused -x
bh_refused "$SV" --out

# ---- bench/fsdp/vit_s16_fsdp.sh in a TMPDIR with a space and a quote (stand-ins for mpiexec and
# shardvit, which refuses a stray argument as the real one does) ----
VB="$TMP/vit s16 build"
VT="$TMP/t dir/it's"
mkdir -p "$VB/app" "$VT"
cat >"$VB/app/shardvit" <<'EOF'
#!/bin/bash
case "$1" in
plan) echo "  total 123.4 MiB"; exit 0 ;;
train) shift ;;
*) exit 2 ;;
esac
steps="" trace=""
while [ $# -gt 0 ]; do # every flag given here takes one value
    case "$1" in
    --steps) steps=$2 ;;
    --trace) trace=$2 ;;
    --*) ;;
    *) echo "shardvit train: unexpected argument '$1'" >&2; exit 2 ;;
    esac
    shift 2
done
[ -z "$trace" ] || echo '{"traceEvents": [{}, {}, {}]}' >"$trace" || exit 1
echo "memory: arena 10.5 MiB (planned 10.4 MiB), process RSS 50.5 MiB"
echo "step $steps/$steps loss 2.3 img/s 12.5"
echo "exposed communication: 0.1 s of 2.0 s (5.0%)"
EOF
chmod +x "$VB/app/shardvit"
PATH="$MJ/bin:$PATH" TMPDIR=$VT bash "$SRC/bench/fsdp/vit_s16_fsdp.sh" "$VB" 2 >"$TMP/o" 2>"$TMP/e"
rc=$?
check "vit_s16_fsdp.sh with TMPDIR holding a space and a quote: 3 rows, the 2-rank trace read, its files removed (exit $rc)" \
    eval '[ $rc = 0 ] && [ "$(grep -c "| 123.4 | 10.5 | 50.5 | 12.5 | 5.0% |" "$TMP/o")" = 3 ] && has "$TMP/o" "trace of the 2-rank run: 3 events" && [ -z "$(ls -A "$VT")" ]'
[ $rc = 0 ] || cat "$TMP/o" "$TMP/e"

# ---- the LeakSanitizer options of scripts/sanitize.sh and tests/fuzz/run_fuzz.sh in a checkout
# path with a space, a quote, ',' and ':' (where the sanitizer runtime splits its options): the
# suppressions file applies and nothing aborts at start-up (stand-ins for cmake and ctest) ----
SZ="$TMP/sp ace/it's, a:b"
mkdir -p "$SZ/scripts" "$SZ/tests/sanitize" "$SZ/tests/fuzz" "$TMP/san/bin" "$TMP/san/build/tests/fuzz"
cp "$SRC/scripts/sanitize.sh" "$SRC/scripts/usage.sh" "$SZ/scripts/"
cp "$SRC/tests/fuzz/run_fuzz.sh" "$SZ/tests/fuzz/"
cp "$SRC/tests/sanitize/lsan.supp" "$SZ/tests/sanitize/"
# read_config: an allocation lsan.supp lists (kept for the process); other_alloc: one it does not
cat >"$TMP/san/leak.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) char *read_config(void) { char *p = malloc(32); strcpy(p, "kept"); return p; }
__attribute__((noinline)) char *other_alloc(void) { char *p = malloc(32); strcpy(p, "lost"); return p; }
char *volatile keep;
int main(void) {
    keep = getenv("LEAK_OTHER") ? other_alloc() : read_config();
    keep = 0;
    return 0;
}
EOF
CC=${CC:-cc}
san_ok=0
if "$CC" -g -O0 -fno-omit-frame-pointer -fsanitize=address "$TMP/san/leak.c" -o "$TMP/san/leak" >"$TMP/san/cc.log" 2>&1; then
    # the leak is reported without suppressions (LeakSanitizer works here)
    env -u LSAN_OPTIONS -u ASAN_OPTIONS "$TMP/san/leak" >/dev/null 2>"$TMP/san/cc.log"
    grep -q "detected memory leaks" "$TMP/san/cc.log" && san_ok=1
fi
if [ $san_ok = 1 ]; then
    printf '#!/bin/sh\nexit 0\n' >"$TMP/san/bin/cmake"
    printf '#!/bin/sh\nexec "$LEAK_PROG"\n' >"$TMP/san/bin/ctest"
    chmod +x "$TMP/san/bin/cmake" "$TMP/san/bin/ctest"
    san=(env -u LSAN_OPTIONS -u ASAN_OPTIONS PATH="$TMP/san/bin:$PATH" LEAK_PROG="$TMP/san/leak"
        bash "$SZ/scripts/sanitize.sh" "$TMP/san/build")
    "${san[@]}" >"$TMP/o" 2>"$TMP/e"
    rc=$?
    check "sanitize.sh in a path with a space and a quote: LSAN_OPTIONS parsed, lsan.supp applied (exit $rc)" \
        eval '[ $rc = 0 ] && hasnt "$TMP/e" "expected .=. in LSAN_OPTIONS" && has "$TMP/o" "ctest exit 0"'
    [ $rc = 0 ] || cat "$TMP/e"
    LEAK_OTHER=1 "${san[@]}" >"$TMP/o" 2>"$TMP/e"
    check "sanitize.sh: a leak lsan.supp does not list still fails" \
        eval '[ $st != 0 ] && has "$TMP/e" "detected memory leaks" && has "$TMP/e" other_alloc'
    cp "$TMP/san/leak" "$TMP/san/build/tests/fuzz/fuzz_json"
    env -u LSAN_OPTIONS -u ASAN_OPTIONS bash "$SZ/tests/fuzz/run_fuzz.sh" "$TMP/san/build" 1 "$TMP/san/fz" json >"$TMP/o" 2>&1
    check "run_fuzz.sh in a path with a space and a quote: LSAN_OPTIONS parsed, lsan.supp applied" \
        eval 'grep -qx "json exit 0" "$TMP/san/fz/status" && hasnt "$TMP/san/fz/json.log" "expected .=. in LSAN_OPTIONS"'
else
    echo "skip: no ASan program that reports a leak here ($CC -fsanitize=address: $(head -1 "$TMP/san/cc.log"))"
fi

[ $FAILS = 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all bench script checks passed"
