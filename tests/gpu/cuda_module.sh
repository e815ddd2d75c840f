#!/usr/bin/env bash
# The CUDA module (core/cuda_module.h) of a CUDA-enabled build, on a machine without a GPU:
#  1. the module lib/libshardvit_cuda.so links the CUDA runtime and exports one symbol,
#     sv_cuda_module_entry;
#  2. the program functions the module needs (its undefined sv_* symbols) are exactly the list
#     in core/cuda_module.c (module_needs); every executable of the build that can load the
#     module (it holds the loader, sv_cuda_module_get, in its symbol table) links none of the CUDA
#     libraries (cudart, cuBLAS(Lt), cuDNN, NCCL) and exports each of those functions;
#  3. `shardvit --version` does not load the module, `shardvit version --cuda` loads it from the
#     build's lib/ and reports the CUDA libraries; `--device cuda` reaches the module's backend,
#     which says there is no usable device;
#  4. a module that cannot be used is a clear error naming the file, never a crash:
#     SHARDVIT_CUDA_MODULE naming a missing file, a FIFO (no hang), a directory, a shared object
#     without the entry, a module of another interface version, a module of another build; a
#     module whose libraries change a signal's handling has it put back, with a warning; `--device auto` without the NVIDIA
#     driver trains on the CPU without trying the module (a CPU run pays nothing for CUDA).
#   cuda_module.sh [--module-only] BUILD_DIR SOURCE_DIR
# --module-only: checks 1 and the first half of 2 (what the module itself links, exports and
# leaves undefined), for a build whose programs are not built (scripts/test.sh's MPI-free CUDA
# variant).
set -u
MODULE_ONLY=0
[ "${1:-}" = --module-only ] && MODULE_ONLY=1 && shift
BUILD=$1 SRC=$2
SV=$BUILD/app/shardvit
MOD=$BUILD/lib/libshardvit_cuda.so
T=$(mktemp -d "${TMPDIR:-/tmp}/sv-cuda-module.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
[ -e "$MOD" ] || fail "no $MOD"
[ $MODULE_ONLY = 1 ] || [ -x "$SV" ] || fail "no $SV"

# ---- 1. the module links the CUDA runtime and exports its entry alone ----
readelf -d "$MOD" | grep NEEDED | grep -q libcudart || fail "the module does not link libcudart"
exports=$(nm -D --defined-only "$MOD" | awk '{print $NF}' | grep -v '^_\(init\|fini\)$' | sort | tr '\n' ' ')
[ "$exports" = "sv_cuda_module_entry " ] || fail "the module exports '$exports', not sv_cuda_module_entry alone"
echo "1 ok: the module links libcudart and exports sv_cuda_module_entry alone"

# ---- 2. what the module takes from the program: listed, and exported by every loader ----
# (the symbols none of the libraries it links defines: ldd -r resolves against them)
needs=$(ldd -r "$MOD" 2>&1 | sed -n 's/^undefined symbol: \([^[:space:]]*\).*/\1/p' | sort)
listed=$(sed -n '/module_needs\[\] = {/,/};/p' "$SRC/core/cuda_module.c" | grep -o '(void \*)sv_[a-z0-9_]*' |
    sed 's/(void \*)//' | sort)
[ -n "$needs" ] || fail "the module needs no sv_ symbol: the check would be empty"
[ "$needs" = "$listed" ] || fail "the module needs {$(echo $needs)}, core/cuda_module.c lists {$(echo $listed)}"
if [ $MODULE_ONLY = 1 ]; then
    echo "2 ok: the module needs from the program exactly the $(echo "$needs" | wc -l) functions core/cuda_module.c lists"
    exit 0
fi
cuda_libs='libcudart|libcublas|libcublasLt|libcudnn|libnccl'
n=0
while read -r exe; do
    # the symbol table, not the dynamic one: an executable linked without exports holds the
    # loader all the same, and is just what this check must not miss
    nm "$exe" 2> /dev/null | grep -q ' T sv_cuda_module_get$' || continue
    readelf -d "$exe" | grep NEEDED | grep -E "$cuda_libs" && fail "${exe#"$BUILD"/} links CUDA libraries (above)"
    have=$(nm -D --defined-only "$exe" | awk '{print $NF}' | sort)
    missing=$(comm -23 <(echo "$needs") <(echo "$have") | tr '\n' ' ')
    [ -z "$missing" ] || fail "${exe#"$BUILD"/} can load the module but does not export: $missing"
    n=$((n + 1))
done < <(find "$BUILD" -type f -perm -u+x ! -name '*.so' ! -path '*/CMakeFiles/*' -exec sh -c \
    'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
[ $n -ge 3 ] || fail "only $n executables can load the module (app/shardvit and the GPU tests expected)"
[ -n "$(nm "$SV" | grep ' T sv_cuda_module_get$')" ] || fail "app/shardvit does not hold the loader"
echo "2 ok: the module's $(echo "$needs" | wc -l) program functions are listed; all $n executables that can load it export them and link no CUDA library"

# ---- 3. the module loads and answers ----
"$SV" --version > "$T/v0.txt" 2>&1 || fail "shardvit --version: $(cat "$T/v0.txt")"
grep -q '^cuda: module libshardvit_cuda.so, loaded when CUDA is first used' "$T/v0.txt" ||
    fail "shardvit --version: $(grep '^cuda' "$T/v0.txt")"
"$SV" version --cuda > "$T/v.txt" 2>&1 || fail "shardvit version --cuda: $(cat "$T/v.txt")"
line=$(grep '^cuda: module ' "$T/v.txt")
case "$line" in "cuda: module $(realpath "$MOD"): runtime "*) ;; *) fail "shardvit version --cuda: '$line'" ;; esac
grep -qE '^cuda: module .*: runtime [1-9][0-9]*\.[0-9], driver [^,]*, cuBLASLt [1-9][0-9]*, cuDNN [1-9][0-9]*, NCCL [1-9][0-9]*; devices [0-9]' \
    <<< "$line" || fail "shardvit version --cuda does not report the libraries: '$line'"
