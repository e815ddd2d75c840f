/* fp32 GEMM engines on AVX-512F and on AVX2, both with FMA (the contract is gemm_engine.h's).
 *
 * Packed B: panels of NR columns (32 for AVX-512, 16 for AVX2); panel p holds, for every
 * reduction index k = 0 .. r-1, the NR values B(k, p*NR + j) contiguously (columns past n are
 * zero), i.e. r * NR floats per panel. A reduction-contiguous B (the forward W) is transposed
 * 16 x 16 (8 x 8) in registers; a reduction-strided B is a row copy.
 *
 * Blocking (one thread), the same for both instruction sets:
 *   for each block of MC rows of C
 *     for each block of at most KC reduction indices (equal lengths)   A block -> scratch (L2)
 *       for each MR x NR tile of the block: microkernel, the tile in registers
 * The A block is stored per MR-row group k-major (the MR values of index k contiguous), so the
 * microkernel broadcasts A from memory; a reduction-contiguous A is transposed in registers
 * while packing, a reduction-strided A (the dW GEMM) is a copy. Tile order: when the B block
 * (KC x n) fits in L2, one row group after the other, each along its row of C (its A sliver
 * stays in L1, C is stored sequentially); else one B micro-panel after the other, each serving
 * all row groups. The driver prefetches the next tile's C and, spread over the tiles, the next
 * A block's source; the microkernel prefetches A and B a few reduction steps ahead.
 *
 * Numerics: the microkernel loads the C tile (zeros on the first reduction block without
 * accumulate), applies c = fma(a_k, b_k, c) for k in index order and stores the tile back in
 * fp32, so every output is one fp32 accumulator walking the reduction in order, whatever the
 * blocking, the rows a call covers or the reduction chunks a caller makes: red_block is 1
 * (nothing is padded along the reduction). Rows past m in the last A group are packed as zeros
 * and not computed (the microkernel is instantiated per row count); columns past n are masked
 * on load and store, and a panel with at most 16 of them computes only the first 16.
 *
 * The blocking driver is plain C shared by both engines; it calls the per-instruction-set
 * packers and microkernel (compiled for their targets) through a small table, so nothing of
 * an instruction set runs unless its engine's available() said so. */
#include "model/backend/cpu/gemm_f32.h"

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define SV_GEMM_F32_X86 1
#include <immintrin.h>
#endif

/* Tunables (-D overrides, for measurements only). MC must be a multiple of MR. */
#ifndef SV_F32_KC512
#define SV_F32_KC512 1024 /* reduction block: C is loaded and stored once per 1024 FMAs */
#endif
#ifndef SV_F32_MC512
/* A block 192 x 1024 floats = 768 KiB (L2 per core: 1 MiB on AMD Zen 4 / Zen 5, 2 MiB on the Intel Xeon) */
#define SV_F32_MC512 192
#endif
#ifndef SV_F32_B_L2_BYTES
#define SV_F32_B_L2_BYTES ((size_t)1 << 20) /* B blocks up to this size are walked row group first */
#endif
enum {
    MR512 = 12, /* AVX-512: 12 x 32 tile = 24 zmm accumulators */
    NR512 = 32,
    KC512 = SV_F32_KC512,
    MC512 = SV_F32_MC512,
    MR256 = 6, /* AVX2: 6 x 16 tile = 12 ymm accumulators */
    NR256 = 16,
    KC256 = 512,
    MC256 = 144,
    PD = 8, /* software prefetch distance of the microkernels, in reduction steps */
};

/* One instruction set: tile and block sizes, packers and microkernel. */
typedef struct f32_isa {
    int mr, nr, kc, mc;
    /* rows [i0, i0 + mc) x reduction [k0, k0 + kq) of A -> S, per MR-row group g at S + g*kq */
    void (*pack_a)(float *S, sv_gemm_mat A, size_t i0, int mc, size_t k0, int kq);
    /* columns [jb, jb + nj) (nj <= nr) of B, whole reduction -> one panel of r * nr floats */
    void (*pack_b)(float *dst, sv_gemm_mat B, size_t jb, int nj, int r);
    /* C[i][j] (i < mr, j < nr) = or += per load_c, over kq indices of packed a and b */
    void (*kernel)(int kq, const float *a, const float *b, float *C, size_t ldc, int mr, int nr, int load_c);
    /* The same for a full group of mr rows of A read in place (NULL: always pack A): a points
     * at A(row 0, index 0) of the tile; A(i, t) at a[i * lda + t] (red_contig) or
     * a[t * lda + i] (reduction-strided). */
    void (*kernel_direct)(int kq, const float *a, size_t lda, int red_contig, const float *b, float *C, size_t ldc,
                          int nr, int load_c);
} f32_isa;

