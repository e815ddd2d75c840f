#!/usr/bin/env bash
# Make a slim, carryable copy of a CUDA build for tests/gpu/run.sh on a GPU machine that cannot
# build shardvit itself (e.g. it lacks libturbojpeg/OpenBLAS/MPICH development packages):
#
#   tests/gpu/pack.sh BUILD_DIR DEST_DIR        then on the GPU machine: tests/gpu/run.sh DEST_DIR
#
# DEST_DIR gets app/shardvit, the tests/gpu binaries and runtime-libs/ with the shared
# libraries they load, except the C runtime and the CUDA libraries (cudart, cuBLAS, cuDNN, NCCL,
# the driver), which the GPU machine provides (run.sh adds pip's nvidia-* wheels to the path).
# For a one-GPU check configure BUILD_DIR with -DSHARDVIT_MPI=OFF: MPICH alone is ~40 MB, and
# the whole copy should stay small enough to carry (about 45 MB without MPI, 85 MB with).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR DEST_DIR" >&2; exit 2; }
BUILD=$1 DEST=$2
mkdir -p "$DEST/app" "$DEST/tests/gpu" "$DEST/runtime-libs"
cp "$BUILD/app/shardvit" "$DEST/app/"
cp "$BUILD/tests/gpu/gpu_ops_vs_cpu" "$DEST/tests/gpu/"
[ -x "$BUILD/tests/gpu/gpu_comm_nccl" ] && cp "$BUILD/tests/gpu/gpu_comm_nccl" "$DEST/tests/gpu/"
for bin in "$DEST/app/shardvit" "$DEST"/tests/gpu/*; do
    ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
        libcuda.so*|libcudart.so*|libcublas*.so*|libcudnn*.so*|libnccl.so*|libnvidia*|libnvrtc*) ;;
        *) cp -L "$lib" "$DEST/runtime-libs/" ;;
    esac
done
du -sh "$DEST"
kb=$(du -sk "$DEST" | cut -f1)
[ "$kb" -le 61440 ] || echo "note: $DEST is over 60 MiB; a build with -DSHARDVIT_MPI=OFF is much smaller" >&2
