#!/usr/bin/env bash
# Install what is missing, build, make the test venv of the third-party readers
# (scripts/test_venv.sh: tensorboard, webdataset, timm; its interpreter reaches the tests as
# SHARDVIT_TEST_PYTHON), run the whole test suite (ctest), then the unit and MPI tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh; skip with SANITIZE=0).
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh
if [ -z "${SHARDVIT_TEST_PYTHON:-}" ]; then
    SHARDVIT_TEST_PYTHON=$(bash scripts/test_venv.sh | tail -n 1)
fi
if [ -n "$SHARDVIT_TEST_PYTHON" ]; then
    export SHARDVIT_TEST_PYTHON
    echo "test: third-party readers run with $SHARDVIT_TEST_PYTHON"
fi
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" "$@")
if [ "${SANITIZE:-1}" != 0 ]; then
    bash scripts/sanitize.sh build-asan
fi