/* A read in place instead of packed (measurements only: SV_F32_DIRECT_A=0 packs every A). */
#ifndef SV_F32_DIRECT_A
#define SV_F32_DIRECT_A 1
#endif

static size_t pack_bytes_nr(int n, int r, int nr) {
    if (n <= 0 || r <= 0) return 0;
    return ((size_t)n + nr - 1) / nr * (size_t)r * nr * sizeof(float);
}

static void pack_common(const f32_isa *I, float *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    if (n <= 0 || r <= 0) return;
    if (j1 > n) j1 = n;
    for (int jp = j0 / I->nr; jp * I->nr < j1; jp++) {
        int jb = jp * I->nr, nj = n - jb < I->nr ? n - jb : I->nr;
        I->pack_b(pb + (size_t)jp * r * I->nr, B, (size_t)jb, nj, r);
    }
}

/* Prefetch part `part` of `parts` of the source of A block rows [i0, i0 + mc) x reduction
 * [k0, k0 + kq) towards L2, so that reading the next block overlaps the current one's compute. */
static void prefetch_a(sv_gemm_mat A, int i0, int mc, int k0, int kq, int part, int parts) {
    const int lines = A.red_contig ? mc : kq, len = A.red_contig ? kq : mc; /* source rows, floats */
    int l0 = (int)((long)lines * part / parts), l1 = (int)((long)lines * (part + 1) / parts);
    for (int l = l0; l < l1; l++) {
        const float *p = A.red_contig ? A.p + (size_t)(i0 + l) * A.ld + k0 : A.p + (size_t)(k0 + l) * A.ld + i0;
        for (int q = 0; q < len; q += 16) __builtin_prefetch(p + q, 0, 2);
        __builtin_prefetch(p + len - 1, 0, 2);
    }
}

/* Prefetch rows [0, rows) x columns [0, cols) of a C tile (row stride ldc) into L1. */
static void prefetch_c(const float *C, size_t ldc, int rows, int cols) {
    for (int i = 0; i < rows; i++) {
        for (int q = 0; q < cols; q += 16) __builtin_prefetch(C + (size_t)i * ldc + q, 1, 3);
        __builtin_prefetch(C + (size_t)i * ldc + cols - 1, 1, 3);
    }
}

