/* What a result's provenance records of the GPU software stack (app/provenance.h): the device's
 * name, the driver and runtime versions, and the cuDNN and cuBLASLt versions this process
 * loaded (their *GetVersion functions, i.e. the libraries actually loaded, not the headers).
 * Builds without the CUDA backend link the stub in cuda_absent.c, which reports present = 0. */
#ifndef SV_MODEL_BACKEND_GPU_INFO_H
#define SV_MODEL_BACKEND_GPU_INFO_H

#include <stddef.h>

typedef struct sv_gpu_info {
    int present;             /* 1: a CUDA device `device` was queried */
    char name[256];          /* cudaDeviceProp.name */
    int driver_version;      /* cudaDriverGetVersion: 1000 * major + 10 * minor (e.g. 12040) */
    int runtime_version;     /* cudaRuntimeGetVersion, same encoding */
    size_t cudnn_version;    /* cudnnGetVersion, e.g. 90100 */
    size_t cublaslt_version; /* cublasLtGetVersion, e.g. 120402 */
} sv_gpu_info;

/* Query device `device`; present = 0 (and the rest zero) when there is no such device or no CUDA
 * backend in this build. Never fails. */
void sv_gpu_info_query(int device, sv_gpu_info *out);

#endif
