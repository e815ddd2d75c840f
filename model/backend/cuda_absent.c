/* Linked instead of cuda/ when the build has no CUDA backend (SHARDVIT_CUDA=OFF). */
#include "model/backend/backend_impl.h"

static sv_status no_cuda(void) {
    return SV_FAIL(SV_ERR_UNSUPPORTED, "this shardvit build has no CUDA backend (configure with -DSHARDVIT_CUDA=ON)");
}

sv_status sv_cuda_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    (void)cfg;
    *out = NULL;
    return no_cuda();
}

int sv_cuda_backend_available(void) { return 0; }