static void run_common(const f32_isa *I, float *C, size_t ldc, sv_gemm_mat A, int m, const float *pb, int n, int r,
                       int accumulate, float *S) {
    if (sv_gemm_run_trivial(C, ldc, m, n, r, accumulate)) return;
    const int MR = I->mr, NR = I->nr, npan = (n + NR - 1) / NR;
    /* reduction blocks of equal length (at most kc): no short last block */
    const int nkb = (r + I->kc - 1) / I->kc, kc = (r + nkb - 1) / nkb;
    for (int i0 = 0; i0 < m; i0 += I->mc) {
        const int mc = m - i0 < I->mc ? m - i0 : I->mc, groups = (mc + MR - 1) / MR;
        for (int k0 = 0; k0 < r; k0 += kc) {
            const int kq = r - k0 < kc ? r - k0 : kc, load_c = accumulate || k0 > 0;
            /* Full row groups read A in place where the ISA can; the partial last group (if
             * any) is packed at S. Not when A's stride is a multiple of 4 KiB: a
             * reduction-contiguous A's MR rows, or a reduction-strided A's consecutive
             * reduction steps, would share one L1 set (1024^3 fwd: 104 vs 111 GFLOP/s packed
             * on Zen 4; dW: 77% vs 89% of the FMA peak packed on Zen 5). */
            const int direct = SV_F32_DIRECT_A && I->kernel_direct != NULL && A.ld % 1024 != 0;
            const int full = direct ? mc / MR * MR : 0;
            if (full < mc) I->pack_a(S, A, (size_t)(i0 + full), mc - full, (size_t)k0, kq);
            /* the next A block, prefetched a part per microkernel call */
            const int ni0 = k0 + kc < r ? i0 : i0 + I->mc, nk0 = k0 + kc < r ? k0 + kc : 0;
            const int nmc = m - ni0 < I->mc ? m - ni0 : I->mc, nkq = r - nk0 < kc ? r - nk0 : kc;
            /* Order of the tiles. When the B block (kq x n) fits in L2, each row group walks
             * along its rows of C (the A sliver stays in L1, the stores are sequential); else
             * each B micro-panel serves all row groups while it is in L1/L2. */
            const int rows_first = (size_t)kq * npan * NR * sizeof(float) <= SV_F32_B_L2_BYTES;
            const int outer = rows_first ? groups : npan, inner = rows_first ? npan : groups;
            for (int o = 0, call = 0; o < outer; o++)
                for (int q = 0; q < inner; q++, call++) {
                    const int g = (rows_first ? o : q) * MR, jp = rows_first ? q : o;
                    const int mr = mc - g < MR ? mc - g : MR, nr = n - jp * NR < NR ? n - jp * NR : NR;
                    float *Ct = C + (size_t)(i0 + g) * ldc + (size_t)jp * NR;
                    /* the next tile's C */
                    int q1 = q + 1 < inner ? q + 1 : 0, o1 = q + 1 < inner ? o : o + 1;
                    if (o1 < outer) {
                        int g1 = (rows_first ? o1 : q1) * MR, jp1 = rows_first ? q1 : o1;
                        prefetch_c(C + (size_t)(i0 + g1) * ldc + (size_t)jp1 * NR, ldc, mc - g1 < MR ? mc - g1 : MR,
                                   n - jp1 * NR < NR ? n - jp1 * NR : NR);
                    }
                    if (ni0 < m) prefetch_a(A, ni0, nmc, nk0, nkq, call, outer * inner);
                    const float *bt = pb + ((size_t)jp * r + k0) * NR;
                    if (g < full) {
                        const float *a =
                            A.red_contig ? A.p + (size_t)(i0 + g) * A.ld + k0 : A.p + (size_t)k0 * A.ld + (i0 + g);
                        I->kernel_direct(kq, a, A.ld, A.red_contig, bt, Ct, ldc, nr, load_c);
                    } else
                        I->kernel(kq, S + (size_t)(g - full) * kq, bt, Ct, ldc, mr, nr, load_c);
                }
        }
    }
}

#if SV_GEMM_F32_X86

/* ---- AVX-512F ------------------------------------------------------------------------------ */
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma")
#endif

static inline __mmask16 mask16(long cnt) {
    return cnt >= 16 ? (__mmask16)0xFFFF : cnt <= 0 ? (__mmask16)0 : (__mmask16)((1u << cnt) - 1u);
}

