/* bf16 GEMM on AVX-512 BF16 (see gemm_bf16.h for the contract and numerics).
 *
 * Blocking (one thread):
 *   for each block of mc_blk rows of C
 *     for each block of kcp reduction pairs          (A block mc_blk x kcp pairs -> scratch, 64 KiB)
 *       for each 32-column panel of packed B         (B micro-panel kcp x 32 pairs, L1)
 *         for each MR rows: microkernel, MR x 32 outputs in 2*MR zmm accumulators
 * The blocks are 64 rows x 256 pairs (blocking_for; a 32 KiB B micro-panel); the scratch is
 * 64 KiB.
 * The microkernel loads the C tile (or zeros on the first reduction block without
 * accumulate), adds kcp pairs with VDPBF16PS (A pair broadcast from memory, two B vectors per
 * pair) and stores the tile back in fp32, so splitting the reduction into blocks does not
 * change any rounding: every output is one accumulator walking the pairs in index order.
 * A rows past the end of the block are packed as zeros and their outputs are not stored. */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#define SV_GEMM_BF16_X86 1
#include <immintrin.h>
#endif

#include "model/backend/cpu/gemm_bf16.h"
#if SV_GEMM_BF16_X86
#include "model/backend/cpu/bf16_pairs.h"
#endif

#include <stdint.h>
#include <string.h>

enum {
    MR = 8, /* rows per microkernel: 16 accumulators + 2 B vectors + broadcasts */
    NR = SV_GEMM_BF16_NR,
    /* the scratch holds one A block of mc_blk rows x kcp pairs (dwords), at most A_BLOCK_WORDS */
    A_BLOCK_WORDS = 128 * 128,
};

/* Rows per A block (a multiple of MR) and reduction pairs per block: 64 rows x 256 pairs, a
 * 32 KiB B micro-panel walked by 8 row groups per A block, each C tile loaded and stored once per
 * 256 pairs. The 128-pair alternative (128 rows, a 16 KiB micro-panel: fits beside the A group
 * in a 32 KiB L1) loads and stores every C tile twice as often and measured slower on both L1
 * sizes: the GEMM at 1024^3 on Zen 5 (48 KiB L1) dW 82-84% -> 85-87% of the VDPBF16PS peak
 * (docs/performance.md, change 26), on Zen 4 (32 KiB L1) fwd / d_in / dW 84-86 / 82-84 / 79-81%
 * -> 88-90 / 85-86 / 81-87% (change 29). The split of the reduction never changes a result bit
 * (see the file comment). SV_BF16_KCP=128|256 at compile time pins one choice. */
typedef struct {
    int mc, kcp;
} blocking;

static int g_kcp_forced; /* sv_gemm_bf16_set_kcp: 0 = the default */

void sv_gemm_bf16_set_kcp(int kcp) {
    __atomic_store_n(&g_kcp_forced, kcp == 128 || kcp == 256 ? kcp : 0, __ATOMIC_RELAXED);
}

#if !defined(SV_BF16_KCP)
#define SV_BF16_KCP 256
#endif

static blocking blocking_for(void) {
    int kcp = __atomic_load_n(&g_kcp_forced, __ATOMIC_RELAXED);
    if (!kcp) kcp = SV_BF16_KCP;
    return (blocking){A_BLOCK_WORDS / kcp, kcp};
}

size_t sv_gemm_bf16_pack_bytes(int n, int r) {
    if (n <= 0 || r <= 0) return 0;
    size_t panels = ((size_t)n + NR - 1) / NR, pairs = ((size_t)r + 1) / 2;
    return panels * pairs * NR * sizeof(uint32_t);
}

size_t sv_gemm_bf16_scratch_bytes(void) { return (size_t)A_BLOCK_WORDS * sizeof(uint32_t); }

#if SV_GEMM_BF16_X86

int sv_gemm_bf16_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

/* Row pairs ahead that packing a reduction-strided B prefetches: its source rows are read once
 * each, and the hardware prefetcher alone left the loads waiting on memory. */
#define B_PREFETCH_PAIRS 8

