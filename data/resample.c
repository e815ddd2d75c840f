#include "data/resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PRECISION_BITS = 32 - 8 - 2 }; /* Pillow's: 8-bit data, 2 bits of headroom */

void sv_resample_scratch_free(sv_resample_scratch *s) {
    free(s->mem);
    memset(s, 0, sizeof *s);
}

static double bilinear(double x) {
    if (x < 0.0) x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double bicubic(double x) { /* Keys, a = -0.5 (Pillow) */
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static int ksize_of(double len, int out, double support) {
    double fs = len / out;
    if (fs < 1.0) fs = 1.0;
    return (int)ceil(support * fs) * 2 + 1;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc over [in0, in1) of an axis of inSize
 * pixels, in that axis's own coordinates. bounds: (first tap, count) per output; k: ksize
 * fixed-point taps per output. */
static void coeffs(double in0, double in1, int in_size, int out, sv_interp interp, int ksize, int32_t *bounds,
                   int32_t *k) {
    double support = interp == SV_INTERP_BICUBIC ? 2.0 : 1.0;
    double (*filter)(double) = interp == SV_INTERP_BICUBIC ? bicubic : bilinear;
    double scale = (in1 - in0) / out, fs = scale < 1.0 ? 1.0 : scale, ss = 1.0 / fs;
    support *= fs;
    for (int xx = 0; xx < out; xx++) {
        double center = in0 + (xx + 0.5) * scale, ww = 0.0;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        if (xmax > ksize) xmax = ksize;
        if (xmax < 1) { /* the box lies outside the clip: take the nearest edge pixel */
            xmin = xmin >= in_size ? in_size - 1 : xmin;
            xmax = 1;
        }
        for (int x = 0; x < xmax; x++) ww += filter((x + xmin - center + 0.5) * ss);
        int32_t *kk = k + (size_t)xx * (size_t)ksize;
        for (int x = 0; x < xmax; x++) {
            double v = filter((x + xmin - center + 0.5) * ss);
            if (ww != 0.0) v /= ww;
            v *= (double)(1 << PRECISION_BITS);
            kk[x] = (int32_t)(v < 0 ? -0.5 + v : 0.5 + v);
        }
        for (int x = xmax; x < ksize; x++) kk[x] = 0;
        bounds[2 * xx] = xmin;
        bounds[2 * xx + 1] = xmax;
    }
}

static inline uint8_t clip8(int32_t v) {
    if (v >= (255 << PRECISION_BITS)) return 255; /* Pillow: in >= 1 << PRECISION_BITS << 8 */
    if (v <= 0) return 0;
    return (uint8_t)(v >> PRECISION_BITS);
}

/* The group tables of the 3-channel VBMI pass (sv_resample_scratch): the largest group size up
 * to 5 whose every group reads at most 64 bytes (21 pixels), counting each output's real taps
 * (past them the taps are zero, and the lanes may index anything). */
/* The source pixels outputs [o0, o0 + n) read: from *lo, how many. */
static int group_span(const sv_resample_scratch *s, int o0, int n, int *lo) {
    int l = s->bx[2 * o0], hi = l;
    for (int o = o0; o < o0 + n; o++) {
        int a = s->bx[2 * o], e = a + s->bx[2 * o + 1];
        l = a < l ? a : l;
        hi = e > hi ? e : hi;
    }
    *lo = l;
    return hi - l;
}

static void plan_groups(sv_resample_scratch *s) {
    const int out = s->out, ksx = s->ksx;
    s->gsz = s->ngroup = 0;
    if (s->c != 3) return;
    int g = 5, lo;
    for (; g >= 1; g--) {
        int fits = 1;
        for (int o0 = 0; o0 < out && fits; o0 += g)
            fits = group_span(s, o0, out - o0 < g ? out - o0 : g, &lo) * 3 <= 64;
        if (fits) break;
    }
    if (g < 1) return;
    s->gsz = g;
    s->ngroup = (out + g - 1) / g;
    for (int gi = 0; gi < s->ngroup; gi++) {
        const int o0 = gi * g, n = out - o0 < g ? out - o0 : g, span = group_span(s, o0, n, &lo);
        int32_t *info = s->ginfo + 4 * (size_t)gi;
        info[0] = lo;
        info[1] = span * 3;
        info[2] = o0;
        info[3] = n;
        uint8_t *idx = s->gidx + 64 * (size_t)gi;
        memset(idx, 0, 64);
        int32_t *k = s->gk + (size_t)gi * 16 * (size_t)ksx;
        memset(k, 0, sizeof(int32_t) * 16 * (size_t)ksx);
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < 3; ch++) {
                const int l = 3 * i + ch;
                idx[4 * l] = (uint8_t)((s->bx[2 * (o0 + i)] - lo) * 3 + ch);
                for (int t = 0; t < s->bx[2 * (o0 + i) + 1]; t++) k[16 * t + l] = s->kx[(size_t)(o0 + i) * ksx + t];
            }
    }
}

sv_status sv_resample_plan(sv_resample_scratch *s, const sv_box *b, int clip_x0, int clip_y0, int clip_x1, int clip_y1,
                           int out, int c, int flip, sv_interp interp) {
    if (out < 1 || out > 1024 || c < 1 || c > 4)
        return SV_FAIL(SV_ERR_INVALID, "resample: output side %d / channels %d out of range", out, c);
    if (clip_x1 <= clip_x0 || clip_y1 <= clip_y0 || !(b->w > 0 && b->h > 0))
        return SV_FAIL(SV_ERR_INVALID, "resample: empty box %gx%g or clip %dx%d", b->w, b->h, clip_x1 - clip_x0,
                       clip_y1 - clip_y0);
    double support = interp == SV_INTERP_BICUBIC ? 2.0 : 1.0;
    int ksx = ksize_of(b->w, out, support), ksy = ksize_of(b->h, out, support);
    /* the rows read are bounded by the box height plus the kernel */
    int rows = (int)ceil(b->h) + ksy + 2;
    if (rows > clip_y1 - clip_y0) rows = clip_y1 - clip_y0;
    size_t img = (size_t)out * (size_t)out * (size_t)c;
    int npair = (ksx + 1) / 2;
    /* the group tables are sized for groups of one output (the most groups a plan can have) */
    size_t need = sizeof(int32_t) * (size_t)out * (4 + (size_t)ksx + (size_t)ksy + 8 * (size_t)npair) +
        sizeof(int32_t) * (size_t)out * (4 + 16 * (size_t)ksx) + 64 * (size_t)out +
        (size_t)rows * (size_t)out * (size_t)c + 2 * img + 64 * 4 + 16;
    if (need > s->cap) {
        void *p = realloc(s->mem, need);
        if (!p) return SV_FAIL(SV_ERR_OOM, "resample: cannot allocate %zu bytes", need);
        s->mem = p;
        s->cap = need;
    }
    s->out = out;
    s->c = c;
    s->flip = flip;
    s->ksx = ksx;
    s->ksy = ksy;
    s->bx = s->mem;
    s->by = s->bx + 2 * out;
    s->kx = s->by + 2 * out;
    s->ky = s->kx + (size_t)out * (size_t)ksx;
    s->kp = s->ky + (size_t)out * (size_t)ksy;
    s->npair = npair;
    s->ginfo = s->kp + (size_t)out * 8 * (size_t)npair;
    s->gk = s->ginfo + 4 * (size_t)out;
    s->gidx = (uint8_t *)(s->gk + (size_t)out * 16 * (size_t)ksx);
    uint8_t *p8 = s->gidx + 64 * (size_t)out;
    s->img = p8;
    s->img2 = s->img + img;
    s->tmp = s->img2 + img;
    /* each axis in the clip's own coordinates, as Pillow resizes the cropped image */
    coeffs(b->x - clip_x0, b->x - clip_x0 + b->w, clip_x1 - clip_x0, out, interp, ksx, s->bx, s->kx);
    coeffs(b->y - clip_y0, b->y - clip_y0 + b->h, clip_y1 - clip_y0, out, interp, ksy, s->by, s->ky);
    int x0 = s->bx[0], x1 = x0 + 1, y0 = s->by[0], y1 = y0 + 1;
    for (int o = 0; o < out; o++) {
        int a = s->bx[2 * o], e = a + s->bx[2 * o + 1];
        x0 = a < x0 ? a : x0;
        x1 = e > x1 ? e : x1;
        a = s->by[2 * o];
        e = a + s->by[2 * o + 1];
        y0 = a < y0 ? a : y0;
        y1 = e > y1 ? e : y1;
    }
    if (y1 - y0 > rows) return SV_FAIL(SV_ERR_INVALID, "resample: %d rows needed, %d planned", y1 - y0, rows);
    /* make the tables absolute (taps of the vertical pass index rows of tmp) */
    for (int o = 0; o < out; o++) {
        s->bx[2 * o] += clip_x0;
        s->by[2 * o] -= y0;
    }
    if (flip) /* output column o takes the taps of out-1-o */
        for (int o = 0; o < out / 2; o++) {
            int m = out - 1 - o;
            for (int t = 0; t < 2; t++) {
                int32_t v = s->bx[2 * o + t];
                s->bx[2 * o + t] = s->bx[2 * m + t];
                s->bx[2 * m + t] = v;
            }
            int32_t *ka = s->kx + (size_t)o * (size_t)ksx, *kb = s->kx + (size_t)m * (size_t)ksx;
            for (int t = 0; t < ksx; t++) {
                int32_t v = ka[t];
                ka[t] = kb[t];
                kb[t] = v;
            }
        }
    /* pairs of horizontal taps as (k_t x3, 0, k_t+1 x3, 0) for two RGB pixels per 256-bit op */
    for (int o = 0; o < out; o++) {
        const int32_t *k = s->kx + (size_t)o * (size_t)ksx;
        int32_t *kp = s->kp + (size_t)o * 8 * (size_t)npair;
        for (int q = 0; q < npair; q++) {
            int32_t a = k[2 * q], b = 2 * q + 1 < ksx ? k[2 * q + 1] : 0;
            int32_t v[8] = {a, a, a, 0, b, b, b, 0};
            memcpy(kp + 8 * q, v, sizeof v);
        }
    }
    plan_groups(s);
    s->x0 = x0 + clip_x0;
    s->x1 = x1 + clip_x0;
    s->y0 = y0 + clip_y0;
    s->y1 = y1 + clip_y0;
    return SV_OK;
}

/* The two passes are written once (always inlined) and instantiated for the baseline ISA and,
 * on x86-64, for AVX2, picked at run time; the arithmetic is the same 32-bit integer math in
 * both, so the output does not depend on the machine. */
#define SV_INLINE static inline __attribute__((always_inline))

SV_INLINE void hpass_generic(const sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride) {
    const int out = s->out, c = s->c, ksx = s->ksx, rows = s->y1 - s->y0;
    const size_t row = (size_t)out * (size_t)c;
    const int32_t half = 1 << (PRECISION_BITS - 1);
    for (int y = 0; y < rows; y++) {
        const uint8_t *sr = src + (size_t)(s->y0 + y - oy) * stride;
        uint8_t *tr = s->tmp + (size_t)y * row;
        for (int o = 0; o < out; o++) {
            const int32_t *k = s->kx + (size_t)o * (size_t)ksx;
            const uint8_t *p = sr + (size_t)(s->bx[2 * o] - ox) * (size_t)c;
            int n = s->bx[2 * o + 1];
            for (int ch = 0; ch < c; ch++) {
                int32_t a = half;
                for (int t = 0; t < n; t++) a += p[t * c + ch] * k[t];
                tr[(size_t)o * (size_t)c + (size_t)ch] = clip8(a);
            }
        }
    }
}

/* Vertical pass: whole rows at a time, which the compiler vectorises. */
SV_INLINE void vpass_generic(const sv_resample_scratch *s) {
    const int out = s->out, ksy = s->ksy;
    const size_t row = (size_t)out * (size_t)s->c;
    const int32_t half = 1 << (PRECISION_BITS - 1);
    int32_t acc[4 * 1024];
    for (int o = 0; o < out; o++) {
        const int32_t *k = s->ky + (size_t)o * (size_t)ksy;
        const uint8_t *t0 = s->tmp + (size_t)s->by[2 * o] * row;
        int n = s->by[2 * o + 1];
        for (size_t e = 0; e < row; e++) acc[e] = half + t0[e] * k[0];
        for (int t = 1; t < n; t++) {
            const uint8_t *tt = t0 + (size_t)t * row;
            int32_t kt = k[t];
            for (size_t e = 0; e < row; e++) acc[e] += tt[e] * kt;
        }
        uint8_t *d = s->img + (size_t)o * row;
        for (size_t e = 0; e < row; e++) {
            int32_t v = acc[e] >> PRECISION_BITS; /* == clip8(acc[e]) */
            d[e] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 3 channels: two taps (two RGB pixels, 8 bytes loaded) per 256-bit multiply-add, exact 32-bit
 * products as the generic pass. Reads up to 5 bytes past the last tap's pixel (the tap beyond
 * has weight 0; the decode buffer has slack) and writes one byte past each output pixel (the
 * next pixel, or the row slack, overwrites it). */
__attribute__((target("avx2"))) static void hpass3_avx2(const sv_resample_scratch *s, const uint8_t *src, int ox,
                                                        int oy, size_t stride) {
    const int out = s->out, npair = s->npair, rows = s->y1 - s->y0;
    const size_t row = (size_t)out * 3;
    const __m128i half = _mm_set1_epi32(1 << (PRECISION_BITS - 1));
    const __m128i shuf = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    for (int y = 0; y < rows; y++) {
        const uint8_t *sr = src + (size_t)(s->y0 + y - oy) * stride;
        uint8_t *tr = s->tmp + (size_t)y * row;
        for (int o = 0; o < out; o++) {
            const int32_t *kp = s->kp + (size_t)o * 8 * (size_t)npair;
            const uint8_t *p = sr + (size_t)(s->bx[2 * o] - ox) * 3;
            int nq = (s->bx[2 * o + 1] + 1) / 2;
            __m256i acc = _mm256_setzero_si256();
            for (int q = 0; q < nq; q++, p += 6) {
                long long px;
                memcpy(&px, p, 8);
                __m256i v = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(_mm_cvtsi64_si128(px), shuf));
                acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(v, _mm256_loadu_si256((const __m256i *)(kp + 8 * q))));
            }
            __m128i a =
                _mm_add_epi32(_mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1)), half);
            a = _mm_srai_epi32(a, PRECISION_BITS); /* clip8: clamp(acc >> 22, 0, 255) */
            __m128i b = _mm_packus_epi16(_mm_packs_epi32(a, a), _mm_setzero_si128());
            int32_t pix = _mm_cvtsi128_si32(b);
            memcpy(tr + 3 * o, &pix, 4);
        }
    }
}

