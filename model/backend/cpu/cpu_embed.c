/* CPU backend: patch extraction, token assembly (cls + registers + pos), class-token pooling. Compute
 * buffers are read and written through sv_cpu_ld / sv_cpu_st (cpu_backend.h), so one loop serves
 * fp32 and bf16 storage. */
#include "model/backend/cpu/cpu_backend.h"

sv_status sv_cpu_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Himg, int Wimg, int p) {
    const sv_cpu_backend *c = sv_cpu(be);
    const int gh = Himg / p, gw = Wimg / p, P = gh * gw;
    const size_t cols = (size_t)C * p * p;
    /* one output row = one patch, columns (c, ky, kx): each (c, ky) is a contiguous run of p
     * pixels in the image row */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *P *cols)) schedule(static)
    for (int bp = 0; bp < B * P; bp++) {
        int b = bp / P, pi = bp % P, py = pi / gw, px = pi % gw;
        const size_t row = (size_t)bp * cols;
        for (int ch = 0; ch < C; ch++)
            for (int ky = 0; ky < p; ky++) {
                const float *src = img + (((size_t)b * C + ch) * Himg + (size_t)py * p + ky) * Wimg + (size_t)px * p;
                const size_t dst = row + ((size_t)ch * p + ky) * p;
                for (int kx = 0; kx < p; kx++) sv_cpu_st(c, patches, dst + kx, src[kx]);
            }
    }
    return SV_OK;
}

sv_status sv_cpu_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                           const void *pos, int no_embed_class, int B, int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    const int c1 = cls ? 1 : 0, P = c1 + R; /* prefix tokens: cls (if any), then the registers */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        int b = bt / T, t = bt % T;
        /* token t < c1 is cls, c1 <= t < P register t - c1, t >= P patch t - P */
        const void *src = t < c1 ? cls : t < P ? reg : patch_out;
        const size_t so = t < c1 ? 0 : t < P ? (size_t)(t - c1) * D : ((size_t)b * (T - P) + (size_t)(t - P)) * D;
        const size_t xo = (size_t)bt * D;
        if (no_embed_class && t < P) { /* a prefix token without a position */
            for (int d = 0; d < D; d++) sv_cpu_st(c, x, xo + d, sv_cpu_ld(c, src, so + d));
            continue;
        }
        const size_t po = (size_t)(no_embed_class ? t - P : t) * D;
        for (int d = 0; d < D; d++) sv_cpu_st(c, x, xo + d, sv_cpu_ld(c, src, so + d) + sv_cpu_ld(c, pos, po + d));
    }
    return SV_OK;
}

sv_status sv_cpu_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                           int no_embed_class, const void *dx, int B, int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    const int c1 = d_cls ? 1 : 0, P = c1 + R;
    /* per position t (one thread each): d_pos[t] (and d_cls / d_reg for a prefix token) summed
     * over b in order, so the result does not depend on the thread count; with no_embed_class
     * the prefix tokens have no pos_embed row and patch t - P has row t - P */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int t = 0; t < T; t++) {
        float *dp = no_embed_class && t < P ? NULL : d_pos + (size_t)(no_embed_class ? t - P : t) * D;
        float *dpre = t < c1 ? d_cls : t < P ? d_reg + (size_t)(t - c1) * D : NULL;
        for (int b = 0; b < B; b++) {
            const size_t g = ((size_t)b * T + t) * D;
            if (dp)
                for (int d = 0; d < D; d++) dp[d] += sv_cpu_ld(c, dx, g + d);
            if (dpre) {
                for (int d = 0; d < D; d++) dpre[d] += sv_cpu_ld(c, dx, g + d);
            } else {
                const size_t o = ((size_t)b * (T - P) + (size_t)(t - P)) * D;
                for (int d = 0; d < D; d++) sv_cpu_st(c, d_patch_out, o + d, sv_cpu_ld(c, dx, g + d));
            }
        }
    }
    return SV_OK;
}

sv_status sv_cpu_cls_select(sv_backend *be, void *out, const void *x, int B, int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) sv_cpu_st(c, out, (size_t)b * D + d, sv_cpu_ld(c, x, (size_t)b * T * D + d));
    return SV_OK;
}

sv_status sv_cpu_cls_select_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            const size_t i = (size_t)b * T * D + d;
            sv_cpu_st(c, dx, i, sv_cpu_ld(c, dx, i) + sv_cpu_ld(c, d_out, (size_t)b * D + d));
        }
    return SV_OK;
}