echo "3 ok: --version leaves the module alone; version --cuda: $line"
TINY="--model vit-28 --dim 32 --depth 1 --heads 2 --batch-size 16 --synth-samples 64 --steps 2 --mfu-calib-seconds 0"
driver=0
for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib64 ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do
    [ -e "$d/libcuda.so.1" ] && driver=1
done
ldconfig -p 2> /dev/null | grep -q 'libcuda\.so\.1 ' && driver=1
if [ $driver = 0 ]; then
    "$SV" train --device cuda $TINY --out "$T/c" > "$T/c.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && grep -q '^shardvit train: error: no usable CUDA device (.*) (unsupported) \[at backend_cuda\.c' "$T/c.log" ||
        fail "--device cuda without a GPU: rc $rc: $(tail -1 "$T/c.log")"
    echo "3b ok: --device cuda reaches the module's backend: $(tail -1 "$T/c.log" | cut -c1-120)"
else
    echo "3b: not checked: this machine has the NVIDIA driver's library (libcuda.so.1)"
fi

# ---- 4. modules that cannot be used ----
expect_err() { # NAME MODULE MESSAGE: version --cuda and --device cuda both name the problem
    SHARDVIT_CUDA_MODULE=$2 timeout 60 "$SV" version --cuda > "$T/$1.v" 2>&1 || fail "$1: shardvit version --cuda exited $?"
    grep -qF "cuda: module not loaded: $3" "$T/$1.v" || fail "$1: version --cuda says: $(grep '^cuda' "$T/$1.v")"
    SHARDVIT_CUDA_MODULE=$2 timeout 60 "$SV" train --device cuda $TINY --out "$T/$1" > "$T/$1.log" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -qF "shardvit train: error: $3" "$T/$1.log" ||
        fail "$1: --device cuda: rc $rc: $(tail -1 "$T/$1.log")"
    echo "4 ok ($1): $(tail -1 "$T/$1.log" | cut -c1-150)"
}
expect_err missing "$T/nowhere.so" "cannot load the CUDA module $T/nowhere.so (SHARDVIT_CUDA_MODULE): $T/nowhere.so: cannot open shared object file: No such file"
mkfifo "$T/fifo.so" # the loader would wait on it for a writer for ever
expect_err fifo "$T/fifo.so" "the CUDA module $T/fifo.so (SHARDVIT_CUDA_MODULE) is not a regular file"
expect_err dir "$T" "the CUDA module $T (SHARDVIT_CUDA_MODULE) is not a regular file"
CC=$(command -v cc || command -v gcc || true)
if [ -n "$CC" ]; then
    echo 'int not_the_entry(void) { return 1; }' > "$T/other.c"
    "$CC" -shared -fPIC -o "$T/other.so" "$T/other.c" || fail "cc"
    expect_err other "$T/other.so" "$T/other.so is not a shardvit CUDA module (no sv_cuda_module_entry)"
    # stand-ins of the table's first two fields (int abi; const char *build_id)
    printf '%s\n' 'static const struct { int abi; const char *id; } t = {999, "x"};' \
        'const void *sv_cuda_module_entry(void) { return &t; }' > "$T/abi.c"
    "$CC" -shared -fPIC -o "$T/abi.so" "$T/abi.c" || fail "cc"
    expect_err abi "$T/abi.so" "the CUDA module $T/abi.so has interface version 999, this program needs"
    abi=$(sed -n 's/^#define SV_CUDA_MODULE_ABI \([0-9]*\)$/\1/p' "$SRC/core/cuda_module.h")
    # ... of this interface, but another build; its initialiser ignores SIGTERM, as a library's might
    printf '%s\n' '#include <signal.h>' "static const struct { int abi; const char *id; } t = {$abi, \"0123abcd\"};" \
        'const void *sv_cuda_module_entry(void) { return &t; }' \
        '__attribute__((constructor)) static void init(void) { signal(SIGTERM, SIG_IGN); }' > "$T/build.c"
    "$CC" -shared -fPIC -o "$T/build.so" "$T/build.c" || fail "cc"
    expect_err build "$T/build.so" "the CUDA module $T/build.so is from another build (build id 0123abcd, this program's "
    grep -qF "loading the CUDA module $T/build.so changed the handling of SIGTERM; put back" "$T/build.log" ||
        fail "a module that changed SIGTERM's handling: no warning: $(head -3 "$T/build.log")"
    echo "4 ok: a module whose initialiser changed SIGTERM's handling: put back, with a warning"
else
    echo "4: SKIP of the entry, interface, build and signal checks: no C compiler"
fi
if [ $driver = 0 ]; then
    SHARDVIT_CUDA_MODULE=$T/nowhere.so "$SV" train --device auto $TINY --out "$T/auto" > "$T/auto.log" 2>&1 ||
        fail "--device auto without a driver: $(tail -2 "$T/auto.log")"
    grep -q 'device: cpu (auto: no usable CUDA device)' "$T/auto.log" || fail "--device auto: $(grep device: "$T/auto.log")"
    grep -qi 'cuda module' "$T/auto.log" && fail "--device auto without a driver tried the CUDA module: $(grep -i 'cuda module' "$T/auto.log")"
    echo "4 ok: --device auto without the NVIDIA driver trains on the CPU and never tries the module"
fi
echo "cuda_module: all passed"
