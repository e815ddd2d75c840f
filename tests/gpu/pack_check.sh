#!/usr/bin/env bash
# The archive of tests/gpu/pack.sh is self-contained: made from BUILD_DIR, unpacked into an empty
# folder, and then
#   pack_check.sh ldd BUILD_DIR   with LD_LIBRARY_PATH unset, every dependency of every packed
#       binary and library resolves inside the archive's lib/, except the C runtime (glibc,
#       libstdc++, libgcc_s: from the system) and the CUDA libraries (not shipped: not found, or
#       found outside Debian's folders); every file carries an $ORIGIN run path; the packed
#       run.sh (stages libs and device, on the CPU) uses the archive's binaries and lib/, and its
#       MPI process loads no UCX plug-in from this machine's folders (run.sh's UCX settings);
#       pack.sh refuses (exit 2) a build without the CUDA backend unless --allow-no-cuda, which
#       this check passes for such a build (CPU-only CI);
#   pack_check.sh run BUILD_DIR   the unpacked binaries run in a chroot that holds only the
#       archive and the C runtime, plus this machine's CUDA library folders bind-mounted and put
#       on LD_LIBRARY_PATH, as tests/gpu/run.sh does on a GPU machine: `shardvit --version` reports
#       the archive's libjpeg-turbo, `shardvit version --cuda` loads the archive's CUDA module
#       (lib/libshardvit_cuda.so, with the CUDA library versions), a 3-step CPU training run loads the archive's OpenBLAS
#       (and MPICH), gpu_ops_vs_cpu and gpu_comm_nccl start (0, or 77 without a GPU), and with a
#       stand-in driver library gpu_ops_vs_cpu loads the archive's CUDA module through its own
#       run path (LD_DEBUG=libs), then skips (77: no device). Control:
#       without LD_LIBRARY_PATH the same chroot runs shardvit, whose CUDA module cannot load
#       for want of a CUDA library (the host's CUDA libraries are really out of reach). Needs root and unshare -m (exit 77
#       otherwise).
# Exit 77 when patchelf (for pack.sh) is missing.
set -u
[ $# -eq 2 ] && { [ "$1" = ldd ] || [ "$1" = run ]; } || { echo "usage: $0 ldd|run BUILD_DIR" >&2; exit 2; }
MODE=$1 BUILD=$2
HERE=$(cd "$(dirname "$0")" && pwd)
command -v patchelf > /dev/null || { echo "SKIP: patchelf is not installed (scripts/setup.sh installs it)"; exit 77; }
if [ "$MODE" = run ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: the chroot check needs root"; exit 77; }
    unshare -m true 2> /dev/null || { echo "SKIP: unshare -m is not permitted here"; exit 77; }
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/sv-pack-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# A build without the CUDA backend is refused (exit 2, saying why) unless --allow-no-cuda.
PACK_OPTS=()
bash "$HERE/pack.sh" "$BUILD" "$T/a.tgz" > "$T/pack.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q 'has no CUDA backend' "$T/pack.log"; then
    echo "note: $BUILD has no CUDA backend: pack.sh refused it (exit 2); packing with --allow-no-cuda"
    PACK_OPTS=(--allow-no-cuda)
    bash "$HERE/pack.sh" "${PACK_OPTS[@]}" "$BUILD" "$T/a.tgz" > "$T/pack.log" 2>&1 || fail "pack.sh: $(tail -5 "$T/pack.log")"
elif [ $rc -ne 0 ]; then
    fail "pack.sh: $(tail -5 "$T/pack.log")"
fi
size=$(stat -c %s "$T/a.tgz")
echo "archive: $size bytes"
[ "$size" -lt $((60 * 1024 * 1024)) ] || fail "the archive is $size bytes, over 60 MiB"
mkdir "$T/u"
tar -xzf "$T/a.tgz" -C "$T/u" || fail "cannot unpack the archive"
P=$T/u/shardvit-gpu
for f in app/shardvit tests/gpu/gpu_ops_vs_cpu tests/gpu/run.sh tests/gpu/compare_losses.py tests/gpu/gpu_report.py \
    build-info.txt; do
    [ -s "$P/$f" ] || fail "the archive lacks $f"
done
[ ! -x "$BUILD/tests/gpu/gpu_comm_nccl" ] || [ -x "$P/tests/gpu/gpu_comm_nccl" ] || fail "the archive lacks gpu_comm_nccl"
BINS=("$P/app/shardvit" "$P/tests/gpu/gpu_ops_vs_cpu")
[ -x "$P/tests/gpu/gpu_comm_nccl" ] && BINS+=("$P/tests/gpu/gpu_comm_nccl")
# the CUDA module (core/cuda_module.h) travels in lib/, where the binaries' run path finds it
MOD=$P/lib/libshardvit_cuda.so
[ ! -e "$BUILD/lib/libshardvit_cuda.so" ] || [ -s "$MOD" ] || fail "the archive lacks lib/libshardvit_cuda.so"

# the C runtime, which every Linux provides, and the CUDA libraries, which the GPU machine provides
is_crt() {
    case "$1" in
        linux-vdso.so.1 | ld-linux-x86-64.so.2 | libc.so.6 | libm.so.6 | libmvec.so.1 | libpthread.so.0 | libdl.so.2 | \
            librt.so.1 | libresolv.so.2 | libstdc++.so.6 | libgcc_s.so.1) return 0 ;;
    esac
    return 1
}
is_cuda() {
    case "$1" in
        libcuda.so.1 | libcudart.so.1[0-9] | libcublas.so.1[0-9] | libcublasLt.so.1[0-9] | libcudnn*.so.[0-9] | \
            libnccl.so.2 | libnvrtc.so.1[0-9]) return 0 ;;
    esac
    return 1
}
deps() { # FILE: "name<TAB>path" per dependency, no LD_LIBRARY_PATH
    env -u LD_LIBRARY_PATH ldd "$1" 2>&1 | awk '
        $2 == "=>" && $3 == "not" { printf "%s\tnot found\n", $1; next }
        $2 == "=>" { printf "%s\t%s\n", $1, $3; next }
        $1 ~ /^\// { n = split($1, a, "/"); printf "%s\t%s\n", a[n], $1 }'
}

