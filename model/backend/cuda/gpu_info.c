/* sv_gpu_info_query for CUDA builds (model/backend/gpu_info.h). */
#include "model/backend/gpu_info.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <string.h>

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
    cudaDriverGetVersion(&out->driver_version);
    cudaRuntimeGetVersion(&out->runtime_version);
    out->cudnn_version = cudnnGetVersion();
    out->cublaslt_version = cublasLtGetVersion();
}