/* The end of the source bytes a plan may read: its last row's pixels up to s->x1 and the 8
 * bytes after them (sv_resample_run's contract); every row before it runs on into the next. */
static const uint8_t *read_end(const sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride) {
    return src + (size_t)(s->y1 - 1 - oy) * stride + (size_t)(s->x1 - ox) * 3 + 8;
}

/* A group's windows of n <= 64 source bytes in two rows (a at or before b): a whole 64-byte load
 * where it ends before `end` (the bytes past the window are other pixels, which only taps of
 * weight 0 pick), else a masked load that touches nothing past the window. A masked load is far
 * slower than a plain one on AMD Zen 5: with masked loads only, this pass took 7% more of the
 * eval transform's time. */
__attribute__((target("avx512f,avx512bw"))) static inline void
window_pair(const uint8_t *a, const uint8_t *b, int n, const uint8_t *end, __m512i *wa, __m512i *wb) {
    if (b + 64 <= end) {
        *wa = _mm512_loadu_si512(a);
        *wb = _mm512_loadu_si512(b);
        return;
    }
    const __mmask64 lm = n >= 64 ? ~0ULL : (1ULL << n) - 1;
    *wa = _mm512_maskz_loadu_epi8(lm, a);
    *wb = _mm512_maskz_loadu_epi8(lm, b);
}

