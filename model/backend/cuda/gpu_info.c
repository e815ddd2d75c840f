/* sv_gpu_info_query for CUDA builds (model/backend/gpu_info.h) and the module's library report
 * (core/cuda_module.h sv_cuda_libs). */
#include "model/backend/gpu_info.h"
#include "core/cuda_module.h"
#include "model/backend/cuda/cuda_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <string.h>

/* The library versions this process loaded (their *GetVersion functions). */
static void lib_versions(int *runtime, int *driver, size_t *cudnn, size_t *cublaslt) {
    cudaRuntimeGetVersion(runtime);
    cudaDriverGetVersion(driver);
    *cudnn = cudnnGetVersion();
    *cublaslt = cublasLtGetVersion();
}

void sv_gpu_info_query(int device, sv_gpu_info *out) {
    memset(out, 0, sizeof *out);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n) {
        cudaGetLastError(); /* clear the sticky error of a failed query */
        return;
    }
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return;
    out->present = 1;
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    lib_versions(&out->runtime_version, &out->driver_version, &out->cudnn_version, &out->cublaslt_version);
}

/* sv_cuda_module.libs (module.c): what this module loaded, with or without a device (the NCCL
 * version is the table's comm_nccl_version). */
void sv_cuda_libs_query(sv_cuda_libs *out) {
    memset(out, 0, sizeof *out);
    lib_versions(&out->runtime_version, &out->driver_version, &out->cudnn_version, &out->cublaslt_version);
    cudaError_t e = cudaGetDeviceCount(&out->devices);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky error of a failed query */
        out->devices = 0;
        snprintf(out->no_device, sizeof out->no_device, "%s", cudaGetErrorString(e));
    } else if (out->devices == 0)
        snprintf(out->no_device, sizeof out->no_device, "the device count is 0");
}