if [ "$MODE" = ldd ]; then
    bad=0 in_lib=0 cuda_seen=0 n=0
    for f in "${BINS[@]}" "$P"/lib/*; do
        n=$((n + 1))
        readelf -d "$f" | grep -qE '(RUNPATH|RPATH).*\$ORIGIN' || { echo "no \$ORIGIN run path: ${f#"$P"/}" >&2 && bad=1; }
        while IFS=$'\t' read -r name path; do
            real=$(readlink -f "$path" 2> /dev/null || echo "$path")
            if is_crt "$name"; then
                case "$real" in /lib/* | /usr/lib/* | /lib64/* | "") ;; *) echo "${f#"$P"/}: $name from $real" >&2 && bad=1 ;; esac
            elif is_cuda "$name"; then
                cuda_seen=1
                case "$real" in
                    /lib/x86_64-linux-gnu/* | /usr/lib/x86_64-linux-gnu/*)
                        echo "${f#"$P"/}: CUDA library $name from Debian's $real" >&2 && bad=1 ;;
                esac
            elif [ "$path" = "not found" ]; then
                echo "${f#"$P"/}: $name not found (not shipped, not a CUDA library)" >&2 && bad=1
            else
                case "$real" in
                    "$P"/lib/*) in_lib=$((in_lib + 1)) ;;
                    *) echo "${f#"$P"/}: $name resolves to $real, outside the archive's lib/" >&2 && bad=1 ;;
                esac
            fi
        done < <(deps "$f")
    done
    for lib in "$P"/lib/*; do is_cuda "${lib##*/}" && echo "the archive ships the CUDA library ${lib##*/}" >&2 && bad=1; done
    [ "$in_lib" -gt 0 ] || { echo "nothing resolved into the archive's lib/" >&2 && bad=1; }
    [ $bad -eq 0 ] || fail "the archive is not self-contained (above)"
    # the packed run.sh finds its binaries and lib/ in the archive
    OUT=$T/report bash "$P/tests/gpu/run.sh" --device cpu --only libs,device --deadline 60 > "$T/run.log" 2>&1 ||
        fail "the packed run.sh (libs, device on the CPU): $(tail -5 "$T/run.log")"
    grep -q "^binaries: $P\$" "$T/report/environment.txt" || fail "the packed run.sh did not use the archive's binaries"
    grep -qE "libopenblas.so.0 => $P/(app/\.\./)?lib/libopenblas.so.0" "$T/report/environment.txt" ||
        fail "the packed run.sh's ldd does not show the archive's OpenBLAS"
    # the device stage's process (LD_DEBUG=libs) loaded no UCX plug-in (ucx/libuct_*.so) of this machine
    plugins=$(sed -n '/^== libraries loaded by/,/^== /p' "$T/report/environment.txt" | grep '/ucx/' | grep -v "^ *$P/")
    [ -z "$plugins" ] || fail "the packed run.sh's MPI process loaded UCX plug-ins from this machine: $plugins"
    grep -q '^MPI transport: UCX_TLS=self,sm (set by run.sh' "$T/report/environment.txt" ||
        fail "environment.txt does not say how UCX was set"
    # pack.sh refuses a build without the CUDA backend: a build folder without the CUDA module
    FAKE=$T/build-no-cuda
    mkdir -p "$FAKE/app" "$FAKE/tests/gpu"
    cp "$(type -P true)" "$FAKE/app/shardvit" && cp "$(type -P true)" "$FAKE/tests/gpu/gpu_ops_vs_cpu"
    bash "$HERE/pack.sh" "$FAKE" "$T/no-cuda.tgz" > "$T/no-cuda.log" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "pack.sh of a build without CUDA exited $rc, not 2: $(tail -2 "$T/no-cuda.log")"
    grep -q "pack.sh: refusing $FAKE: it has no CUDA backend: it has no CUDA module lib/libshardvit_cuda.so" "$T/no-cuda.log" ||
        fail "pack.sh's refusal does not say why: $(cat "$T/no-cuda.log")"
    [ ! -e "$T/no-cuda.tgz" ] || fail "pack.sh wrote an archive of a build without CUDA"
    printf 'SHARDVIT_CUDA:BOOL=OFF\n' > "$FAKE/CMakeCache.txt"
    bash "$HERE/pack.sh" "$FAKE" "$T/no-cuda.tgz" > "$T/no-cuda.log" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q 'configured with SHARDVIT_CUDA=OFF' "$T/no-cuda.log" ||
        fail "pack.sh of a build configured with SHARDVIT_CUDA=OFF: rc $rc: $(cat "$T/no-cuda.log")"
    bash "$HERE/pack.sh" --allow-no-cuda "$FAKE" "$T/no-cuda.tgz" > "$T/no-cuda.log" 2>&1 &&
        grep -q 'packed anyway (--allow-no-cuda)' "$T/no-cuda.log" && [ -s "$T/no-cuda.tgz" ] ||
        fail "pack.sh --allow-no-cuda: $(tail -3 "$T/no-cuda.log")"
    echo "ok: pack.sh refuses a build without CUDA (exit 2, saying why), --allow-no-cuda packs it"
    echo "ok: $n files, $in_lib dependencies resolved inside lib/ ($(ls "$P"/lib | wc -l) libraries)," \
        "CUDA libraries $([ $cuda_seen = 1 ] && echo "left to the GPU machine" || echo "not used (build without CUDA)")"
    exit 0
fi

# ---- run: a chroot with the archive, the C runtime and (bind-mounted) the CUDA library folders ----
CH=$T/root
mkdir -p "$CH/opt" "$CH/lib/x86_64-linux-gnu" "$CH/lib64" "$CH/proc" "$CH/sys" "$CH/dev" "$CH/tmp"
# a stand-in of the NVIDIA driver's library (no function of it): with it the programs load their
# CUDA module, whose runtime then finds no device
CC=$(command -v cc || command -v gcc || true)
if [ -e "$P/lib/libshardvit_cuda.so" ] && [ -n "$CC" ]; then
    mkdir -p "$CH/drv"
    echo 'int sv_not_a_driver;' | "$CC" -shared -fPIC -x c - -o "$CH/drv/libcuda.so.1" || fail "cannot compile the stand-in driver library"
fi
chmod 1777 "$CH/tmp"
cp -a "$P" "$CH/opt/"
cuda_dirs=()
while IFS=$'\t' read -r name path; do
    [ "$path" = "not found" ] && continue
    if is_crt "$name"; then
        case "$name" in
            ld-linux-x86-64.so.2) cp -L "$path" "$CH/lib64/$name" ;;
            linux-vdso.so.1) ;;
            *) cp -L "$path" "$CH/lib/x86_64-linux-gnu/$name" ;;
        esac
    elif is_cuda "$name"; then
        d=$(dirname "$(readlink -f "$path")")
        [[ " ${cuda_dirs[*]} " == *" $d "* ]] || cuda_dirs+=("$d")
    fi
