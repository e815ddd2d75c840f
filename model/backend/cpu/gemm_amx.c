/* GEMM engine on Intel AMX-BF16 tiles (TDPBF16PS), for the bf16 mode of the CPU backend. The
 * contract is gemm_engine.h's; this file adds the AMX specifics.
 *
 * Tiles (palette 1, every tile 16 rows x 64 bytes): tmm0..3 = a 32 x 32 fp32 block of C
 * (2 x 2 tiles of 16 x 16), tmm4/5 = two 16-row A tiles (16 rows x 16 bf16 pairs), tmm6/7 =
 * two B tiles (16 pairs x 16 columns). One k-step = 16 pairs = 32 reduction elements:
 * 4 tile loads, 4 TDPBF16PS.
 *
 * B is packed by gemm_bf16.c's panel packer (panels of 32 columns, per pair 32 words, so a B
 * tile is 16 consecutive pair rows at a stride of 128 bytes), with the pairs of every panel
 * padded with zeros to a multiple of 16. A is packed per block of MC rows x KC pairs into 1 KiB
 * tiles (16 rows x 16 pairs, row stride 64 bytes), rows past m and pairs past the reduction
 * zero; an fp32 operand is rounded to bf16 there, a bf16 one (sv_gemm_mat.h) copied. A reduction-strided A (the dW GEMM: A = d_out^T) is transposed 16 x 16 words in
 * registers while packing.
 *
 * Blocking (one thread): A is packed per block of MC rows x KC pairs (MC x KC x 4 bytes = 128 KiB
 * of scratch, in L2); inside a block, strip by strip of 32 rows (its A tiles, 16 KiB, stay in L1),
 * every 32-column panel of B (KC x 128 bytes = 16 KiB, streamed from L2): the kernel loads the C
 * block into tmm0..3 (or zeroes them on the first reduction block without accumulate), runs the
 * k-steps, stores it back in fp32. Three loop orders (amx_run_ep):
 *  - one reduction block (the linear layers' K = 192): row blocks, C written once by the tiles;
 *  - C small and the reduction long (dW): reduction-block-outer, C stays in L2 between blocks;
 *  - otherwise, a long reduction over many rows (wide layers' forward and d_in, the 1024^3
 *    calibration): amx_run_blocked carries C in a packed buffer (rows 128 bytes apart) across
 *    the reduction blocks instead of in C itself, whose row stride can alias cache sets (1024
 *    fp32 columns = 4 KiB: all 16 rows of a tile in one set) and which may not fit in L2.
 * Partial tiles at the edges go through a 16 x 16 staging buffer on the stack.
 *
 * Numerics: every output is one fp32 accumulator (a tile element) adding k-steps of 32
 * products in reduction order; within a step the hardware adds the pairs in its fixed order.
 * Products of bf16 values are exact in fp32; inputs and outputs below FLT_MIN are flushed to
 * zero (TDPBF16PS ignores MXCSR). The order depends only on the reduction length, so the rows a
 * call covers never change a result.
 *
 * The tile state needs the kernel's permission (Linux >= 5.16: arch_prctl
 * ARCH_REQ_XCOMP_PERM for XTILEDATA), asked for by sv_gemm_amx_permission, which available()
 * calls; the permission is per process, so every worker thread may then use the tiles. Each
 * run() loads its own tile configuration (per thread state) and releases the tiles at the end,
 * so a thread that ran AMX holds no tile state between calls. */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")
#define SV_GEMM_AMX_X86 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cpu/amx_tiles.h"
#include "model/backend/cpu/gemm_bf16.h"
#include "model/backend/cpu/gemm_engine.h"
#if SV_GEMM_AMX_X86
#include "model/backend/cpu/bf16_pairs.h"
#endif

enum {
    NR = SV_GEMM_BF16_NR, /* columns per packed B panel: two B tiles */
    KS = 16,              /* pairs per k-step (one tile row of 64 bytes) */
#ifndef SV_AMX_MC
    MC = 256, /* rows per A block (multiple of 32) */
#else
    MC = SV_AMX_MC,
#endif
#ifndef SV_AMX_KC
    KC = 128, /* pairs per A block (multiple of KS) */
#else
    KC = SV_AMX_KC,
#endif
};

