#!/usr/bin/env bash
# Install what is missing, check the C style (scripts/format.sh --check), build (warnings are
# errors; plus the no-MPI / no-CUDA variant and its unit tests), make the test venv of the
# third-party readers (scripts/test_venv.sh: tensorboard, webdataset, timm; its interpreter reaches the tests as
# SHARDVIT_TEST_PYTHON), run the whole test suite (ctest), then the unit and MPI tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh; skip with SANITIZE=0).
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/format.sh --check
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh -DSHARDVIT_WERROR=ON
if [ -z "${SHARDVIT_TEST_PYTHON:-}" ]; then
    SHARDVIT_TEST_PYTHON=$(bash scripts/test_venv.sh | tail -n 1)
fi
if [ -n "$SHARDVIT_TEST_PYTHON" ]; then
    export SHARDVIT_TEST_PYTHON
    echo "test: third-party readers run with $SHARDVIT_TEST_PYTHON"
fi
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" "$@")
# The build variants a user may configure must keep compiling warnings-clean and pass their unit
# tests: no MPI (single process: the *_absent.c files) and no CUDA (VARIANTS=0 skips).
if [ "${VARIANTS:-1}" != 0 ]; then
    cmake -S . -B build-nompi -DCMAKE_BUILD_TYPE=Release -DSHARDVIT_MPI=OFF -DSHARDVIT_CUDA=OFF \
        -DSHARDVIT_WERROR=ON >/dev/null
    cmake --build build-nompi -j"$(nproc)"
    (cd build-nompi && ctest -L unit -j"${CTEST_JOBS:-2}" --output-on-failure)
fi
if [ "${SANITIZE:-1}" != 0 ]; then
    bash scripts/sanitize.sh build-asan
fi
