/* The CUDA module's one exported symbol (core/cuda_module.h): the table through which the program
 * reaches the CUDA backend of this directory and the NCCL transport of fsdp/cuda/. Everything else
 * in libshardvit_cuda.so is compiled with hidden visibility and linked with a version script that
 * keeps it local (model/backend/cuda/CMakeLists.txt). */
#include "core/cuda_module.h"
#include "fsdp/comm_impl.h"
#include "model/backend/backend_impl.h"
#include "model/backend/cuda/cuda_backend.h"
#include "model/backend/gpu_info.h"

static const sv_cuda_module table = {
    .abi = SV_CUDA_MODULE_ABI,
    .build_id = SV_CUDA_BUILD_ID,
    .backend_create = sv_cuda_backend_create,
    .backend_available = sv_cuda_backend_available,
    .gpu_info_query = sv_gpu_info_query,
    .comm_nccl_create = sv_comm_nccl_create,
    .comm_nccl_version = sv_comm_nccl_version,
    .libs = sv_cuda_libs_query,
};

__attribute__((visibility("default"))) const sv_cuda_module *sv_cuda_module_entry(void) { return &table; }