/* The blocked path for long reductions (amx_run_blocked): A packed for the whole reduction of
 * up to MB rows (at most A_BUDGET bytes), C accumulated in a packed buffer of MB x NB fp32
 * (whole 32 x 32 blocks, 128-byte rows) over reduction blocks of KB pairs. */
#ifndef SV_AMX_MB
#define SV_AMX_MB 256
#endif
#ifndef SV_AMX_NB
#define SV_AMX_NB 256
#endif
#ifndef SV_AMX_KB
#define SV_AMX_KB 128
#endif
enum {
    MB = SV_AMX_MB,         /* rows per block (multiple of 32) */
    NB = SV_AMX_NB,         /* columns per block (multiple of NR) */
    KB = SV_AMX_KB,         /* pairs per reduction block (multiple of KS) */
    A_BUDGET = 512 * 1024,  /* bytes of packed A per block */
    CB_BYTES = MB * NB * 4, /* the packed C block */
};

static long round_ks(long pairs) { return (pairs + KS - 1) / KS * KS; }

static size_t amx_pack_bytes(int n, int r) {
    if (n <= 0 || r <= 0) return 0;
    size_t panels = ((size_t)n + NR - 1) / NR;
    return panels * (size_t)round_ks((r + 1) / 2) * NR * sizeof(uint32_t);
}

/* B panels: the VDPBF16PS engine's packer with the pairs padded to whole k-steps. */
static void amx_pack(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    sv_gemm_bf16_pack_padded(pb, B, n, r, j0, j1, round_ks((r + 1) / 2));
}

#if SV_GEMM_AMX_X86

enum { ARCH_GET_XCOMP_PERM_ = 0x1022, ARCH_REQ_XCOMP_PERM_ = 0x1023, XFEATURE_XTILEDATA_ = 18 };

static int amx_cpu(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    int bf16 = (d >> 22) & 1, tile = (d >> 24) & 1;
    if (!bf16 || !tile) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return 0; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & (3u << 17)) == (3u << 17); /* XTILECFG + XTILEDATA enabled by the OS */
}

int sv_gemm_amx_permission(char *why, size_t n) {
    if (why && n) why[0] = '\0';
    __builtin_cpu_init();
    if (!amx_cpu()) {
        if (why) snprintf(why, n, "this CPU (or its OS) lacks AMX-BF16/AMX-TILE");
        return 0;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512bf16")) {
        if (why) snprintf(why, n, "AMX present but AVX-512 BF16 (used to pack operands) is not");
        return 0;
    }
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM_, XFEATURE_XTILEDATA_) != 0) {
        if (why)
            snprintf(why, n, "the kernel refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM: %s)",
                     strerror(errno));
        return 0;
    }
    return 1;
}

static int amx_available(void) { return sv_gemm_amx_permission(NULL, 0); }

/* Pack rows [i0, i0 + mc) x pairs [q0, q0 + nks * KS) of A into S: tile (g, s) of 16 rows x 16
 * pairs at S + (g * nks + s) * 256 words, row-major (64 bytes per row). Rows past mc and pairs
 * past the reduction r are zero. */
