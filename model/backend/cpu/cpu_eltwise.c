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

sv_status sv_cpu_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    if (c->act16)
        CPU_SPLIT(c, n, 16 * n, gelu_fwd16(c, out, x, a, b));
    else
        CPU_SPLIT(c, n, 16 * n, c->k->gelu(c->bf16, (float *)out + a, (const float *)x + a, b - a));
    return SV_OK;
}

sv_status sv_cpu_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    if (c->act16)
        CPU_SPLIT(c, n, 16 * n, gelu_bwd16(c, d_x, d_out, x, a, b));
    else
        CPU_SPLIT(c, n, 16 * n,
                  c->k->gelu_bwd(c->bf16, (float *)d_x + a, (const float *)d_out + a, (const float *)x + a, b - a));
    return SV_OK;
}

sv_status sv_cpu_residual_add(sv_backend *be, void *out, const void *x, const void *y, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    if (c->act16)
        CPU_SPLIT(c, n, n, if (b > a) add16(c, out, x, y, a, b));
    else
        CPU_SPLIT(c, n, n,
                  if (b > a)
                      c->k->add_store(c->bf16, (float *)out + a, (const float *)x + a, (const float *)y + a, b - a));
    return SV_OK;
}