void sv_gemm_bf16_pack_padded(void *pb_, sv_gemm_mat B, int n, int r, int j0, int j1, long rp_alloc) {
    uint32_t *pb = pb_;
    const long rp = (r + 1) / 2;
    if (j1 > n) j1 = n;
    if (j1 <= j0) return;
    const int jp0 = j0 / NR, jp1 = (j1 + NR - 1) / NR;
    if (!B.red_contig) {
        /* reduction rows are contiguous along the columns: two rows make 32 dwords per panel.
         * Each pair of source rows is read once, left to right across all panels of the range
         * (sequential reads; the panels are written as parallel streams). */
        const size_t es = B.h ? sizeof(uint16_t) : sizeof(float);
        const char *src = B.h ? (const char *)(B.h + (size_t)jp0 * NR) : (const char *)(B.p + (size_t)jp0 * NR);
        const size_t seg = (size_t)((j1 < jp1 * NR ? j1 : jp1 * NR) - jp0 * NR) * es; /* bytes per source row */
        for (long q = 0; q < rp; q++) {
            const size_t row0 = (size_t)(2 * q) * B.ld;
            const int row1 = 2 * q + 1 < r;
            if (2 * (q + B_PREFETCH_PAIRS) + 1 < r) /* the rows B_PREFETCH_PAIRS pairs ahead, into L2 */
                for (int h = 0; h < 2; h++) {
                    const char *row = src + (size_t)(2 * (q + B_PREFETCH_PAIRS) + h) * B.ld * es;
                    for (size_t o = 0; o < seg; o += 64) _mm_prefetch(row + o, _MM_HINT_T1);
                    _mm_prefetch(row + seg - 1, _MM_HINT_T1);
                }
            for (int jp = jp0; jp < jp1; jp++) {
                uint32_t *dst = pb + (size_t)jp * rp_alloc * NR + q * NR;
                const int jbase = jp * NR, nj = n - jbase < NR ? n - jbase : NR;
                _mm512_storeu_si512(dst, pairs16_rows_at(&B, row0 + jbase, row1, nj));
                _mm512_storeu_si512(dst + 16, pairs16_rows_at(&B, row0 + jbase + 16, row1, nj - 16));
            }
        }
        if (rp_alloc > rp)
            for (int jp = jp0; jp < jp1; jp++)
                memset(pb + (size_t)jp * rp_alloc * NR + rp * NR, 0, (size_t)(rp_alloc - rp) * NR * sizeof(uint32_t));
        return;
    }
    for (int jp = jp0; jp < jp1; jp++) {
        uint32_t *dst = pb + (size_t)jp * rp_alloc * NR;
        const int jbase = jp * NR, nj = n - jbase < NR ? n - jbase : NR;
        /* column j is a contiguous row of B: 16 columns x 16 pairs at a time, converted and
         * transposed in registers; columns past n stay zero */
        for (int j16 = 0; j16 < NR; j16 += 16)
            for (long q = 0; q < rp; q += 16) {
                __m512i v[16];
                for (int j = 0; j < 16; j++)
                    v[j] = j16 + j < nj ? pairs16_at(&B, (size_t)(jbase + j16 + j) * B.ld + 2 * q, (long)r - 2 * q)
                                        : _mm512_setzero_si512();
                transpose16(v);
                long nq = rp - q < 16 ? rp - q : 16;
                for (long t = 0; t < nq; t++) _mm512_storeu_si512(dst + (q + t) * NR + j16, v[t]);
            }
        if (rp_alloc > rp) memset(dst + rp * NR, 0, (size_t)(rp_alloc - rp) * NR * sizeof(uint32_t));
    }
}

void sv_gemm_bf16_pack(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    sv_gemm_bf16_pack_padded(pb, B, n, r, j0, j1, (r + 1) / 2);
}

/* Pack rows [i0, i0 + mc) x pairs [q0, q0 + kq) of A into S (rows padded with zeros up to a
 * multiple of MR). Layout per MR-row group g at S + g*MR*kq: row-major (row stride kq) when A
 * is reduction-contiguous, pair-major (MR dwords per pair) when it is reduction-strided;
 * the microkernel takes the matching strides. */
static void pack_a(uint32_t *S, sv_gemm_mat A, int r, int i0, int mc, long q0, long kq) {
    int mcp = (mc + MR - 1) / MR * MR;
    if (A.red_contig) {
        for (int i = 0; i < mcp; i++) {
            uint32_t *d = S + (size_t)i * kq;
            const size_t row = (size_t)(i0 + i) * A.ld;
            for (long t = 0; t < kq; t += 16) {
                __mmask16 k = mask16(kq - t);
                long cnt = i < mc ? (long)r - 2 * (q0 + t) : 0;
                __m512i v = i < mc ? pairs16_at(&A, row + 2 * (q0 + t), cnt) : _mm512_setzero_si512();
                _mm512_mask_storeu_epi32(d + t, k, v);
            }
        }
    } else {
        /* pair-major: walk each pair of source rows once, 16 columns (two MR groups) at a time */
        for (long t = 0; t < kq; t++) {
            long rr = 2 * (q0 + t);
            const size_t row0 = (size_t)rr * A.ld + i0;
            const int row1 = rr + 1 < r;
            int g = 0;
            for (; g + 2 * MR <= mcp; g += 2 * MR) {
                __m512i v = pairs16_rows_at(&A, row0 + g, row1, mc - g);
                _mm256_storeu_si256((__m256i *)(S + (size_t)g * kq + t * MR), _mm512_castsi512_si256(v));
                _mm256_storeu_si256((__m256i *)(S + (size_t)(g + MR) * kq + t * MR), _mm512_extracti64x4_epi64(v, 1));
            }
            if (g < mcp) /* one MR group left: at most MR valid columns, so the low half */
                _mm256_storeu_si256((__m256i *)(S + (size_t)g * kq + t * MR),
                                    _mm512_castsi512_si256(pairs16_rows_at(&A, row0 + g, row1, mc - g)));
        }
    }
}

