/* Minimal always-on test assertions for shardvit's C tests. A failed CHECK prints the location
 * and exits 1; exit 77 means "skipped" (ctest SKIP_RETURN_CODE). */
#ifndef SV_TESTS_CHECK_H
#define SV_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"

#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            exit(1); \
        } \
    } while (0)

#define CHECK_OK(expr) \
    do { \
        sv_status check_s_ = (expr); \
        if (check_s_ != SV_OK) { \
            fprintf(stderr, "CHECK_OK failed: %s -> %s: %s [%s] (%s:%d)\n", #expr, sv_status_str(check_s_), \
                    sv_err_msg(), sv_err_trace(), __FILE__, __LINE__); \
            exit(1); \
        } \
    } while (0)

#define CHECK_CLOSE(a, b, tol) \
    do { \
        double check_a_ = (a), check_b_ = (b); \
        if (!(fabs(check_a_ - check_b_) <= (tol))) { \
            fprintf(stderr, "CHECK_CLOSE failed: %s=%.9g vs %s=%.9g (tol %g) (%s:%d)\n", #a, check_a_, #b, check_b_, \
                    (double)(tol), __FILE__, __LINE__); \
            exit(1); \
        } \
    } while (0)

#define SKIP(...) \
    do { \
        fprintf(stderr, "SKIP: " __VA_ARGS__); \
        fprintf(stderr, "\n"); \
        exit(77); \
    } while (0)

/* A test's own reference code (an oracle kept verbatim, a double-precision reference) compiled
 * without the sanitizers' instrumentation in the sanitizer build: the code under test stays
 * instrumented, and the oracle, which often does most of a test's arithmetic, runs at its normal
 * speed there (scripts/sanitize.sh's pass has a time budget). What is given up: the oracle's own
 * undefined behaviour or out-of-bounds accesses are no longer reported (a wrong oracle still
 * shows as a mismatch). Elsewhere it is nothing. */
#if defined(__SANITIZE_ADDRESS__) || defined(SV_SANITIZE)
#define SV_TEST_ORACLE __attribute__((no_sanitize("address", "undefined")))
#else
#define SV_TEST_ORACLE
#endif

#endif
