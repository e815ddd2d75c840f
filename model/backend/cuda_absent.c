/* Linked instead of cuda/ when the build has no CUDA backend (SHARDVIT_CUDA=OFF). */
#include "model/backend/backend_impl.h"

sv_status sv_cuda_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    (void)cfg;
    *out = NULL;
    return SV_FAIL(SV_ERR_UNSUPPORTED,
                   "this shardvit build has no CUDA backend (configure with -DSHARDVIT_CUDA=ON)");
}

int sv_cuda_backend_available(void) { return 0; }

sv_status sv_cuda_backend_create_sizing(const sv_backend_config *cfg, sv_backend **out) {
    return sv_cuda_backend_create(cfg, out);
}
