#!/usr/bin/env bash
# Pack a CUDA build into one self-contained archive for tests/gpu/run.sh on a GPU machine that
# cannot build shardvit itself (no MPICH / OpenBLAS / libjpeg-turbo there, no network):
#
#   tests/gpu/pack.sh [--allow-no-cuda] [BUILD_DIR] [ARCHIVE]   defaults: build, out-gpu/shardvit-gpu.tgz
#
# The build must have the CUDA backend (SHARDVIT_CUDA=ON in its CMakeCache.txt, and its CUDA
# module lib/libshardvit_cuda.so linked against libcudart): an archive without it would spend a
# GPU machine's time only to report "no CUDA device". Such a build is refused with exit 2;
# --allow-no-cuda packs it anyway, for the archive's own tests on machines without CUDA
# (tests/gpu/pack_check.sh).
#
# The archive holds one folder, shardvit-gpu/, with
#   app/shardvit, tests/gpu/gpu_ops_vs_cpu, tests/gpu/gpu_comm_nccl (MPI builds)  the binaries;
#   tests/gpu/run.sh, compare_losses.py, gpu_report.py                         the check itself;
#   lib/            the CUDA module libshardvit_cuda.so (the CUDA backend and the NCCL transport,
#                   which the binaries load with dlopen through their run path: core/cuda_module.h)
#                   and every shared library the binaries and the module load that is neither part
#                   of the C runtime
#                   (glibc, libstdc++, libgcc_s) nor a CUDA library (driver, cudart, cuBLAS(Lt),
#                   cuDNN, NCCL, NVRTC: the GPU machine has those, run.sh finds them);
#   build-info.txt  version, build options, the shipped libraries and where they came from, the
#                   newest glibc / libstdc++ symbol versions the files need.
# The binaries carry the run path $ORIGIN/../lib (app/) or $ORIGIN/../../lib (tests/gpu/) and
# every shipped library $ORIGIN, so the archive's libraries are found wherever it is unpacked,
# with no LD_LIBRARY_PATH (patchelf edits the copies; the build is not touched).
# The script refuses to write an archive in which a library it should ship would still come from
# elsewhere, and one that would not fit a 64 MiB upload together with the source tree.
# Needs: patchelf (scripts/setup.sh installs it), ldd, objdump, tar, gzip.
set -euo pipefail
source "$(dirname "$0")/../../scripts/usage.sh" "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ALLOW_NO_CUDA=0
[ "${1:-}" = --allow-no-cuda ] && ALLOW_NO_CUDA=1 && shift
case "${1:-}" in -*) sv_usage_refuse "unknown option '$1'" ;; esac
BUILD=${1:-$ROOT/build}
ARCHIVE=${2:-$ROOT/out-gpu/shardvit-gpu.tgz}
LIMIT_MIB=${SV_PACK_LIMIT_MIB:-60} # archive + source tree; the upload limit is 64 MiB

die() {
    echo "pack.sh: $*" >&2
    exit 1
}
[ $# -le 2 ] || die "usage: $0 [--allow-no-cuda] [BUILD_DIR] [ARCHIVE]"
[ -x "$BUILD/app/shardvit" ] || die "no $BUILD/app/shardvit (build first: BUILD_DIR=build bash scripts/build.sh)"
[ -x "$BUILD/tests/gpu/gpu_ops_vs_cpu" ] || die "no $BUILD/tests/gpu/gpu_ops_vs_cpu in $BUILD"
for tool in patchelf ldd objdump tar gzip; do
    command -v "$tool" > /dev/null || die "$tool is missing (scripts/setup.sh installs patchelf)"
done
# ---- a build with the CUDA backend only (unless --allow-no-cuda) ----
no_cuda=""
cuda_opt=$(sed -n 's/^SHARDVIT_CUDA:BOOL=//p' "$BUILD/CMakeCache.txt" 2> /dev/null || true)
case "${cuda_opt^^}" in
    "" | ON | 1 | YES | TRUE | Y) ;;
    *) no_cuda="it was configured with SHARDVIT_CUDA=$cuda_opt ($BUILD/CMakeCache.txt)" ;;