static void pack_a(uint32_t *S, sv_gemm_mat A, int r, int i0, int mc, long q0, long nks) {
    const int groups = (mc + 15) / 16;
    if (A.red_contig) {
        for (int g = 0; g < groups; g++) {
            const int rows = mc - 16 * g < 16 ? mc - 16 * g : 16;
            for (long s = 0; s < nks; s++) {
                uint32_t *tile = S + ((size_t)g * nks + s) * 256;
                const long p0 = q0 + s * KS; /* first pair of this tile */
                for (int i = 0; i < 16; i++)
                    _mm512_store_si512(tile + i * 16,
                                       i < rows
                                           ? pairs16_at(&A, (size_t)(i0 + 16 * g + i) * A.ld + 2 * p0, (long)r - 2 * p0)
                                           : _mm512_setzero_si512());
            }
        }
        return;
    }
    /* Reduction-strided (the dW GEMM: A = d_out^T, one reduction index per row of d_out): a
     * k-step's 32 source rows are walked left to right across all row groups, so each source
     * row is read sequentially (prefetch-friendly) while it is in L1. Pair t: reduction rows
     * 2(p0+t), 2(p0+t)+1 hold 16 A rows side by side; transposed to 16 rows of 16 pairs. */
    for (long s = 0; s < nks; s++) {
        const long p0 = q0 + s * KS;
        for (int g = 0; g < groups; g++) {
            const int rows = mc - 16 * g < 16 ? mc - 16 * g : 16;
            uint32_t *tile = S + ((size_t)g * nks + s) * 256;
            __m512i v[16];
            for (int t = 0; t < 16; t++) {
                long rr = 2 * (p0 + t);
                if (rr >= r) {
                    v[t] = _mm512_setzero_si512();
                    continue;
                }
                v[t] = pairs16_rows_at(&A, (size_t)rr * A.ld + i0 + 16 * g, rr + 1 < r, rows);
            }
            transpose16(v);
            for (int i = 0; i < 16; i++) _mm512_store_si512(tile + i * 16, v[i]);
        }
    }
}

/* Where tile (ri, ci) of the 32 x 32 C block comes from / goes to: C itself when the tile is
 * whole, else the staging buffer (16 x 16, row stride 64 bytes). */
typedef struct ctile {
    float *p;
    size_t stride;  /* bytes */
    int rows, cols; /* valid part, for staging */
} ctile;

static ctile c_tile(float *C, size_t ldc, int mr, int nr, int ri, int ci, float *stage) {
    int rows = mr - 16 * ri, cols = nr - 16 * ci;
    rows = rows > 16 ? 16 : rows, cols = cols > 16 ? 16 : cols;
    float *src = C + (size_t)16 * ri * ldc + 16 * ci;
    if (rows == 16 && cols == 16) return (ctile){src, ldc * sizeof(float), 16, 16};
    return (ctile){stage, 64, rows, cols};
}

static void stage_in_part(const ctile *t, const float *C, size_t ldc, int ri, int ci, int load) {
    const float *src = C + (size_t)16 * ri * ldc + 16 * ci;
    __mmask16 k = mask16(t->cols);
    for (int i = 0; i < 16; i++)
        _mm512_store_ps(t->p + 16 * i,
                        load && i < t->rows ? _mm512_maskz_loadu_ps(k, src + (size_t)i * ldc) : _mm512_setzero_ps());
}

static void stage_out_part(const ctile *t, float *C, size_t ldc, int ri, int ci) {
    float *dst = C + (size_t)16 * ri * ldc + 16 * ci;
    __mmask16 k = mask16(t->cols);
    for (int i = 0; i < t->rows; i++) _mm512_mask_storeu_ps(dst + (size_t)i * ldc, k, _mm512_load_ps(t->p + 16 * i));
}

/* Staging of partial tiles only; whole tiles are read and written in place (the test inlined, so
 * the kernel makes no call for them). */
static inline __attribute__((always_inline)) void stage_in(const ctile *t, const float *C, size_t ldc, int ri, int ci,
                                                           int load) {
    if (t->rows != 16 || t->cols != 16) stage_in_part(t, C, ldc, ri, ci, load);
}

static inline __attribute__((always_inline)) void stage_out(const ctile *t, float *C, size_t ldc, int ri, int ci) {
    if (t->rows != 16 || t->cols != 16) stage_out_part(t, C, ldc, ri, ci);
}

/* Where the A tiles of a block are: tile (group g of 16 rows, k-step s) starts at
 * a + g * g_words + s * s_words (32-bit words) and its rows are row_bytes apart. Packed (pack_a):
 * g_words = nks * 256, s_words = 256, row_bytes = 64. Direct (a bf16 reduction-contiguous A
 * whose rows hold whole k-steps, read in place by the tile loads): the rows of A itself. */