/* In-register transpose: v[i] lane j -> v[j] lane i. */
static inline void tr16(__m512 v[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        v[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        v[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        v[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        v[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; i++) {
            t[h + i] = _mm512_shuffle_f32x4(v[h + i], v[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_f32x4(v[h + i], v[h + i + 4], 0xDD);
        }
    for (int i = 0; i < 8; i++) {
        v[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        v[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
}

/* Rows [0, rows) of a 16 x 16 block (row stride ld, `cnt` valid columns) into v (rest zero),
 * transposed. */
static inline void load_tr16(__m512 v[16], const float *p, size_t ld, int rows, int cnt) {
    __mmask16 k = mask16(cnt);
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) v[i] = i < rows ? _mm512_maskz_loadu_ps(k, p + i * ld) : _mm512_setzero_ps();
    tr16(v);
}

static void pack_a_512(float *S, sv_gemm_mat A, size_t i0, int mc, size_t k0, int kq) {
    const __mmask16 km = mask16(MR512);
    if (A.red_contig) {
        for (int g = 0; g < mc; g += MR512) {
            float *d = S + (size_t)g * kq;
            const float *src = A.p + (i0 + g) * A.ld + k0;
            int rows = mc - g < MR512 ? mc - g : MR512;
            for (int k = 0; k < kq; k += 16) {
                __m512 v[16];
                int cnt = kq - k < 16 ? kq - k : 16;
                load_tr16(v, src + k, A.ld, rows, cnt);
                for (int t = 0; t < cnt; t++) _mm512_mask_storeu_ps(d + (size_t)(k + t) * MR512, km, v[t]);
            }
        }
    } else {
        for (int k = 0; k < kq; k++) {
            const float *src = A.p + (k0 + k) * A.ld + i0;
            for (int g = 0; g < mc; g += MR512)
                _mm512_mask_storeu_ps(S + (size_t)g * kq + (size_t)k * MR512, km,
                                      _mm512_maskz_loadu_ps(mask16(mc - g < MR512 ? mc - g : MR512), src + g));
        }
    }
}

static void pack_b_512(float *dst, sv_gemm_mat B, size_t jb, int nj, int r) {
    if (B.red_contig) {
        for (int h = 0; h < NR512; h += 16) {
            int cols = nj - h;
            for (int k = 0; k < r; k += 16) {
                __m512 v[16];
                int cnt = r - k < 16 ? r - k : 16;
                if (cols > 0)
                    load_tr16(v, B.p + (jb + h) * B.ld + k, B.ld, cols, cnt);
                else
                    for (int t = 0; t < 16; t++) v[t] = _mm512_setzero_ps();
                for (int t = 0; t < cnt; t++) _mm512_storeu_ps(dst + (size_t)(k + t) * NR512 + h, v[t]);
            }
        }
    } else {
        const __mmask16 k0 = mask16(nj), k1 = mask16(nj - 16);
        for (int k = 0; k < r; k++) {
            const float *src = B.p + (size_t)k * B.ld + jb;
            _mm512_storeu_ps(dst + (size_t)k * NR512, _mm512_maskz_loadu_ps(k0, src));
            _mm512_storeu_ps(dst + (size_t)k * NR512 + 16, _mm512_maskz_loadu_ps(k1, src + 16));
        }
    }
}

/* The AVX-512 microkernel body: C[i][j] (i < mr, j < nr) = or += per load_c, over kq reduction
 * steps, A(i, t) at a[i * si + t * st], B's step t at b + t * NR512; pf_a: A's one stream
 * (si = 1) fetched a few steps ahead. Inlined with constants into each layout; `mr` is a
 * constant too and `half` (nr <= 16) drops the second 16 columns, so a partial tile computes
 * only its own rows and (to the nearest 16) columns: the ragged edges of the attention GEMMs
 * (T = 197: 12 x 5 rows, 5 columns) cost their size, not a full 12 x 32 tile. The outputs
 * computed are the same FMA chains either way. */
static inline __attribute__((always_inline)) void kernel_512_body(int kq, const float *a, size_t si, size_t st,
                                                                  int pf_a, const float *b, float *C, size_t ldc,
                                                                  int mr, int half, int nr, int load_c) {
    __m512 c0[MR512], c1[MR512];
    const __mmask16 k0 = mask16(nr), k1 = mask16(nr - 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR512; i++) {
        c0[i] = load_c && i < mr ? _mm512_maskz_loadu_ps(k0, C + i * ldc) : _mm512_setzero_ps();
        c1[i] = load_c && i < mr && !half ? _mm512_maskz_loadu_ps(k1, C + i * ldc + 16) : _mm512_setzero_ps();
    }
    for (int t = 0; t < kq; t++) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = half ? b0 : _mm512_loadu_ps(b + 16);
        _mm_prefetch((const char *)(b + PD * NR512), _MM_HINT_T0);
        if (!half) _mm_prefetch((const char *)(b + PD * NR512 + 16), _MM_HINT_T0);
        if (pf_a) _mm_prefetch((const char *)(a + (size_t)(t + PD) * st), _MM_HINT_T0);
#pragma GCC unroll 16
        for (int i = 0; i < MR512; i++) {
            if (i < mr) {
                __m512 av = _mm512_set1_ps(a[i * si + (size_t)t * st]);
                c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
                if (!half) c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
            }
        }
        b += NR512;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR512; i++) {
        if (i < mr) {
            _mm512_mask_storeu_ps(C + i * ldc, k0, c0[i]);
            if (!half) _mm512_mask_storeu_ps(C + i * ldc + 16, k1, c1[i]);
        }
    }
}

/* packed A (the partial last row group), with the tile's rows and half-ness as constants */
#define SV_K512_PACKED(R, H) kernel_512_body(kq, a, 1, MR512, 1, b, C, ldc, R, H, nr, load_c)
#define SV_K512_ROWS(H) \
    switch (mr) { \
    case 1: SV_K512_PACKED(1, H); break; \
    case 2: SV_K512_PACKED(2, H); break; \
    case 3: SV_K512_PACKED(3, H); break; \
    case 4: SV_K512_PACKED(4, H); break; \
    case 5: SV_K512_PACKED(5, H); break; \
    case 6: SV_K512_PACKED(6, H); break; \
    case 7: SV_K512_PACKED(7, H); break; \
    case 8: SV_K512_PACKED(8, H); break; \
    case 9: SV_K512_PACKED(9, H); break; \
    case 10: SV_K512_PACKED(10, H); break; \
    case 11: SV_K512_PACKED(11, H); break; \
    default: SV_K512_PACKED(MR512, H); break; \
    }

static void kernel_512(int kq, const float *a, const float *b, float *C, size_t ldc, int mr, int nr, int load_c) {
    if (nr <= 16) {
        SV_K512_ROWS(1)
    } else {
        SV_K512_ROWS(0)
    }
}
#undef SV_K512_ROWS
#undef SV_K512_PACKED

static void kernel_512_direct(int kq, const float *a, size_t lda, int red_contig, const float *b, float *C, size_t ldc,
                              int nr, int load_c) {
    const int half = nr <= 16;
    if (red_contig && half)
        kernel_512_body(kq, a, lda, 1, 0, b, C, ldc, MR512, 1, nr, load_c);
    else if (red_contig)
        kernel_512_body(kq, a, lda, 1, 0, b, C, ldc, MR512, 0, nr, load_c);
    else if (half)
        kernel_512_body(kq, a, 1, lda, 1, b, C, ldc, MR512, 1, nr, load_c);
    else
        kernel_512_body(kq, a, 1, lda, 1, b, C, ldc, MR512, 0, nr, load_c);
}

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* ---- AVX2 + FMA ---------------------------------------------------------------------------- */
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

/* Lanes [0, cnt) set, as the mask operand of VMASKMOVPS. */
static inline __m256i mask8(long cnt) {
    int c = cnt < 0 ? 0 : cnt > 8 ? 8 : (int)cnt;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline void tr8(__m256 v[8]) {
    __m256 t[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        v[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        v[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        v[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        v[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++) v[i] = t[i];
}

static inline void load_tr8(__m256 v[8], const float *p, size_t ld, int rows, int cnt) {
    __m256i k = mask8(cnt);
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) v[i] = i < rows ? _mm256_maskload_ps(p + i * ld, k) : _mm256_setzero_ps();
    tr8(v);
}

static void pack_a_256(float *S, sv_gemm_mat A, size_t i0, int mc, size_t k0, int kq) {
    const __m256i km = mask8(MR256);
    if (A.red_contig) {
        for (int g = 0; g < mc; g += MR256) {
            float *d = S + (size_t)g * kq;
            const float *src = A.p + (i0 + g) * A.ld + k0;
            int rows = mc - g < MR256 ? mc - g : MR256;
            for (int k = 0; k < kq; k += 8) {
                __m256 v[8];
                int cnt = kq - k < 8 ? kq - k : 8;
                load_tr8(v, src + k, A.ld, rows, cnt);
                for (int t = 0; t < cnt; t++) _mm256_maskstore_ps(d + (size_t)(k + t) * MR256, km, v[t]);
            }
        }
    } else {
        for (int k = 0; k < kq; k++) {
            const float *src = A.p + (k0 + k) * A.ld + i0;
            for (int g = 0; g < mc; g += MR256)
                _mm256_maskstore_ps(S + (size_t)g * kq + (size_t)k * MR256, km,
                                    _mm256_maskload_ps(src + g, mask8(mc - g < MR256 ? mc - g : MR256)));
        }
    }
}

static void pack_b_256(float *dst, sv_gemm_mat B, size_t jb, int nj, int r) {
    if (B.red_contig) {
        for (int h = 0; h < NR256; h += 8) {
            int cols = nj - h;
            for (int k = 0; k < r; k += 8) {
                __m256 v[8];
                int cnt = r - k < 8 ? r - k : 8;
                if (cols > 0)
                    load_tr8(v, B.p + (jb + h) * B.ld + k, B.ld, cols, cnt);
                else
                    for (int t = 0; t < 8; t++) v[t] = _mm256_setzero_ps();
                for (int t = 0; t < cnt; t++) _mm256_storeu_ps(dst + (size_t)(k + t) * NR256 + h, v[t]);
            }
        }
    } else {
        const __m256i k0 = mask8(nj), k1 = mask8(nj - 8);
        for (int k = 0; k < r; k++) {
            const float *src = B.p + (size_t)k * B.ld + jb;
            _mm256_storeu_ps(dst + (size_t)k * NR256, _mm256_maskload_ps(src, k0));
            _mm256_storeu_ps(dst + (size_t)k * NR256 + 8, _mm256_maskload_ps(src + 8, k1));
        }
    }
}

static void kernel_256(int kq, const float *a, const float *b, float *C, size_t ldc, int mr, int nr, int load_c) {
    __m256 c0[MR256], c1[MR256];
    const __m256i k0 = mask8(nr), k1 = mask8(nr - 8);
#pragma GCC unroll 8
    for (int i = 0; i < MR256; i++) {
        if (load_c && i < mr) {
            c0[i] = _mm256_maskload_ps(C + i * ldc, k0);
            c1[i] = _mm256_maskload_ps(C + i * ldc + 8, k1);
        } else {
            c0[i] = _mm256_setzero_ps();
            c1[i] = _mm256_setzero_ps();
        }
    }
    for (int t = 0; t < kq; t++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        _mm_prefetch((const char *)(b + PD * NR256), _MM_HINT_T0);
        _mm_prefetch((const char *)(a + PD * MR256), _MM_HINT_T0);
#pragma GCC unroll 8
        for (int i = 0; i < MR256; i++) {
            __m256 av = _mm256_broadcast_ss(a + i);
            c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
        }
        a += MR256;
        b += NR256;
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR256; i++) {
        if (i < mr) {
            _mm256_maskstore_ps(C + i * ldc, k0, c0[i]);
            _mm256_maskstore_ps(C + i * ldc + 8, k1, c1[i]);
        }
    }
}

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

static int avx512_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}
static int avx2_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static const f32_isa k_isa512 = {MR512, NR512, KC512, MC512, pack_a_512, pack_b_512, kernel_512, kernel_512_direct};
static const f32_isa k_isa256 = {MR256, NR256, KC256, MC256, pack_a_256, pack_b_256, kernel_256, NULL};

static void pack512(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    pack_common(&k_isa512, pb, B, n, r, j0, j1);
}
static void run512(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                   void *scratch) {
    run_common(&k_isa512, C, ldc, A, m, pb, n, r, accumulate, scratch);
}
static void pack256(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    pack_common(&k_isa256, pb, B, n, r, j0, j1);
}
static void run256(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                   void *scratch) {
    run_common(&k_isa256, C, ldc, A, m, pb, n, r, accumulate, scratch);
}

#else /* not x86-64 GCC: never available; the entry points must not be called */

static int avx512_available(void) { return 0; }
static int avx2_available(void) { return 0; }
static void pack_stub(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    (void)pb, (void)B, (void)n, (void)r, (void)j0, (void)j1;
    (void)pack_common;
}
static void run_stub(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                     void *scratch) {
    (void)C, (void)ldc, (void)A, (void)m, (void)pb, (void)n, (void)r, (void)accumulate, (void)scratch;
    (void)run_common;
}
#define pack512 pack_stub
#define run512 run_stub
#define pack256 pack_stub
#define run256 run_stub

#endif

static size_t pack_bytes512(int n, int r) { return pack_bytes_nr(n, r, NR512); }
static size_t pack_bytes256(int n, int r) { return pack_bytes_nr(n, r, NR256); }

const sv_gemm_engine sv_gemm_engine_avx512_f32 = {
    .name = "avx512-f32",
    .bf16 = 0,
    .nr = NR512,
    .red_block = 1,
    .available = avx512_available,
    .pack_bytes = pack_bytes512,
    .scratch_bytes = (size_t)MC512 * KC512 * sizeof(float),
    .pack = pack512,
    .run = run512,
};

const sv_gemm_engine sv_gemm_engine_avx2_f32 = {
    .name = "avx2-f32",
    .bf16 = 0,
    .nr = NR256,
    .red_block = 1,
    .available = avx2_available,
    .pack_bytes = pack_bytes256,
    .scratch_bytes = (size_t)MC256 * KC256 * sizeof(float),
    .pack = pack256,
    .run = run256,
};
