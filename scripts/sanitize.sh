#!/usr/bin/env bash
# Build an AddressSanitizer + UndefinedBehaviorSanitizer tree (CPU only) and run the unit and
# MPI tests in it.
#   bash scripts/sanitize.sh [BUILD_DIR]        (default: build-asan)
# Extra ctest arguments can follow the build directory, e.g. `-R fsdp`.
# Any sanitizer report fails the test that produced it (-fno-sanitize-recover=all; ASan exits
# non-zero). Leak checking stays on; tests/sanitize/lsan.supp lists the few allocations that are
# meant to live for the whole process or belong to library internals (MPICH, OpenMP).
set -euo pipefail
source "$(dirname "$0")/usage.sh" "$@"
case "${1:-}" in -*) sv_usage_refuse "the build directory comes first (got '$1'); ctest arguments follow it" ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-asan}
[ $# -gt 0 ] && shift
case "$build" in /*) ;; *) build="$root/$build" ;; esac
jobs=${SANITIZE_JOBS:-2}
start=$(date +%s)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDVIT_CUDA=OFF \
    -DSHARDVIT_SANITIZE=address,undefined >/dev/null
cmake --build "$build" -j"$jobs"

# detect_leaks stays on; MPICH's and libgomp's one-time allocations are suppressed by name.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The suppressions path is quoted inside the option value: the sanitizer runtime splits its options
# at spaces, ':' and ',' (a checkout path with one would abort every test at start-up); a value may
# be quoted with " or ' (a path holding a double quote gets single quotes).
supp=$root/tests/sanitize/lsan.supp
case "$supp" in *'"'*) q="'" ;; *) q='"' ;; esac
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$q$supp$q:print_suppressions=0}
# MPICH's hwloc loads its PCI plugin (hwloc_pci.so, libpciaccess), whose allocations leak and
# whose code is unloaded before LeakSanitizer reports, so they cannot be suppressed by name;
# CPU runs need no PCI topology, so the plugin stays off.
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--pci}
# OpenBLAS/OpenMP thread pools under ASan are slow to start; one thread keeps tests quick.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

cd "$build"
status=0
# Tests labelled nosan run in the main pass only: their time is Python's (timm comparisons) or a
# script driving commands that other sanitized tests run (docs/testing.md).
ctest -L 'unit|mpi' -LE nosan --output-on-failure -j"$jobs" "$@" || status=$?
echo "sanitize.sh: ctest exit $status, total $(( $(date +%s) - start )) s (build + tests)"
exit $status
