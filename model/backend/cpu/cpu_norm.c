/* CPU backend: LayerNorm forward/backward and fused softmax cross-entropy. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

/* Row sums with 16 independent lanes: the compiler vectorises this without reassociating
 * (strict IEEE order per lane), and the result depends only on the row. */
static float row_sum(const float *x, int n) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += x[i + j];
    for (; i < n; i++) acc[i & 15] += x[i];
    for (int w = 8; w >= 1; w >>= 1)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

static float row_sumsq_centered(const float *x, int n, float mean) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float d = x[i + j] - mean;
            acc[j] += d * d;
        }
    for (; i < n; i++) {
        float d = x[i] - mean;
        acc[i & 15] += d * d;
    }
    for (int w = 8; w >= 1; w >>= 1)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

sv_status sv_cpu_layernorm_fwd(sv_backend *be, void *out_, float *mean, float *rstd,
                               const void *x_, const void *w_, const void *b_, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_, *w = w_, *b = b_;
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M * C * 4)) schedule(static)
    for (int m = 0; m < M; m++) {
        const float *xr = x + (size_t)m * C;
        float *o = out + (size_t)m * C;
        float mu = row_sum(xr, C) / (float)C;
        float var = row_sumsq_centered(xr, C, mu) / (float)C; /* biased, as torch */
        float rs = 1.0f / sqrtf(var + SV_LN_EPS);
        for (int i = 0; i < C; i++) o[i] = sv_cpu_store(bf, (xr[i] - mu) * rs * w[i] + b[i]);
        mean[m] = mu;
        rstd[m] = rs;
    }
    return SV_OK;
}

/* d_x of one row, accumulated into d_x:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * w,  xhat = (x - mean) * rstd */
static void layernorm_bwd_row(int bf, float *dxr, const float *dy, const float *xr,
                              const float *w, float mu, float rs, int C) {
    float a1[16] = {0}, a2[16] = {0};
    int i = 0;
    for (; i + 16 <= C; i += 16)
        for (int j = 0; j < 16; j++) {
            float g = dy[i + j] * w[i + j];
            a1[j] += g;
            a2[j] += g * ((xr[i + j] - mu) * rs);
        }
    for (; i < C; i++) {
        float g = dy[i] * w[i];
        a1[i & 15] += g;
        a2[i & 15] += g * ((xr[i] - mu) * rs);
    }
    for (int s = 8; s >= 1; s >>= 1)
        for (int j = 0; j < s; j++) {
            a1[j] += a1[j + s];
            a2[j] += a2[j + s];
        }
    float mg = a1[0] / (float)C, mgx = a2[0] / (float)C;
    for (i = 0; i < C; i++) {
        float xh = (xr[i] - mu) * rs;
        dxr[i] = sv_cpu_store(bf, dxr[i] + rs * (dy[i] * w[i] - mg - xh * mgx));
    }
}

/* dw/db for columns [c0, c1), rows summed in row order (same bits for any column split). */
static void layernorm_bwd_params(float *dw, float *db, const float *dy, const float *x,
                                 const float *mean, const float *rstd, int M, int C, int c0,
                                 int c1) {
    for (int m = 0; m < M; m++) {
        const float *dyr = dy + (size_t)m * C, *xr = x + (size_t)m * C;
        float mu = mean[m], rs = rstd[m];
        for (int i = c0; i < c1; i++) {
            dw[i] += dyr[i] * ((xr[i] - mu) * rs);
            db[i] += dyr[i];
        }
    }
}

sv_status sv_cpu_layernorm_bwd(sv_backend *be, void *d_x_, float *dw, float *db,
                               const void *d_out_, const void *x_, const void *w_,
                               const float *mean, const float *rstd, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_x = d_x_;
    const float *dy = d_out_, *x = x_, *w = w_;
    const int bf = c->bf16;
    int nt = sv_cpu_nt(c, (size_t)M * C * 4);
    if (nt == 1) {
        for (int m = 0; m < M; m++) {
            size_t off = (size_t)m * C;
            layernorm_bwd_row(bf, d_x + off, dy + off, x + off, w, mean[m], rstd[m], C);
            layernorm_bwd_params(dw, db, dy + off, x + off, mean + m, rstd + m, 1, C, 0, C);
        }
        return SV_OK;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int m = 0; m < M; m++) {
        size_t off = (size_t)m * C;
        layernorm_bwd_row(bf, d_x + off, dy + off, x + off, w, mean[m], rstd[m], C);
    }
    int ntc = C >= 32 * nt ? nt : 1;
#pragma omp parallel for num_threads(ntc) schedule(static, 1)
    for (int t = 0; t < ntc; t++) {
        int nv = (C + 15) / 16;
        int c0 = 16 * (int)((long)nv * t / ntc), c1 = 16 * (int)((long)nv * (t + 1) / ntc);
        if (c1 > C) c1 = C;
        layernorm_bwd_params(dw, db, dy, x, mean, rstd, M, C, c0, c1);
    }
    return SV_OK;
}

sv_status sv_cpu_softmax_xent(sv_backend *be, float *losses, void *d_logits_, const void *logits_,
                              const int32_t *labels, const float *soft_targets, int B, int K,
                              float smoothing, float grad_scale) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_logits = d_logits_;
    const float *logits = logits_;
    const int bf = c->bf16;
    if (labels)
        for (int b = 0; b < B; b++)
            if (labels[b] < 0 || labels[b] >= K)
                return SV_FAIL(SV_ERR_INVALID,
                               "softmax_xent: label %d of sample %d outside [0, %d)", (int)labels[b],
                               b, K);
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B * K * 8)) schedule(static)
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * K;
        const float *st = soft_targets ? soft_targets + (size_t)b * K : NULL;
        float mx = z[0];
        for (int k = 1; k < K; k++) mx = z[k] > mx ? z[k] : mx;
        double s = 0.0;
        for (int k = 0; k < K; k++) s += (double)expf(z[k] - mx);
        double lse = (double)mx + log(s);
        double loss = 0.0;
        for (int k = 0; k < K; k++) {
            float t = st ? st[k] : sv_smooth_target(k, labels[b], smoothing, K);
            loss += (double)t * (lse - (double)z[k]);
        }
        losses[b] = (float)loss;
        if (d_logits) {
            float *d = d_logits + (size_t)b * K;
            float inv = (float)(1.0 / s);
            for (int k = 0; k < K; k++) {
                float t = st ? st[k] : sv_smooth_target(k, labels[b], smoothing, K);
                d[k] = sv_cpu_store(bf, (expf(z[k] - mx) * inv - t) * grad_scale);
            }
        }
    }
    return SV_OK;
}