done < <(for b in "${BINS[@]}" "$MOD"; do [ -e "$b" ] && deps "$b"; done | sort -u)
[ -e "$CH/lib64/ld-linux-x86-64.so.2" ] || fail "no dynamic loader found for the chroot"
[ ${#cuda_dirs[@]} -gt 0 ] || echo "note: the binaries use no CUDA library (build without CUDA)"
# a CUDA folder that also held a shipped library would hide its absence from the archive
for d in "${cuda_dirs[@]}"; do
    for lib in "$P"/lib/*; do [ ! -e "$d/${lib##*/}" ] || fail "$d also holds ${lib##*/}: no proof it comes from the archive"; done
done
llp=""
for i in "${!cuda_dirs[@]}"; do mkdir -p "$CH/cuda/$i" && llp="$llp${llp:+:}/cuda/$i"; done
unshare -m bash -s "$CH" "$llp" "${cuda_dirs[@]}" > "$T/chroot.log" 2>&1 << 'EOF'
CH=$1 LLP=$2
shift 2
for m in proc sys dev; do mount --bind "/$m" "$CH/$m" || exit 3; done
i=0
for d in "$@"; do mount --bind -o ro "$d" "$CH/cuda/$i" || exit 3; i=$((i + 1)); done
SV=/opt/shardvit-gpu/app/shardvit
env -u LD_LIBRARY_PATH chroot "$CH" "$SV" version --cuda > "$CH/tmp/control.txt" 2>&1
echo $? > "$CH/tmp/control.rc"
export LD_LIBRARY_PATH=$LLP
chroot "$CH" "$SV" --version > "$CH/tmp/version.txt" 2>&1
echo $? > "$CH/tmp/version.rc"
chroot "$CH" "$SV" version --cuda > "$CH/tmp/cuda.txt" 2>&1
echo $? > "$CH/tmp/cuda.rc"
chroot "$CH" "$SV" train --device cpu --data synthetic --out /tmp/run --log-every 1 --seed 7 --workers 2 --model vit-28 \
    --dim 32 --depth 1 --heads 2 --batch-size 16 --synth-samples 64 --steps 3 > "$CH/tmp/train.txt" 2>&1
echo $? > "$CH/tmp/train.rc"
chroot "$CH" /opt/shardvit-gpu/tests/gpu/gpu_ops_vs_cpu > "$CH/tmp/ops.txt" 2>&1
echo $? > "$CH/tmp/ops.rc"
if [ -e "$CH/drv/libcuda.so.1" ]; then # a driver library that is not one: the module is loaded, no device
    LD_DEBUG=libs LD_LIBRARY_PATH=$LLP:/drv chroot "$CH" /opt/shardvit-gpu/tests/gpu/gpu_ops_vs_cpu > "$CH/tmp/ops_drv.txt" 2>&1
    echo $? > "$CH/tmp/ops_drv.rc"
fi
if [ -x "$CH/opt/shardvit-gpu/tests/gpu/gpu_comm_nccl" ]; then
    chroot "$CH" /opt/shardvit-gpu/tests/gpu/gpu_comm_nccl > "$CH/tmp/nccl.txt" 2>&1
    echo $? > "$CH/tmp/nccl.rc"
fi
EOF
rc=$?
[ $rc -eq 0 ] || fail "the chroot could not be prepared (rc $rc): $(tail -3 "$T/chroot.log")"
out() { cat "$CH/tmp/$1" 2> /dev/null; }
show() { echo "--- $1 (rc $(out "$1.rc"))" && out "$1.txt" | tail -5; }

if [ ${#cuda_dirs[@]} -gt 0 ]; then
    grep -qE '^cuda: module not loaded: .*: lib(cudart|cublas|cublasLt|cudnn|nccl)\.so[.0-9]*: cannot open shared object file' "$CH/tmp/control.txt" ||
        fail "control: the CUDA module loaded in the chroot without the CUDA folders: $(out control.txt | tail -2)"
    echo "control ok: $(grep '^cuda:' "$CH/tmp/control.txt" | cut -c1-160)"
fi
[ "$(out version.rc)" = 0 ] || { show version; fail "shardvit --version does not run from the archive"; }
if [ -e "$MOD" ]; then
    grep -q '^cuda: module /opt/shardvit-gpu/lib/libshardvit_cuda.so: runtime [1-9]' "$CH/tmp/cuda.txt" ||
        { show cuda; fail "shardvit version --cuda did not load the archive's CUDA module"; }
fi
grep -q 'libjpeg-turbo: .*(/opt/shardvit-gpu/lib/libturbojpeg' "$CH/tmp/version.txt" ||
    { show version; fail "shardvit --version does not report the archive's libjpeg-turbo"; }
[ "$(out train.rc)" = 0 ] || { show train; fail "a CPU training run does not run from the archive"; }
steps=$(grep -c '"step":' "$CH/tmp/run/metrics.jsonl" 2> /dev/null)
[ "$steps" = 3 ] || fail "the training run logged ${steps:-no} steps, not 3"
head -1 "$CH/tmp/run/metrics.jsonl" | grep -q '"openblas":{[^}]*"file":"/opt/shardvit-gpu/lib/' ||
    fail "the training run did not load the archive's OpenBLAS: $(head -c 600 "$CH/tmp/run/metrics.jsonl")"
if grep -q '"mpi":true' "$CH/tmp/run/metrics.jsonl"; then
    head -1 "$CH/tmp/run/metrics.jsonl" | grep -q '"mpi":{[^}]*"file":"/opt/shardvit-gpu/lib/libmpich' ||
        fail "the training run did not load the archive's MPICH"
fi
case "$(out ops.rc)" in 0 | 77) ;; *) show ops && fail "gpu_ops_vs_cpu does not start from the archive" ;; esac
# the op test finds the archive's CUDA module through its own run path ($ORIGIN/../../lib), as on
# a GPU machine, where it loads it (here: a stand-in driver library, so that it tries; no device)
if [ -e "$CH/tmp/ops_drv.rc" ]; then
    grep -qE 'calling init: /opt/shardvit-gpu/tests/gpu/\.\./\.\./lib/libshardvit_cuda\.so$' "$CH/tmp/ops_drv.txt" ||
        fail "gpu_ops_vs_cpu with a driver library did not load the archive's CUDA module: $(grep -m3 'libshardvit_cuda\|libcuda' "$CH/tmp/ops_drv.txt")"
    [ "$(out ops_drv.rc)" = 77 ] || { show ops_drv; fail "gpu_ops_vs_cpu with a stand-in driver library exited $(out ops_drv.rc), not 77"; }
    echo "ok: gpu_ops_vs_cpu loads the archive's CUDA module through its run path (stand-in driver: no device, 77)"
elif [ -e "$MOD" ]; then
    echo "note: no C compiler: gpu_ops_vs_cpu's way to the CUDA module not checked"
fi
if [ -e "$CH/tmp/nccl.rc" ]; then
    case "$(out nccl.rc)" in 0 | 77) ;; *) show nccl && fail "gpu_comm_nccl does not start from the archive" ;; esac
fi
echo "ok: in a chroot of the archive + the C runtime (+ CUDA folders: ${cuda_dirs[*]:-none}):" \
    "--version, a 3-step CPU training run (archive's OpenBLAS), gpu_ops_vs_cpu rc $(out ops.rc)," \
    "gpu_comm_nccl rc $(out nccl.rc || echo absent)"
