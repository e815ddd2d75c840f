#!/usr/bin/env bash
# Configure and build shardvit into ${BUILD_DIR:-build} (CUDA backend compiled when nvcc exists).
#   [BUILD_DIR=DIR] bash scripts/build.sh [CMAKE_ARGS...]   (e.g. -DSHARDVIT_WERROR=ON, passed to the
#   configure step)
set -euo pipefail
source "$(dirname "$0")/usage.sh" "$@"
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