/* MR x 32 tile: C[i][0..nr) for i < mr (= or += per load_c) over kq pairs. A pair of row i at
 * pair t: a[i*ars + t*aps]; B pair t: b[t*32 .. t*32+31]. `mr` and `half` (nr <= 16) are
 * constants at each instantiation: a partial last row group computes only its rows and a panel
 * of at most 16 columns only the first 16 (the ragged edges of an attention score block: T = 50
 * leaves 2 of 8 rows, T = 197 5 rows and 5 columns), with the same dot-product chains for the
 * outputs kept. */
static inline __attribute__((always_inline)) void kernel_body(long kq, const uint32_t *a, size_t ars, size_t aps,
                                                              const uint32_t *b, float *C, size_t ldc, int mr, int half,
                                                              int nr, int load_c) {
    __m512 c0[MR], c1[MR];
    __mmask16 k0 = mask16(nr), k1 = mask16(nr - 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (load_c && i < mr) {
            c0[i] = _mm512_maskz_loadu_ps(k0, C + (size_t)i * ldc);
            c1[i] = half ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k1, C + (size_t)i * ldc + 16);
        } else {
            c0[i] = _mm512_setzero_ps();
            c1[i] = _mm512_setzero_ps();
        }
    }
    const uint32_t *ai[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) ai[i] = a + i * ars;
    for (long t = 0; t < kq; t++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + t * NR);
        __m512bh b1 = half ? b0 : (__m512bh)_mm512_loadu_si512(b + t * NR + 16);
        size_t o = (size_t)t * aps;
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            if (i < mr) {
                __m512bh av = (__m512bh)_mm512_set1_epi32((int)ai[i][o]);
                c0[i] = _mm512_dpbf16_ps(c0[i], av, b0);
                if (!half) c1[i] = _mm512_dpbf16_ps(c1[i], av, b1);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (i < mr) {
            _mm512_mask_storeu_ps(C + (size_t)i * ldc, k0, c0[i]);
            if (!half) _mm512_mask_storeu_ps(C + (size_t)i * ldc + 16, k1, c1[i]);
        }
    }
}

/* the tile's row count (a partial last group computes only its rows) and half-ness as constants */
#define SV_KBF_AT(R, H) kernel_body(kq, a, ars, aps, b, C, ldc, R, H, nr, load_c)
#define SV_KBF_ROWS(H) \
    switch (mr) { \
    case 1: SV_KBF_AT(1, H); break; \
    case 2: SV_KBF_AT(2, H); break; \
    case 3: SV_KBF_AT(3, H); break; \
    case 4: SV_KBF_AT(4, H); break; \
    case 5: SV_KBF_AT(5, H); break; \
    case 6: SV_KBF_AT(6, H); break; \
    case 7: SV_KBF_AT(7, H); break; \
    default: SV_KBF_AT(MR, H); break; \
    }

static void kernel(long kq, const uint32_t *a, size_t ars, size_t aps, const uint32_t *b, float *C, size_t ldc, int mr,
                   int nr, int load_c) {
    if (nr <= 16) {
        SV_KBF_ROWS(1)
    } else {
        SV_KBF_ROWS(0)
    }
}
#undef SV_KBF_ROWS
#undef SV_KBF_AT

/* Software prefetch (into L2) of the source lines of the A block that the loop copies next,
 * spread over the current block's kernel calls. Without it the copy waits on memory for every
 * line of a block (bf16 activations of a few MiB, each read once per block): half of the copy's
 * samples sat on its first load. A prefetch never faults and changes no result. */
typedef struct {
    const char *base; /* the next block's first source row segment */
    size_t stride;    /* bytes from one source row to the next */
    size_t bytes;     /* bytes of each row segment */
    int rows, done, per_call;
} a_prefetch;

