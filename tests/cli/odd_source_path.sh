#!/usr/bin/env bash
# The project configures from a checkout whose path holds glob characters, quotes and spaces
# ("[x]", "*", "?", "it's"): every module finds its sources and every test directory its tests.
# file(GLOB) once read "[x]" as a character class, matched nothing, and the configuration failed
# (or, for tests/ and bench/, would have registered no test at all); CMakeLists.txt sv_glob now
# takes the directory literally. Usage: odd_source_path.sh CMAKE SOURCE_DIR BUILD_DIR (BUILD_DIR:
# the build this test belongs to, whose test count the copy must reach).
set -euo pipefail
CMAKE=$1 SRC=$2 BUILD=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dst="$tmp/it's [x] *?/shardvit"
mkdir -p "$dst"
# the tracked files (and untracked ones git does not ignore) as they are in the working tree
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$SRC" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$dst" 2>/dev/null) ||
        true
else
    (cd "$SRC" && tar --exclude=./build --exclude='./build-*' --exclude='./.venv*' -cf - .) | (cd "$dst" && tar -xf -)
fi
[ -f "$dst/CMakeLists.txt" ] || { echo "FAIL: could not copy the source tree"; exit 1; }
if ! "$CMAKE" -S "$dst" -B "$dst/build" -DSHARDVIT_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >"$tmp/cfg.log" 2>&1; then
    echo "FAIL: configuring from '$dst' failed"
    tail -20 "$tmp/cfg.log"
    exit 1
fi
n_copy=$(cd "$dst/build" && ctest -N | sed -n 's/^Total Tests: //p')
# this build may have the CUDA tests on top (SHARDVIT_CUDA=ON): count the others
n_here=$(cd "$BUILD" && ctest -N | grep -c "Test *#[0-9]*: " || true)
n_gpu=$(cd "$BUILD" && ctest -N | grep "Test *#[0-9]*: " | grep -c -E ": (gpu_comm_nccl|gpu_cuda_module)$" || true)
echo "tests registered: $n_copy from the odd path, $n_here here ($n_gpu of them CUDA-only)"
[ "$n_copy" -ge 100 ] && [ "$n_copy" = $((n_here - n_gpu)) ] || { echo "FAIL: the copy registered $n_copy tests"; exit 1; }
echo "ok: configured from a path with [x] * ? and a quote; every test registered"