typedef struct atiles {
    const uint32_t *a;
    size_t g_words, s_words, row_bytes;
} atiles;

/* C block (mr <= 32 rows, nr <= 32 columns) = / += A rows (tiles at a, the second 16 rows at
 * a + a2 words, k-steps as = s_words apart, rows ab bytes apart) x the panel b (pair rows of 32
 * words), over nks k-steps. R2/C2: whether a second
 * tile row / column exists (compile-time constants after inlining, so the tile numbers are). */
static inline __attribute__((always_inline)) void kernel(long nks, const uint32_t *a, size_t a2, size_t as, size_t ab,
                                                         const uint32_t *b, float *C, size_t ldc, int mr, int nr,
                                                         int load_c, int R2, int C2) {
    float stage[4][256] __attribute__((aligned(64)));
    ctile t00 = c_tile(C, ldc, mr, nr, 0, 0, stage[0]), t01 = c_tile(C, ldc, mr, nr, 0, 1, stage[1]);
    ctile t10 = c_tile(C, ldc, mr, nr, 1, 0, stage[2]), t11 = c_tile(C, ldc, mr, nr, 1, 1, stage[3]);
    /* Staging (partial tiles only) goes through memory between vector and tile accesses, which
     * do not forward to each other: all staging copies first, then all tile accesses, so the
     * waits overlap instead of adding up. */
    if (load_c) {
        stage_in(&t00, C, ldc, 0, 0, 1);
        if (C2) stage_in(&t01, C, ldc, 0, 1, 1);
        if (R2) stage_in(&t10, C, ldc, 1, 0, 1);
        if (R2 && C2) stage_in(&t11, C, ldc, 1, 1, 1);
        _tile_loadd(0, t00.p, t00.stride);
        if (C2) _tile_loadd(1, t01.p, t01.stride);
        if (R2) _tile_loadd(2, t10.p, t10.stride);
        if (R2 && C2) _tile_loadd(3, t11.p, t11.stride);
    } else {
        _tile_zero(0);
        if (C2) _tile_zero(1);
        if (R2) _tile_zero(2);
        if (R2 && C2) _tile_zero(3);
    }
    for (long s = 0; s < nks; s++) {
        const uint32_t *bs = b + (size_t)s * KS * NR;
        _tile_loadd(4, a + (size_t)s * as, ab);
        _tile_loadd(6, bs, NR * sizeof(uint32_t));
        _tile_dpbf16ps(0, 4, 6);
        if (C2) {
            _tile_loadd(7, bs + 16, NR * sizeof(uint32_t));
            _tile_dpbf16ps(1, 4, 7);
        }
        if (R2) {
            _tile_loadd(5, a + a2 + (size_t)s * as, ab);
            _tile_dpbf16ps(2, 5, 6);
            if (C2) _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, t00.p, t00.stride);
    if (C2) _tile_stored(1, t01.p, t01.stride);
    if (R2) _tile_stored(2, t10.p, t10.stride);
    if (R2 && C2) _tile_stored(3, t11.p, t11.stride);
    stage_out(&t00, C, ldc, 0, 0);
    if (C2) stage_out(&t01, C, ldc, 0, 1);
    if (R2) stage_out(&t10, C, ldc, 1, 0);
    if (R2 && C2) stage_out(&t11, C, ldc, 1, 1);
}

/* One A block (rows [i0, i0 + mc), k-steps [q0, q0 + nks * KS) of pairs, tiles at A) times
 * every panel of the packed B: strip by strip of 32 rows, each strip's tiles (nks KiB per 16
 * rows) staying in L1 while the panels of B stream past it from L2. `ep`: this is the last
 * reduction block; each finished strip goes to the epilogue at once. */
/* One strip's kernels over every panel of B (always inlined, so that the packed layout's
 * constant strides stay constants in the tile loads). */
static inline __attribute__((always_inline)) void strip_panels(long nks, const uint32_t *a, size_t a2, size_t as,
                                                               size_t ab, const uint32_t *pb, long rpa, long q0,
                                                               float *Cr, size_t ldc, int mr, int n, int load_c) {
    const int npan = (n + NR - 1) / NR;
    for (int jp = 0; jp < npan; jp++) {
        const uint32_t *bpan = pb + ((size_t)jp * rpa + q0) * NR;
        const int nr = n - jp * NR < NR ? n - jp * NR : NR;
        float *Cb = Cr + jp * NR;
        if (mr > 16 && nr > 16)
            kernel(nks, a, a2, as, ab, bpan, Cb, ldc, mr, nr, load_c, 1, 1);
        else if (mr > 16)
            kernel(nks, a, a2, as, ab, bpan, Cb, ldc, mr, nr, load_c, 1, 0);
        else if (nr > 16)
            kernel(nks, a, a2, as, ab, bpan, Cb, ldc, mr, nr, load_c, 0, 1);
        else
            kernel(nks, a, a2, as, ab, bpan, Cb, ldc, mr, nr, load_c, 0, 0);
    }
}

static void amx_block(float *C, size_t ldc, atiles A, int i0, int mc, const uint32_t *pb, int n, long rpa, long q0,
                      long nks, int load_c, const sv_gemm_epi *ep) {
    const int packed = A.s_words == 256 && A.row_bytes == 64;
    for (int g = 0; g < mc; g += 32) {
        const int mr = mc - g < 32 ? mc - g : 32;
        const uint32_t *a = A.a + (size_t)(g / 16) * A.g_words;
        float *Cr = C + (size_t)(i0 + g) * ldc;
        if (packed)
            strip_panels(nks, a, A.g_words, 256, 64, pb, rpa, q0, Cr, ldc, mr, n, load_c);
        else
            strip_panels(nks, a, A.g_words, A.s_words, A.row_bytes, pb, rpa, q0, Cr, ldc, mr, n, load_c);
        /* the strip's 32 rows are finished and still in L1/L2: the epilogue runs on them in C */
        if (ep) ep->fn(ep, i0 + g, mr);
    }
}

/* Loop order. Every output is one tile element walking the k-steps in reduction order whatever
 * the order of the blocks, so the choice changes no bit.
 *  - C small enough to stay in L2 (the dW GEMMs: N x K outputs, a reduction of all M rows):
 *    reduction blocks outermost, so each block of the packed B is read from L2 by every row
 *    block while C stays in L2 between reduction blocks.
 *  - otherwise (the forward and d_in: many rows, short reduction): row blocks outermost, so
 *    every C block is finished (and, with an epilogue, consumed) before the next row block; the
 *    packed B (the weight, a few hundred KiB) stays in L2 across row blocks. */
#ifndef SV_AMX_C_RESIDENT
#define SV_AMX_C_RESIDENT ((size_t)1 << 20)
#endif

/* Shortest reduction whose A is read in place (measured: at K = 192 packing A first is faster,
 * at K = 768 reading it in place is). */
#ifndef SV_AMX_DIRECT_MIN
#define SV_AMX_DIRECT_MIN 512
#endif

/* The A tiles of one block: read in place where A is bf16, reduction-contiguous, with an even
 * row stride, whole k-steps (r a multiple of 32) and whole 16-row groups (mc a multiple of 16),
 * so every tile row lies inside A; else packed into S (pack_a). Same values either way. */
static atiles a_tiles(uint32_t *S, sv_gemm_mat A, int r, int i0, int mc, long q0, long nks) {
    if (A.h && A.red_contig && A.ld % 2 == 0 && r % (2 * KS) == 0 && r >= SV_AMX_DIRECT_MIN && mc % 16 == 0)
        return (atiles){(const uint32_t *)(A.h + (size_t)i0 * A.ld + 2 * (size_t)q0), 8 * A.ld, KS,
                        A.ld * sizeof(uint16_t)};
    pack_a(S, A, r, i0, mc, q0, nks);
    return (atiles){S, (size_t)nks * 256, 256, 64};
}

/* Rows of the block that A_BUDGET holds with the whole reduction packed (multiple of 32, at most
 * MB); 0 when not even 32 rows fit (the reduction is then blocked with C in place). */
static int blocked_rows(long rpa) {
    long rows = (long)A_BUDGET / (rpa * (long)sizeof(uint32_t)) / 32 * 32;
    return (int)(rows > MB ? MB : rows);
}

/* Long reductions with many rows (the forward and d_in of wide layers, the 1024^3 calibration):
 * per block of mb rows, A packed once for the whole reduction; per block of NB columns, C is
 * carried in the packed buffer CB (32 x 32 blocks of 4 KiB, rows 128 bytes apart: no cache-set
 * aliasing whatever C's row stride, and in L2 together with the B slab) across reduction blocks
 * of KB pairs, each strip's A tiles in L1 while the panels of the slab pass; the finished block
 * is copied out to C (masked at the edges) and the block's rows go to the epilogue. Same
 * k-steps in the same order per output as the other paths (C carried exactly in fp32): the same
 * bits. */
static void amx_run_blocked(float *C, size_t ldc, sv_gemm_mat A, int m, const uint32_t *pb, int n, int r,
                            int accumulate, uint32_t *S, float *CB, int mb, const sv_gemm_epi *ep) {
    const long rp = (r + 1) / 2, rpa = round_ks(rp), nks_all = rpa / KS;
    for (int i0 = 0; i0 < m; i0 += mb) {
        const int mc = m - i0 < mb ? m - i0 : mb;
        const atiles at = a_tiles(S, A, r, i0, mc, 0, nks_all);
        const int packed = at.s_words == 256 && at.row_bytes == 64;
        for (int j0 = 0; j0 < n; j0 += NB) {
            const int nc = n - j0 < NB ? n - j0 : NB, npan = (nc + NR - 1) / NR;
            /* CB block (strip g, panel p) at CB + (g / 32 * npan + p) * 1024 */
            if (accumulate)
                for (int i = 0; i < mc; i++)
                    for (int p = 0; p < npan; p++) {
                        float *d = CB + ((size_t)(i / 32) * npan + p) * 1024 + (i % 32) * 32;
                        const float *src = C + (size_t)(i0 + i) * ldc + j0 + p * NR;
                        const int cols = nc - p * NR;
                        _mm512_store_ps(d, _mm512_maskz_loadu_ps(mask16(cols), src));
                        _mm512_store_ps(d + 16, _mm512_maskz_loadu_ps(mask16(cols - 16), src + 16));
                    }
            for (long q0 = 0; q0 < rp; q0 += KB) {
                const long nks = round_ks(rp - q0 < KB ? rp - q0 : KB) / KS;
                const int load_c = accumulate || q0 > 0;
                for (int g = 0; g < mc; g += 32) {
                    const int mr = mc - g < 32 ? mc - g : 32;
                    const uint32_t *a = at.a + (size_t)(g / 16) * at.g_words + (size_t)(q0 / KS) * at.s_words;
                    float *cb = CB + (size_t)(g / 32) * npan * 1024;
                    for (int p = 0; p < npan; p++) {
                        const uint32_t *bpan = pb + ((size_t)(j0 / NR + p) * rpa + q0) * NR;
                        /* a 32 x 32 block of the buffer: whole tiles, rows 128 bytes apart */
                        float *c = cb + p * 1024;
                        if (packed && mr > 16)
                            kernel(nks, a, at.g_words, 256, 64, bpan, c, 32, 32, 32, load_c, 1, 1);
                        else if (packed)
                            kernel(nks, a, at.g_words, 256, 64, bpan, c, 32, 16, 32, load_c, 0, 1);
                        else /* direct A: whole 16-row groups */
                            kernel(nks, a, at.g_words, at.s_words, at.row_bytes, bpan, c, 32, mr > 16 ? 32 : 16, 32,
                                   load_c, mr > 16, 1);
                    }
                }
            }
            for (int i = 0; i < mc; i++)
                for (int p = 0; p < npan; p++) {
                    const float *src = CB + ((size_t)(i / 32) * npan + p) * 1024 + (i % 32) * 32;
                    float *d = C + (size_t)(i0 + i) * ldc + j0 + p * NR;
                    const int cols = nc - p * NR;
                    _mm512_mask_storeu_ps(d, mask16(cols), _mm512_load_ps(src));
                    _mm512_mask_storeu_ps(d + 16, mask16(cols - 16), _mm512_load_ps(src + 16));
                }
        }
        if (ep) ep->fn(ep, i0, mc);
    }
}

static void amx_run_ep(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb_, int n, int r, int accumulate,
                       void *scratch, const sv_gemm_epi *ep) {
    const uint32_t *pb = pb_;
    uint32_t *S = scratch;
    if (m <= 0 || n <= 0) return;
    if (sv_gemm_run_trivial(C, ldc, m, n, r, accumulate)) { /* r <= 0: C zeroed or kept, final */
        if (ep) ep->fn(ep, 0, m);
        return;
    }
    _Alignas(64) sv_amx_tilecfg cfg;
    sv_amx_tilecfg_16x64(&cfg);
    _tile_loadconfig(&cfg);
    const long rp = (r + 1) / 2, rpa = round_ks(rp);
    const int c_resident = rp > KC && (size_t)m * (size_t)n * sizeof(float) <= SV_AMX_C_RESIDENT;
    const int mb = blocked_rows(rpa);
    if (!c_resident && A.red_contig && rp > KB && mb >= 32) {
        amx_run_blocked(C, ldc, A, m, pb, n, r, accumulate, S, (float *)(S + A_BUDGET / sizeof(uint32_t)), mb, ep);
    } else if (c_resident) {
        for (long q0 = 0; q0 < rp; q0 += KC) {
            const long nks = round_ks(rp - q0 < KC ? rp - q0 : KC) / KS;
            const int last = q0 + KC >= rp;
            for (int i0 = 0; i0 < m; i0 += MC) {
                const int mc = m - i0 < MC ? m - i0 : MC;
                const atiles at = a_tiles(S, A, r, i0, mc, q0, nks);
                amx_block(C, ldc, at, i0, mc, pb, n, rpa, q0, nks, accumulate || q0 > 0, last ? ep : NULL);
            }
        }
    } else {
        for (int i0 = 0; i0 < m; i0 += MC) {
            const int mc = m - i0 < MC ? m - i0 : MC;
            for (long q0 = 0; q0 < rp; q0 += KC) {
                const long nks = round_ks(rp - q0 < KC ? rp - q0 : KC) / KS;
                const int last = q0 + KC >= rp;
                const atiles at = a_tiles(S, A, r, i0, mc, q0, nks);
                amx_block(C, ldc, at, i0, mc, pb, n, rpa, q0, nks, accumulate || q0 > 0, last ? ep : NULL);
            }
        }
    }
    _tile_release();
}

static void amx_run(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                    void *scratch) {
    amx_run_ep(C, ldc, A, m, pb, n, r, accumulate, scratch, NULL);
}

#else /* not x86-64 GCC: never available */

int sv_gemm_amx_permission(char *why, size_t n) {
    if (why) snprintf(why, n, "AMX needs an x86-64 build");
    return 0;
}
static int amx_available(void) { return 0; }
static void amx_run(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                    void *scratch) {
    (void)C, (void)ldc, (void)A, (void)m, (void)pb, (void)n, (void)r, (void)accumulate, (void)scratch;
}
static void amx_run_ep(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                       void *scratch, const sv_gemm_epi *ep) {
    (void)ep;
    amx_run(C, ldc, A, m, pb, n, r, accumulate, scratch);
}

#endif

const sv_gemm_engine sv_gemm_engine_amx_bf16 = {
    .name = "amx-bf16",
    .bf16 = 1,
    .nr = NR,
    .red_block = 2 * KS, /* chunks of whole k-steps: the same k-steps, C carried exactly in fp32 */
    .available = amx_available,
    .pack_bytes = amx_pack_bytes,
    .scratch_bytes = (size_t)A_BUDGET + CB_BYTES, /* >= MC x KC words for the other paths */
    .pack = amx_pack,
    .run = amx_run,
    .run_ep = amx_run_ep,
};
