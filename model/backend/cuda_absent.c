/* Linked instead of cuda_loaded.c (the loader of the CUDA module) when the build has no CUDA
 * backend (SHARDVIT_CUDA=OFF). */
#include <string.h>

#include "model/backend/backend_impl.h"
#include "model/backend/gpu_info.h"

static sv_status no_cuda(void) {
    return SV_FAIL(SV_ERR_UNSUPPORTED, "this shardvit build has no CUDA backend (configure with -DSHARDVIT_CUDA=ON)");
}

sv_status sv_cuda_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    (void)cfg;
    *out = NULL;
    return no_cuda();
}

int sv_cuda_backend_available(void) { return 0; }

void sv_gpu_info_query(int device, sv_gpu_info *out) {
    (void)device;
    memset(out, 0, sizeof *out);
}
