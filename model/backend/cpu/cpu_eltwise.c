/* CPU backend: the standalone element-wise ops (GELU, residual add). */
#include "model/backend/cpu/cpu_backend.h"

sv_status sv_cpu_gelu_fwd(sv_backend *be, void *out_, const void *x_, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_;
    int nt = sv_cpu_nt(c, 16 * n);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; t++) {
        size_t a, b;
        sv_cpu_range(n, nt, t, &a, &b);
        c->k->gelu(c->bf16, out + a, x + a, b - a);
    }
    return SV_OK;
}

sv_status sv_cpu_gelu_bwd(sv_backend *be, void *d_x_, const void *d_out_, const void *x_, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_x = d_x_;
    const float *d_out = d_out_, *x = x_;
    int nt = sv_cpu_nt(c, 16 * n);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; t++) {
        size_t a, b;
        sv_cpu_range(n, nt, t, &a, &b);
        c->k->gelu_bwd(c->bf16, d_x + a, d_out + a, x + a, b - a);
    }
    return SV_OK;
}

sv_status sv_cpu_residual_add(sv_backend *be, void *out_, const void *a_, const void *b_, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *a = a_, *b = b_;
    const int nt = sv_cpu_nt(c, n);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t i0, i1;
        sv_cpu_range(n, nt, t, &i0, &i1);
        if (i1 > i0) c->k->add_store(c->bf16, out + i0, a + i0, b + i0, i1 - i0);
    }
    return SV_OK;
}
