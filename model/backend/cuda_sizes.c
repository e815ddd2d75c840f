/* The CUDA backend's sizes (sv_be_sizes_query for SV_DEVICE_CUDA), in every build: they are pure
 * functions of the configuration, so `shardvit plan --device cuda` and the step-time simulator
 * size GPU runs on machines without CUDA too. */
#include "model/backend/backend_impl.h"

#include <string.h>

/* pat in name as a whole word: at the start or after a space, followed by the end, a space or '-'. */
static int has_word(const char *name, const char *pat) {
    const size_t L = strlen(pat);
    for (const char *p = strstr(name, pat); p; p = strstr(p + 1, pat))
        if ((p == name || p[-1] == ' ') && (p[L] == 0 || p[L] == ' ' || p[L] == '-')) return 1;
    return 0;
}

double sv_cuda_peak_flops_for(const char *name, int bf16) {
    static const struct {
        const char *pat;
        double bf16, fp32;
    } table[] = {
        /* the more specific names first; 0: a variant not in the table (unknown, not a wrong figure) */
        {"H100 NVL", 0.0, 0.0},    {"H100 PCIe", 756e12, 51.2e12}, {"H100", 989.4e12, 66.9e12}, /* SXM */
        {"H200 NVL", 0.0, 0.0},    {"H200", 989.4e12, 66.9e12},                                 /* SXM */
        {"A100", 312e12, 19.5e12}, {"L40S", 362.05e12, 91.6e12},   {"RTX 4090", 165.2e12, 82.6e12},
    };
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (has_word(name, table[i].pat)) return bf16 ? table[i].bf16 : table[i].fp32;
    return 0.0;
}

/* sv_be_sizes_query for CUDA: compute buffers are stored in the compute dtype; both attention
 * paths save the (B,H,T) f32 softmax statistics, and the fallback also needs (B,H,T) f32
 * scratch for the dO.O row terms. Pure: no device is touched (the planner calls it). */
sv_status sv_cuda_sizes(const sv_backend_config *cfg, int B, int T, int D, int H, sv_be_sizes *out) {
    (void)D;
    if (cfg->compute_dtype != SV_F32 && cfg->compute_dtype != SV_BF16)
        return SV_FAIL(SV_ERR_INVALID, "CUDA backend: unknown compute dtype %d", (int)cfg->compute_dtype);
    out->compute_elem = sv_dtype_size(cfg->compute_dtype);
    out->attention_saved = (size_t)B * H * T * sizeof(float);
    out->attention_scratch = (size_t)B * H * T * sizeof(float);
    return SV_OK;
}
