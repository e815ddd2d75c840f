#!/usr/bin/env bash
# Install what is missing, check the C style (scripts/format.sh --check), build (warnings are
# errors; plus the no-MPI variants, with and without CUDA, see below), make the test venv of the
# third-party readers (scripts/test_venv.sh: tensorboard, webdataset, timm; its interpreter reaches the tests as
# SHARDVIT_TEST_PYTHON), run the whole test suite (ctest), then the unit and MPI tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh; skip with SANITIZE=0).
# Exits non-zero when any test fails.
set -euo pipefail
source "$(dirname "$0")/usage.sh" "$@"
[ $# -eq 0 ] || sv_usage_refuse "takes no arguments (got '$1')"
cd "$(dirname "$0")/.."
# each phase's wall time, for the 20-minute budget of the suite on 2 cores (docs/testing.md)
t_start=$(date +%s) t_phase=$(date +%s)
phase_done() {
    local now
    now=$(date +%s)
    echo "test: $1: $((now - t_phase)) s (total $((now - t_start)) s)"
    t_phase=$now
}
bash scripts/setup.sh
bash scripts/format.sh --check
phase_done "setup and style check"
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh -DSHARDVIT_WERROR=ON
phase_done "build"
if [ -z "${SHARDVIT_TEST_PYTHON:-}" ]; then
    SHARDVIT_TEST_PYTHON=$(bash scripts/test_venv.sh | tail -n 1)
fi
if [ -n "$SHARDVIT_TEST_PYTHON" ]; then
    export SHARDVIT_TEST_PYTHON
    echo "test: third-party readers run with $SHARDVIT_TEST_PYTHON"
fi
phase_done "test venv"
# OpenBLAS's own thread pool starts in its library constructor, before main, with one thread per
# core, and its idle threads spin on sched_yield for about 0.1 s: that cost every process the
# suite starts (thousands of them, two tests at a time on two cores) about 65 ms of CPU, taken
# from the test beside it. One thread at start-up makes no pool; the backend still sets OpenBLAS's
# count to its own thread count before a threaded call (the pool grows then). No result depends on
# it (the sanitizer pass has always run so); the two tests whose case is OpenBLAS's threads
# existing before main (train_preempt's start-up signals, cli_omp_env's ulimit -v) unset it.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" "$@")
phase_done "test suite"
# The build variants a user may configure must keep compiling warnings-clean and pass the tests of
# what differs from the main build (VARIANTS=0 skips both):
# - no MPI and no CUDA (single process: the *_absent.c files): everything is compiled; the comm
#   unit tests (the single-process transports) and a world-1 training through the variant's own
#   binary (train_synthetic: app/mpi_env_absent.c, fsdp/comm_mpi_absent.c, the device choice
#   without model/backend/cuda) run. The other unit tests are the main build's sources compiled
#   with the same flags, already run above (all 72 again took 32-36 s of the 20-minute budget);
# - no MPI with CUDA, where nvcc is found (CMake's own default turns CUDA on): only what differs
#   from the main build: the CUDA module with the single-process NCCL bootstrap
#   (fsdp/cuda/nccl_boot_single.c), checked to need nothing from the program beyond the list of
#   core/cuda_module.c (tests/gpu/cuda_module.sh --module-only: an MPI call would show there), and
#   the communication library of that variant, the module's loader, in the comm unit tests, which
#   run (10-20 s on 2 cores; the programs are the main build's sources).
if [ "${VARIANTS:-1}" != 0 ]; then
    cmake -S . -B build-nompi -DCMAKE_BUILD_TYPE=Release -DSHARDVIT_MPI=OFF -DSHARDVIT_CUDA=OFF \
        -DSHARDVIT_WERROR=ON >/dev/null
    cmake --build build-nompi -j"$(nproc)"
    (cd build-nompi && ctest -L comm --no-tests=error -j"${CTEST_JOBS:-2}" --output-on-failure &&
        ctest -R '^train_synthetic$' --no-tests=error --output-on-failure)
    cmake -S . -B build-nompi-cuda -DCMAKE_BUILD_TYPE=Release -DSHARDVIT_MPI=OFF -DSHARDVIT_WERROR=ON >/dev/null
    if grep -q '^SHARDVIT_CUDA:BOOL=ON' build-nompi-cuda/CMakeCache.txt; then
        cmake --build build-nompi-cuda -j"$(nproc)" --target shardvit_cuda comm_local_test comm_order_test
        bash tests/gpu/cuda_module.sh --module-only build-nompi-cuda .
        (cd build-nompi-cuda && ctest -R '^comm_(local|order)_test$' --output-on-failure)
    else
        echo "test: nvcc not found: the MPI=OFF + CUDA=ON variant is not built"
    fi
    phase_done "build variants"
fi
if [ "${SANITIZE:-1}" != 0 ]; then
    bash scripts/sanitize.sh build-asan
    phase_done "sanitizer build and tests"
fi
