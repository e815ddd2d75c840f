/* CPU backend: the standalone element-wise ops (GELU, residual add). The GELUs run one loop for
 * both storages: each worker's range in stack-sized chunks, read and written through sv_cpu_rd /
 * sv_cpu_wr (cpu_backend.h: the buffers themselves with fp32 storage; with bf16 storage the
 * inputs widened, the same kernel, the output narrowed). The residual add with bf16 storage is
 * one pass over the bf16 buffers (the kernel table's add16: the same bits). Chunks never change
 * a result (the kernels are element-wise). */
#include "model/backend/cpu/cpu_backend.h"

/* One worker's range [a, b) (cpu_backend.h SV_CPU_CHUNKS). */
static void gelu_fwd_range(const sv_cpu_backend *c, void *out, const void *x, size_t a, size_t b) {
    _Alignas(64) float xs[SV_CPU_CHUNK], os[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(a, b, o, len, {
        float *y = sv_cpu_wr(c, os, out, o, len, 0);
        c->k->gelu(c->bf16, y, sv_cpu_rd(c, xs, x, o, len), len);
        sv_cpu_wr_end(c, out, o, y, len);
    });
}
static void gelu_bwd_range(const sv_cpu_backend *c, void *d_x, const void *d_out, const void *x, size_t a, size_t b) {
    _Alignas(64) float ds[SV_CPU_CHUNK], xs[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(a, b, o, len, { /* d_x may alias d_out: each chunk is read before it is written */
                                  float *dx = sv_cpu_wr(c, ds, d_x, o, len, 0);
                                  c->k->gelu_bwd(c->bf16, dx, sv_cpu_rd(c, ds, d_out, o, len),
                                                 sv_cpu_rd(c, xs, x, o, len), len);
                                  sv_cpu_wr_end(c, d_x, o, dx, len);
    });
}
static void add_range(const sv_cpu_backend *c, void *out, const void *x, const void *y, size_t a, size_t b) {
    if (c->act16) { /* the same bits in one pass over the bf16 buffers */
        c->k->add16((uint16_t *)out + a, (const uint16_t *)x + a, (const uint16_t *)y + a, b - a);
        return;
    }
    _Alignas(64) float xs[SV_CPU_CHUNK], ys[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(a, b, o, len, {
        float *z = sv_cpu_wr(c, xs, out, o, len, 0);
        c->k->add_store(c->bf16, z, sv_cpu_rd(c, xs, x, o, len), sv_cpu_rd(c, ys, y, o, len), len);
        sv_cpu_wr_end(c, out, o, z, len);
    });
}

sv_status sv_cpu_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    CPU_SPLIT(c, n, 16 * n, gelu_fwd_range(c, out, x, a, b));
    return SV_OK;
}

sv_status sv_cpu_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    CPU_SPLIT(c, n, 16 * n, gelu_bwd_range(c, d_x, d_out, x, a, b));
    return SV_OK;
}

sv_status sv_cpu_residual_add(sv_backend *be, void *out, const void *x, const void *y, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    CPU_SPLIT(c, n, n, add_range(c, out, x, y, a, b));
    return SV_OK;
}
