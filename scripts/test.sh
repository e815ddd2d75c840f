#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (ctest). Exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh -DSHARDVIT_WERROR=OFF
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"${CTEST_JOBS:-2}" "$@"
