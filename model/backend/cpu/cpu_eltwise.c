/* CPU backend: the standalone element-wise ops (GELU, residual add). With bf16 storage (act16)
 * each worker's range runs in stack chunks: widen the inputs, the same kernel, narrow the output. */
#include "model/backend/cpu/cpu_backend.h"

/* act16 bodies of one worker's range [a, b) (cpu_backend.h SV_CPU_CHUNKS). */
static void gelu_fwd16(const sv_cpu_backend *c, void *out, const void *x, size_t a, size_t b) {
    _Alignas(64) float xs[SV_CPU_CHUNK], os[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(a, b, o, len, {
        c->k->gelu(c->bf16, os, sv_cpu_widen(c, xs, x, o, len), len);
        sv_cpu_narrow(c, out, o, os, len);
    });
}
static void gelu_bwd16(const sv_cpu_backend *c, void *d_x, const void *d_out, const void *x, size_t a, size_t b) {
    _Alignas(64) float ds[SV_CPU_CHUNK], xs[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(a, b, o, len, { /* d_x may alias d_out: each chunk is read before it is written */
                                  c->k->gelu_bwd(c->bf16, ds, sv_cpu_widen(c, ds, d_out, o, len),
                                                 sv_cpu_widen(c, xs, x, o, len), len);
                                  sv_cpu_narrow(c, d_x, o, ds, len);
    });
}
static void add16(const sv_cpu_backend *c, void *out, const void *x, const void *y, size_t a, size_t b) {
    _Alignas(64) float xs[SV_CPU_CHUNK], ys[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(a, b, o, len, {
        c->k->add_store(c->bf16, xs, sv_cpu_widen(c, xs, x, o, len), sv_cpu_widen(c, ys, y, o, len), len);
        sv_cpu_narrow(c, out, o, xs, len);
    });
}

sv_status sv_cpu_gelu_fwd(sv_backend *be, void *out_, const void *x_, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_;
    int nt = sv_cpu_nt(c, 16 * n);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; t++) {
        size_t a, b;
        sv_cpu_range(n, nt, t, &a, &b);
        if (c->act16)
            gelu_fwd16(c, out_, x_, a, b);
        else
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
        if (c->act16)
            gelu_bwd16(c, d_x_, d_out_, x_, a, b);
        else
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
        if (i1 > i0 && c->act16)
            add16(c, out_, a_, b_, i0, i1);
        else if (i1 > i0)
            c->k->add_store(c->bf16, out + i0, a + i0, b + i0, i1 - i0);
    }
    return SV_OK;
}