/* 3 channels with AVX-512 VBMI: a group of up to 5 outputs (15 lanes: pixel, channel) per
 * 512-bit accumulator. The group's source bytes (at most 64) are loaded once per row
 * (window_pair: nothing past the plan's readable bytes is touched); each tap moves every lane's byte into place with one VPERMB
 * (zero-extended to 32 bits by the zeroing mask) and adds its exact 32-bit product, the
 * lanes' byte offsets stepping by one pixel per tap. Taps past an output's own count weigh 0,
 * so whatever byte such a lane picks does not matter. Same integer sums as the other passes. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
hpass3_vbmi(const sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride) {
    const int out = s->out, ksx = s->ksx, rows = s->y1 - s->y0, ng = s->ngroup;
    const size_t row = (size_t)out * 3;
    const __m512i half = _mm512_set1_epi32(1 << (PRECISION_BITS - 1)), three = _mm512_set1_epi8(3);
    const __mmask64 low_bytes = 0x1111111111111111ULL;
    const uint8_t *end = read_end(s, src, ox, oy, stride);
    /* two rows at a time share each group's index and tap loads (a last odd row repeats itself) */
    for (int y = 0; y < rows; y += 2) {
        const int y2 = y + 1 < rows ? y + 1 : y;
        const uint8_t *sr = src + (size_t)(s->y0 + y - oy) * stride, *sr2 = src + (size_t)(s->y0 + y2 - oy) * stride;
        uint8_t *tr = s->tmp + (size_t)y * row, *tr2 = s->tmp + (size_t)y2 * row;
        for (int g = 0; g < ng; g++) {
            const int32_t *info = s->ginfo + 4 * (size_t)g;
            const size_t off = (size_t)(info[0] - ox) * 3;
            __m512i win, win2;
            window_pair(sr + off, sr2 + off, info[1], end, &win, &win2);
            __m512i idx = _mm512_loadu_si512(s->gidx + 64 * (size_t)g), acc = half, acc2 = half;
            const int32_t *k = s->gk + (size_t)g * 16 * (size_t)ksx;
            for (int t = 0; t < ksx; t++, idx = _mm512_add_epi8(idx, three)) {
                const __m512i kt = _mm512_loadu_si512(k + 16 * t);
                acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_maskz_permutexvar_epi8(low_bytes, idx, win), kt));
                acc2 =
                    _mm512_add_epi32(acc2, _mm512_mullo_epi32(_mm512_maskz_permutexvar_epi8(low_bytes, idx, win2), kt));
            }
            /* clip8: clamp(acc >> 22, 0, 255) */
            const __mmask16 sm = (__mmask16)((1u << (3 * info[3])) - 1);
            const __m512i zero = _mm512_setzero_si512();
            _mm_mask_storeu_epi8(
                tr + 3 * (size_t)info[2], sm,
                _mm512_cvtusepi32_epi8(_mm512_max_epi32(_mm512_srai_epi32(acc, PRECISION_BITS), zero)));
            _mm_mask_storeu_epi8(
                tr2 + 3 * (size_t)info[2], sm,
                _mm512_cvtusepi32_epi8(_mm512_max_epi32(_mm512_srai_epi32(acc2, PRECISION_BITS), zero)));
        }
    }
}
__attribute__((target("avx512f,avx512bw"))) static void vpass_avx512(const sv_resample_scratch *s) { vpass_generic(s); }

