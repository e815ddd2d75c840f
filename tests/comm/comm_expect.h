/* Test helpers for sv_comm: deterministic per-(rank, index) inputs for every dtype and the
 * locally computed result of each collective, so every rank can check its output without
 * trusting any other rank's data. Integer-valued inputs keep fp sums exact in any order. */
#ifndef SV_TESTS_COMM_EXPECT_H
#define SV_TESTS_COMM_EXPECT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/elementwise.h"
#include "fsdp/comm.h"

static const sv_comm_dtype kAllDtypes[] = {SV_COMM_F32, SV_COMM_BF16, SV_COMM_F64, SV_COMM_I64, SV_COMM_U8};
static const sv_comm_op kAllOps[] = {SV_COMM_SUM, SV_COMM_MAX, SV_COMM_MIN};

/* Input element i of rank r, written into p (element size of dt). */
static inline void gen_elem(sv_comm_dtype dt, int r, size_t i, void *p) {
    int64_t k = (int64_t)(i % 1000003);
    switch (dt) {
    case SV_COMM_F32: *(float *)p = (float)(((k * 7 + r * 13) % 201) - 100); break;
    case SV_COMM_F64: *(double *)p = (double)(((k * 11 + r * 5) % 2001) - 1000) + 0.5; break;
    /* |x| <= 30 integers: partial sums of up to 8 ranks are exact in bf16's 8-bit significand */
    case SV_COMM_BF16: *(uint16_t *)p = sv_f32_to_bf16((float)(((k * 5 + r * 3) % 61) - 30)); break;
    /* beyond 2^53, so a detour through double would show */
    case SV_COMM_I64:
        *(int64_t *)p = (int64_t)i * 1000003 + ((int64_t)(r + 1) << 54) - (r % 2) * ((int64_t)1 << 56);
        break;
    case SV_COMM_U8: *(uint8_t *)p = (uint8_t)((i * 31 + (size_t)r * 97 + 200) & 255); break;
    }
}

/* acc = op(acc, x) for one element, with the dtype's own arithmetic (u8 sums wrap). */
static inline void combine(sv_comm_dtype dt, sv_comm_op op, void *acc, const void *x) {
    switch (dt) {
    case SV_COMM_F32: {
        float a = *(float *)acc, b = *(const float *)x;
        *(float *)acc = op == SV_COMM_SUM ? a + b : op == SV_COMM_MAX ? (a > b ? a : b) : (a < b ? a : b);
        break;
    }
    case SV_COMM_F64: {
        double a = *(double *)acc, b = *(const double *)x;
        *(double *)acc = op == SV_COMM_SUM ? a + b : op == SV_COMM_MAX ? (a > b ? a : b) : (a < b ? a : b);
        break;
    }
    case SV_COMM_BF16: {
        float a = sv_bf16_to_f32(*(uint16_t *)acc), b = sv_bf16_to_f32(*(const uint16_t *)x);
        float r = op == SV_COMM_SUM ? a + b : op == SV_COMM_MAX ? (a > b ? a : b) : (a < b ? a : b);
        *(uint16_t *)acc = sv_f32_to_bf16(r);
        break;
    }
    case SV_COMM_I64: {
        int64_t a = *(int64_t *)acc, b = *(const int64_t *)x;
        *(int64_t *)acc = op == SV_COMM_SUM ? a + b : op == SV_COMM_MAX ? (a > b ? a : b) : (a < b ? a : b);
        break;
    }
    case SV_COMM_U8: {
        uint8_t a = *(uint8_t *)acc, b = *(const uint8_t *)x;
        *(uint8_t *)acc = op == SV_COMM_SUM ? (uint8_t)(a + b) : op == SV_COMM_MAX ? (a > b ? a : b) : (a < b ? a : b);
        break;
    }
    }
}

/* Reduction over ranks 0..size-1 of element i. */
static inline void expect_reduced(sv_comm_dtype dt, sv_comm_op op, int size, size_t i, void *out) {
    uint8_t x[8];
    gen_elem(dt, 0, i, out);
    for (int r = 1; r < size; r++) {
        gen_elem(dt, r, i, x);
        combine(dt, op, out, x);
    }
}

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL);
    return p;
}

/* Compare n elements at `got` against `want`; report the first mismatch with context. */
static inline int same_elems(const char *what, sv_comm_dtype dt, const void *got, const void *want, size_t n) {
    size_t es = sv_comm_dtype_size(dt);
    if (memcmp(got, want, n * es) == 0) return 1;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
            fprintf(stderr, "%s: first mismatch at element %zu of %zu (dtype size %zu)\n", what, i, n, es);
            break;
        }
    return 0;
}

#endif
