/* CPU backend: patch extraction, token assembly (cls + pos), class-token pooling. With bf16
 * storage (act16) each row runs in stack chunks (cpu_backend.h SV_CPU_CHUNKS): widen the compute
 * inputs, the fp32 loop, narrow the outputs. */
#include "model/backend/cpu/cpu_backend.h"

/* act16 im2col: narrowing the image pixels gives the bits of narrowing their bf16 roundings
 * (rounding to nearest even is idempotent, NaNs keep their quiet pattern), so no stack pass. */
static void im2col16(const sv_cpu_backend *c, void *patches, const float *img, int B, int C, int Himg, int Wimg,
                     int p) {
    const int gh = Himg / p, gw = Wimg / p, P = gh * gw;
    const size_t cols = (size_t)C * p * p;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *P *cols)) schedule(static)
    for (int bp = 0; bp < B * P; bp++) {
        int b = bp / P, pi = bp % P, py = pi / gw, px = pi % gw;
        uint16_t *row = (uint16_t *)patches + (size_t)bp * cols;
        for (int ch = 0; ch < C; ch++)
            for (int ky = 0; ky < p; ky++) {
                const float *src = img + (((size_t)b * C + ch) * Himg + (size_t)py * p + ky) * Wimg + (size_t)px * p;
                c->k->narrow(row + ((size_t)ch * p + ky) * p, src, (size_t)p);
            }
    }
}

sv_status sv_cpu_im2col(sv_backend *be, void *patches_, const float *img, int B, int C, int Himg, int Wimg, int p) {
    const sv_cpu_backend *c = sv_cpu(be);
    if (c->act16) {
        im2col16(c, patches_, img, B, C, Himg, Wimg, p);
        return SV_OK;
    }
    float *patches = patches_;
    const int bf = c->bf16, gh = Himg / p, gw = Wimg / p, P = gh * gw;
    const size_t cols = (size_t)C * p * p;
    /* one output row = one patch, columns (c, ky, kx): each (c, ky) is a contiguous run of p
     * pixels in the image row */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *P *cols)) schedule(static)
    for (int bp = 0; bp < B * P; bp++) {
        int b = bp / P, pi = bp % P, py = pi / gw, px = pi % gw;
        float *row = patches + (size_t)bp * cols;
        for (int ch = 0; ch < C; ch++)
            for (int ky = 0; ky < p; ky++) {
                const float *src = img + (((size_t)b * C + ch) * Himg + (size_t)py * p + ky) * Wimg + (size_t)px * p;
                float *dst = row + ((size_t)ch * p + ky) * p;
                for (int kx = 0; kx < p; kx++) dst[kx] = sv_cpu_store(bf, src[kx]);
            }
    }
    return SV_OK;
}

/* act16 token (b, t) of embed_fwd (the fp32 loop's sources and formula). */
static void embed_row16(const sv_cpu_backend *c, void *x, const void *po, const void *cls, const void *pos, int b,
                        int t, int T, int D) {
    _Alignas(64) float ss[SV_CPU_CHUNK], ps[SV_CPU_CHUNK];
    const size_t xo = ((size_t)b * T + t) * D;
    const void *src = cls && t == 0 ? cls : po;
    const size_t so = !cls ? xo : t == 0 ? 0 : ((size_t)b * (T - 1) + t - 1) * D;
    SV_CPU_CHUNKS(0, (size_t)D, o, len, {
        sv_cpu_widen(c, ss, src, so + o, len);
        sv_cpu_widen(c, ps, pos, (size_t)t * D + o, len);
        for (size_t j = 0; j < len; j++) ss[j] = sv_cpu_store(c->bf16, ss[j] + ps[j]);
        sv_cpu_narrow(c, x, xo + o, ss, len);
    });
}

sv_status sv_cpu_embed_fwd(sv_backend *be, void *x_, const void *patch_out_, const void *cls_, const void *pos_, int B,
                           int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *x = x_;
    const float *po = patch_out_, *cls = cls_, *pos = pos_;
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        int b = bt / T, t = bt % T;
        if (c->act16) {
            embed_row16(c, x_, patch_out_, cls_, pos_, b, t, T, D);
            continue;
        }
        float *xr = x + (size_t)bt * D;
        /* with a class token, token 0 is cls and token t is patch t-1; without, token t is patch t */
        const float *src = !cls ? po + (size_t)bt * D : t == 0 ? cls : po + ((size_t)b * (T - 1) + t - 1) * D;
        const float *pr = pos + (size_t)t * D;
        for (int d = 0; d < D; d++) xr[d] = sv_cpu_store(bf, src[d] + pr[d]);
    }
    return SV_OK;
}