static a_prefetch a_prefetch_next(sv_gemm_mat A, int m, int r, blocking bk, int i0, long q0, long rp, int calls) {
    a_prefetch p = {0};
    int i1 = i0;
    long q1 = q0 + bk.kcp;
    if (q1 >= rp) q1 = 0, i1 = i0 + bk.mc;
    if (i1 >= m || calls <= 0) return p;
    const int mc = m - i1 < bk.mc ? m - i1 : bk.mc;
    const long red = r - 2 * q1 < 2 * (long)bk.kcp ? r - 2 * q1 : 2 * (long)bk.kcp; /* elements */
    const size_t es = A.h ? sizeof(uint16_t) : sizeof(float);
    const char *base = A.h ? (const char *)A.h : (const char *)A.p;
    p.stride = A.ld * es;
    if (A.red_contig) { /* mc rows, red elements each */
        p.base = base + ((size_t)i1 * A.ld + 2 * (size_t)q1) * es;
        p.bytes = (size_t)red * es;
        p.rows = mc;
    } else { /* red rows of the reduction, mc elements each */
        p.base = base + (2 * (size_t)q1 * A.ld + (size_t)i1) * es;
        p.bytes = (size_t)mc * es;
        p.rows = (int)red;
    }
    p.per_call = (p.rows + calls - 1) / calls;
    return p;
}

static inline void a_prefetch_some(a_prefetch *p) {
    for (int k = 0; k < p->per_call && p->done < p->rows; k++, p->done++) {
        const char *row = p->base + (size_t)p->done * p->stride;
        for (size_t o = 0; o < p->bytes; o += 64) _mm_prefetch(row + o, _MM_HINT_T1);
        _mm_prefetch(row + p->bytes - 1, _MM_HINT_T1);
    }
}

void sv_gemm_bf16_run(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb_, int n, int r, int accumulate,
                      void *scratch) {
    const uint32_t *pb = pb_;
    uint32_t *S = scratch;
    if (sv_gemm_run_trivial(C, ldc, m, n, r, accumulate)) return;
    const long rp = (r + 1) / 2;
    const int npan = (n + NR - 1) / NR;
    const blocking bk = blocking_for();
    for (int i0 = 0; i0 < m; i0 += bk.mc) {
        int mc = m - i0 < bk.mc ? m - i0 : bk.mc;
        for (long q0 = 0; q0 < rp; q0 += bk.kcp) {
            long kq = rp - q0 < bk.kcp ? rp - q0 : bk.kcp;
            pack_a(S, A, r, i0, mc, q0, kq);
            size_t ars = A.red_contig ? (size_t)kq : 1, aps = A.red_contig ? 1 : MR;
            int load_c = accumulate || q0 > 0;
            a_prefetch pf = a_prefetch_next(A, m, r, bk, i0, q0, rp, npan * ((mc + MR - 1) / MR));
            for (int jp = 0; jp < npan; jp++) {
                const uint32_t *bpan = pb + ((size_t)jp * rp + q0) * NR;
                int nr = n - jp * NR < NR ? n - jp * NR : NR;
                for (int g = 0; g < mc; g += MR) {
                    int mr = mc - g < MR ? mc - g : MR;
                    a_prefetch_some(&pf);
                    kernel(kq, S + (size_t)g * kq, ars, aps, bpan, C + (size_t)(i0 + g) * ldc + jp * NR, ldc, mr, nr,
                           load_c);
                }
            }
        }
    }
}

#else /* not x86-64 GCC: never available; the entry points must not be called */

int sv_gemm_bf16_available(void) { return 0; }
void sv_gemm_bf16_set_kcp(int kcp) { (void)kcp; }
void sv_gemm_bf16_pack_padded(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1, long rp_alloc) {
    (void)pb, (void)B, (void)n, (void)r, (void)j0, (void)j1, (void)rp_alloc;
}
void sv_gemm_bf16_pack(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1) {
    (void)pb, (void)B, (void)n, (void)r, (void)j0, (void)j1;
}
void sv_gemm_bf16_run(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                      void *scratch) {
    (void)C, (void)ldc, (void)A, (void)m, (void)pb, (void)n, (void)r, (void)accumulate, (void)scratch;
}

#endif

const sv_gemm_engine sv_gemm_engine_avx512_bf16 = {
    .name = "avx512-bf16",
    .bf16 = 1,
    .nr = NR,
    .red_block = 2,
    .available = sv_gemm_bf16_available,
    .pack_bytes = sv_gemm_bf16_pack_bytes,
    .scratch_bytes = (size_t)A_BLOCK_WORDS * sizeof(uint32_t),
    .pack = sv_gemm_bf16_pack,
    .run = sv_gemm_bf16_run,
};