__attribute__((target("avx2"))) static void vpass_avx2(const sv_resample_scratch *s) { vpass_generic(s); }
__attribute__((target("avx2"))) static void hpass_avx2(const sv_resample_scratch *s, const uint8_t *src, int ox, int oy,
                                                       size_t stride) {
    if (s->c == 3)
        hpass3_avx2(s, src, ox, oy, stride);
    else
        hpass_generic(s, src, ox, oy, stride);
}
#define SV_HAVE_AVX2_PATH 1
#endif

static void hpass_base(const sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride) {
    hpass_generic(s, src, ox, oy, stride);
}
static void vpass_base(const sv_resample_scratch *s) { vpass_generic(s); }

void sv_resample_run_portable(sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride) {
    hpass_base(s, src, ox, oy, stride);
    vpass_base(s);
}

void sv_resample_run(sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride) {
#ifdef SV_HAVE_AVX2_PATH
    if (__builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        if (s->gsz)
            hpass3_vbmi(s, src, ox, oy, stride);
        else
            hpass_avx2(s, src, ox, oy, stride);
        vpass_avx512(s);
        return;
    }
    if (__builtin_cpu_supports("avx2")) {
        hpass_avx2(s, src, ox, oy, stride);
        vpass_avx2(s);
        return;
    }
#endif
    hpass_base(s, src, ox, oy, stride);
    vpass_base(s);
}

