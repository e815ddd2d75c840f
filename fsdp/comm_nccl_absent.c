/* Linked when the build has no NCCL transport (SHARDVIT_CUDA=OFF, or fsdp/cuda/comm_nccl.c not
 * present); fsdp/CMakeLists.txt drops this file when comm_nccl_loaded.c forwards to the real one
 * in the CUDA module (core/cuda_module.h). */
#include "fsdp/comm_impl.h"

sv_status sv_comm_nccl_create(const sv_comm_config *cfg, sv_comm **out) {
    (void)cfg;
    *out = NULL;
    return SV_FAIL(SV_ERR_UNSUPPORTED,
                   "NCCL comm requested, but this build has no CUDA/NCCL support "
                   "(configure with -DSHARDVIT_CUDA=ON on a machine with nvcc and NCCL)");
}

int sv_comm_nccl_version(void) { return 0; }
