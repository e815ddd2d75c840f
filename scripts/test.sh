#!/usr/bin/env bash
# Install what is missing, build, run the whole test suite (ctest), then the unit and MPI tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh; skip with
# SANITIZE=0). Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" "$@")
if [ "${SANITIZE:-1}" != 0 ]; then
    bash scripts/sanitize.sh build-asan
fi