/* v/255 - mean over std, evaluated as v * a + b with a = 1/(255 std), b = -mean/std (one
 * rounding each; never fused, so every path gives the same floats). */
static void norm_coeffs(int c, const float *mean, const float *std, float *a, float *b) {
    for (int ch = 0; ch < c; ch++) {
        a[ch] = 1.f / (255.f * std[ch]);
        b[ch] = -mean[ch] / std[ch];
    }
}

#ifdef SV_HAVE_AVX2_PATH
/* 3 channels, 8 pixels (24 bytes) per step: de-interleave with byte shuffles, convert, scale. */
__attribute__((target("avx2"))) static size_t normalize3_avx2(const uint8_t *src, size_t plane, const float *a,
                                                              const float *b, float *dst) {
    const __m128i lo_idx[3] = {_mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                               _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                               _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)};
    const __m128i hi_idx[3] = {_mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1),
                               _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1),
                               _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1)};
    size_t p = 0;
    for (; p + 8 <= plane; p += 8) {
        const uint8_t *q = src + 3 * p;
        __m128i lo = _mm_loadu_si128((const __m128i *)q), hi = _mm_loadl_epi64((const __m128i *)(q + 16));
        for (int ch = 0; ch < 3; ch++) {
            __m128i v8 = _mm_or_si128(_mm_shuffle_epi8(lo, lo_idx[ch]), _mm_shuffle_epi8(hi, hi_idx[ch]));
            __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v8));
            _mm256_storeu_ps(dst + (size_t)ch * plane + p,
                             _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(a[ch])), _mm256_set1_ps(b[ch])));
        }
    }
    return p;
}
#endif

static void normalize(const uint8_t *src, int side, int c, const float *mean, const float *std, float *dst, int simd) {
    float a[4], b[4], lut[4][256];
    norm_coeffs(c, mean, std, a, b);
    for (int ch = 0; ch < c; ch++)
        for (int v = 0; v < 256; v++) lut[ch][v] = (float)v * a[ch] + b[ch];
    size_t plane = (size_t)side * (size_t)side, p = 0;
#ifdef SV_HAVE_AVX2_PATH
    if (simd && c == 3 && __builtin_cpu_supports("avx2")) p = normalize3_avx2(src, plane, a, b, dst);
#else
    (void)simd;
#endif
    for (; p < plane; p++)
        for (int ch = 0; ch < c; ch++) dst[(size_t)ch * plane + p] = lut[ch][src[p * (size_t)c + (size_t)ch]];
}

void sv_normalize_u8(const uint8_t *src, int side, int c, const float *mean, const float *std, float *dst) {
    normalize(src, side, c, mean, std, dst, 1);
}

void sv_normalize_u8_portable(const uint8_t *src, int side, int c, const float *mean, const float *std, float *dst) {
    normalize(src, side, c, mean, std, dst, 0);
}
