/* Linked instead of comm_nccl_absent.c in CUDA builds (fsdp/cuda/CMakeLists.txt): the NCCL
 * transport's entry points, answered by the CUDA module (core/cuda_module.h), loaded when first
 * needed. */
#include "core/cuda_module.h"
#include "fsdp/comm_impl.h"

sv_status sv_comm_nccl_create(const sv_comm_config *cfg, sv_comm **out) {
    const sv_cuda_module *m;
    *out = NULL;
    SV_TRY(sv_cuda_module_get(&m));
    return m->comm_nccl_create(cfg, out);
}

int sv_comm_nccl_version(void) {
    const sv_cuda_module *m;
    if (sv_cuda_module_get(&m) != SV_OK) {
        sv_err_clear();
        return 0;
    }
    return m->comm_nccl_version();
}