/* act16 position t of embed_bwd: dp (D) = d_pos[t], the same b order as the fp32 loop. */
static void embed_bwd_pos16(const sv_cpu_backend *c, void *dpo, float *d_cls, float *dp, const void *dx, int B, int t,
                            int T, int D) {
    _Alignas(64) float gs[SV_CPU_CHUNK], os[SV_CPU_CHUNK];
    for (int b = 0; b < B; b++) {
        const size_t go = ((size_t)b * T + t) * D;
        /* where the gradient goes: d_patch_out row (SIZE_MAX: d_cls) */
        const size_t oo = !d_cls ? go : t == 0 ? SIZE_MAX : ((size_t)b * (T - 1) + t - 1) * D;
        SV_CPU_CHUNKS(0, (size_t)D, o, len, {
            sv_cpu_widen(c, gs, dx, go + o, len);
            for (size_t j = 0; j < len; j++) dp[o + j] += gs[j];
            if (oo == SIZE_MAX) {
                for (size_t j = 0; j < len; j++) d_cls[o + j] += gs[j];
            } else {
                for (size_t j = 0; j < len; j++) os[j] = sv_cpu_store(c->bf16, gs[j]);
                sv_cpu_narrow(c, dpo, oo + o, os, len);
            }
        });
    }
}

sv_status sv_cpu_embed_bwd(sv_backend *be, void *d_patch_out_, float *d_cls, float *d_pos, const void *dx_, int B,
                           int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *dpo = d_patch_out_;
    const float *dx = dx_;
    const int bf = c->bf16;
    /* per position t (one thread each): d_pos[t] (and d_cls for t = 0) summed over b in
     * order, so the result does not depend on the thread count */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int t = 0; t < T; t++) {
        float *dp = d_pos + (size_t)t * D;
        if (c->act16) {
            embed_bwd_pos16(c, d_patch_out_, d_cls, dp, dx_, B, t, T, D);
            continue;
        }
        for (int b = 0; b < B; b++) {
            const float *g = dx + ((size_t)b * T + t) * D;
            for (int d = 0; d < D; d++) dp[d] += g[d];
            if (!d_cls) {
                float *o = dpo + ((size_t)b * T + t) * D;
                for (int d = 0; d < D; d++) o[d] = sv_cpu_store(bf, g[d]);
            } else if (t == 0) {
                for (int d = 0; d < D; d++) d_cls[d] += g[d];
            } else {
                float *o = dpo + ((size_t)b * (T - 1) + t - 1) * D;
                for (int d = 0; d < D; d++) o[d] = sv_cpu_store(bf, g[d]);
            }
        }
    }
    return SV_OK;
}

sv_status sv_cpu_cls_select(sv_backend *be, void *out_, const void *x_, int B, int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_;
    const int bf = c->bf16;
    if (c->act16) {
        _Alignas(64) float xs[SV_CPU_CHUNK];
        for (int b = 0; b < B; b++)
            SV_CPU_CHUNKS(0, (size_t)D, o, len, {
                sv_cpu_widen(c, xs, x_, (size_t)b * T * D + o, len);
                for (size_t j = 0; j < len; j++) xs[j] = sv_cpu_store(bf, xs[j]);
                sv_cpu_narrow(c, out_, (size_t)b * D + o, xs, len);
            });
        return SV_OK;
    }
    for (int b = 0; b < B; b++) {
        const float *src = x + (size_t)b * T * D;
        float *dst = out + (size_t)b * D;
        for (int d = 0; d < D; d++) dst[d] = sv_cpu_store(bf, src[d]);
    }
    return SV_OK;
}

sv_status sv_cpu_cls_select_bwd(sv_backend *be, void *dx_, const void *d_out_, int B, int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *dx = dx_;
    const float *g = d_out_;
    const int bf = c->bf16;
    if (c->act16) {
        _Alignas(64) float xs[SV_CPU_CHUNK], gs[SV_CPU_CHUNK];
        for (int b = 0; b < B; b++)
            SV_CPU_CHUNKS(0, (size_t)D, o, len, {
                sv_cpu_widen(c, xs, dx_, (size_t)b * T * D + o, len);
                sv_cpu_widen(c, gs, d_out_, (size_t)b * D + o, len);
                for (size_t j = 0; j < len; j++) xs[j] = sv_cpu_store(bf, xs[j] + gs[j]);
                sv_cpu_narrow(c, dx_, (size_t)b * T * D + o, xs, len);
            });
        return SV_OK;
    }
    for (int b = 0; b < B; b++) {
        float *dst = dx + (size_t)b * T * D;
        const float *src = g + (size_t)b * D;
        for (int d = 0; d < D; d++) dst[d] = sv_cpu_store(bf, dst[d] + src[d]);
    }
    return SV_OK;
}
