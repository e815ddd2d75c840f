/* CPU backend: patch extraction, token assembly (cls + pos), class-token pooling. */
#include "model/backend/cpu/cpu_backend.h"

sv_status sv_cpu_im2col(sv_backend *be, void *patches_, const float *img, int B, int C, int Himg, int Wimg, int p) {
    const sv_cpu_backend *c = sv_cpu(be);
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

sv_status sv_cpu_embed_fwd(sv_backend *be, void *x_, const void *patch_out_, const void *cls_, const void *pos_, int B,
                           int T, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *x = x_;
    const float *po = patch_out_, *cls = cls_, *pos = pos_;
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        int b = bt / T, t = bt % T;
        float *xr = x + (size_t)bt * D;
        /* with a class token, token 0 is cls and token t is patch t-1; without, token t is patch t */
        const float *src = !cls ? po + (size_t)bt * D : t == 0 ? cls : po + ((size_t)b * (T - 1) + t - 1) * D;
        const float *pr = pos + (size_t)t * D;
        for (int d = 0; d < D; d++) xr[d] = sv_cpu_store(bf, src[d] + pr[d]);
    }
    return SV_OK;
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
    for (int b = 0; b < B; b++) {
        float *dst = dx + (size_t)b * T * D;
        const float *src = g + (size_t)b * D;
        for (int d = 0; d < D; d++) dst[d] = sv_cpu_store(bf, dst[d] + src[d]);
    }
    return SV_OK;
}