esac
MOD=$BUILD/lib/libshardvit_cuda.so
if [ -z "$no_cuda" ] && [ ! -e "$MOD" ]; then
    no_cuda="it has no CUDA module lib/libshardvit_cuda.so"
elif [ -z "$no_cuda" ] && ! grep -q 'libcudart\.so' <<< "$(env -u LD_LIBRARY_PATH ldd "$MOD" 2> /dev/null)"; then
    no_cuda="its CUDA module lib/libshardvit_cuda.so does not link libcudart (ldd)"
fi
if [ -n "$no_cuda" ]; then
    if [ "$ALLOW_NO_CUDA" = 1 ]; then
        echo "pack.sh: note: $BUILD has no CUDA backend ($no_cuda); packed anyway (--allow-no-cuda):" \
            "this archive cannot run the GPU check" >&2
    else
        echo "pack.sh: refusing $BUILD: it has no CUDA backend: $no_cuda. On the GPU machine such an archive" \
            "would only report 'no CUDA device'. Configure with -DSHARDVIT_CUDA=ON (scripts/build.sh does) and" \
            "build again; --allow-no-cuda packs it anyway (for tests without a GPU)." >&2
        exit 2
    fi
fi
case "$ARCHIVE" in /*) ;; *) ARCHIVE=$PWD/$ARCHIVE ;; esac

# Library classes by soname: "system" (the C runtime every Linux has), "cuda" (provided by the
# GPU machine's CUDA installation or nvidia-* wheels), "ship" (everything else).
lib_class() {
    case "$1" in
        linux-vdso.so* | ld-linux*.so* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | \
            librt.so.* | libresolv.so.* | libutil.so.* | libstdc++.so.* | libgcc_s.so.*) echo system ;;
        libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | libcudnn*.so* | libnccl.so* | libnvrtc*.so* | \
            libnvidia*.so* | libnvJitLink.so*) echo cuda ;;
        *) echo ship ;;
    esac
}

# ldd_pairs FILE: "soname<TAB>path" per dependency ("not found" as the path), without
# LD_LIBRARY_PATH so only run paths and the system's search list count.
ldd_pairs() {
    env -u LD_LIBRARY_PATH ldd "$1" | awk '
        $2 == "=>" && $3 == "not" { printf "%s\tnot found\n", $1; next }
        $2 == "=>" && $3 ~ /^\// { printf "%s\t%s\n", $1, $3 }'
}

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-pack.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/shardvit-gpu
mkdir -p "$PKG/app" "$PKG/tests/gpu" "$PKG/lib"
cp "$BUILD/app/shardvit" "$PKG/app/"
cp "$BUILD/tests/gpu/gpu_ops_vs_cpu" "$PKG/tests/gpu/"
[ -x "$BUILD/tests/gpu/gpu_comm_nccl" ] && cp "$BUILD/tests/gpu/gpu_comm_nccl" "$PKG/tests/gpu/"
TEST_BINS=("$PKG"/tests/gpu/gpu_*)
BINS=("$PKG/app/shardvit" "${TEST_BINS[@]}")
if [ -e "$MOD" ]; then
    cp "$MOD" "$PKG/lib/"
    BINS+=("$PKG/lib/libshardvit_cuda.so")
fi
cp "$HERE/run.sh" "$HERE/compare_losses.py" "$HERE/gpu_report.py" "$PKG/tests/gpu/"

# ---- the libraries to ship: ldd lists the whole dependency closure of each binary (and module) ----
: > "$STAGE/shipped.tsv"
for bin in "${BINS[@]}"; do ldd_pairs "$bin"; done | sort -u | while IFS=$'\t' read -r name path; do
    [ "$(lib_class "$name")" = ship ] || continue
    [ "$path" != "not found" ] || die "$name (needed by the build) is not found on this machine"
    [ -e "$PKG/lib/$name" ] && continue
    cp -L "$path" "$PKG/lib/$name"
    chmod u+w "$PKG/lib/$name"
    printf '%s\t%s\n' "$name" "$(readlink -f "$path")" >> "$STAGE/shipped.tsv"
done
patchelf --set-rpath '$ORIGIN/../lib' "$PKG/app/shardvit"
for bin in "${TEST_BINS[@]}"; do patchelf --set-rpath '$ORIGIN/../../lib' "$bin"; done
for lib in "$PKG"/lib/*; do [ -e "$lib" ] && patchelf --set-rpath '$ORIGIN' "$lib"; done

# ---- check: every "ship" dependency of every file resolves inside lib/ ----
bad=0
for f in "${BINS[@]}" "$PKG"/lib/*; do
    [ -e "$f" ] || continue
    while IFS=$'\t' read -r name path; do
        [ "$(lib_class "$name")" = ship ] || continue
        case "$(readlink -f "$path" 2> /dev/null)" in
            "$PKG"/lib/*) ;;
            *) echo "pack.sh: ${f#"$PKG"/}: $name resolves to '$path', not to the archive's lib/" >&2 && bad=1 ;;
        esac
    done < <(ldd_pairs "$f")
done
[ $bad -eq 0 ] || die "the archive would not be self-contained"

# ---- build-info.txt ----
max_version() { # PREFIX FILES...: the newest PREFIX_x.y symbol version the files need
    local prefix=$1
    shift
    objdump -T "$@" 2> /dev/null | grep -o "${prefix}_[0-9][0-9.]*" | sort -uV | tail -1
}
{
    echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    echo "source: $(git -C "$ROOT" describe --always --dirty 2> /dev/null || echo unknown)"
    echo "build dir: $(cd "$BUILD" && pwd)"
    "$BUILD/app/shardvit" --version 2>&1 | sed 's/^/version: /'
    echo "needs: glibc symbols up to $(max_version GLIBC "${BINS[@]}" "$PKG"/lib/*)," \
        "libstdc++ symbols up to $(max_version GLIBCXX "${BINS[@]}" "$PKG"/lib/* | grep . || echo "(none)")"
    echo "provided by the GPU machine: $(for bin in "${BINS[@]}"; do ldd_pairs "$bin"; done | cut -f1 | sort -u |
        while read -r n; do [ "$(lib_class "$n")" = cuda ] && printf '%s ' "$n"; done)"
    echo "shipped libraries (lib/):"
    sort "$STAGE/shipped.tsv" | while IFS=$'\t' read -r name src; do
        pkg=$( (dpkg -S "$src" 2> /dev/null || dpkg -S "${src#/usr}" 2> /dev/null) | head -1 | cut -d: -f1 || true)
        printf '  %-22s %9d bytes  from %s%s\n' "$name" "$(stat -c %s "$PKG/lib/$name")" "$src" "${pkg:+ ($pkg)}"
    done
} > "$PKG/build-info.txt"

# ---- the archive ----
mkdir -p "$(dirname "$ARCHIVE")"
tar -C "$STAGE" --sort=name --owner=0 --group=0 --numeric-owner -czf "$ARCHIVE.tmp" shardvit-gpu
mv "$ARCHIVE.tmp" "$ARCHIVE"
kib() { du -sk "$1" | cut -f1; }
tree_kib=$( (cd "$ROOT" && git ls-files -co --exclude-standard -z 2> /dev/null | du -ck --files0-from=- 2> /dev/null |
    tail -1 | cut -f1) || true)
arch_kib=$(kib "$ARCHIVE")
cat "$PKG/build-info.txt"
printf 'archive: %s: %d KiB (unpacked %d KiB, %d shipped libraries); with the source tree (%d KiB): %d KiB\n' \
    "$ARCHIVE" "$arch_kib" "$(kib "$PKG")" "$(wc -l < "$STAGE/shipped.tsv")" "${tree_kib:-0}" \
    $((arch_kib + ${tree_kib:-0}))
[ $((arch_kib + ${tree_kib:-0})) -le $((LIMIT_MIB * 1024)) ] ||
    die "archive + source tree exceed ${LIMIT_MIB} MiB (configure the build with -DSHARDVIT_MPI=OFF to drop MPICH)"
