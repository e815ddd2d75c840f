/* The CUDA backend's sizes (sv_be_sizes_query for SV_DEVICE_CUDA), in every build: they are pure
 * functions of the configuration, so `shardvit plan --device cuda` and the step-time simulator
 * size GPU runs on machines without CUDA too. */
#include "model/backend/backend_impl.h"

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
