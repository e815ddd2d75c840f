/* The CUDA module: the CUDA backend (model/backend/cuda/) and the NCCL transport (fsdp/cuda/) as
 * one shared object, libshardvit_cuda.so, that a CUDA-enabled build's programs load with dlopen
 * the first time something needs CUDA (docs/gpu.md "The CUDA module").
 *
 * Why: linked into the program, the CUDA runtime, cuBLAS(Lt), cuDNN and NCCL run their library
 * initialisers before main in every process: 85 ms of CPU and 164 MB resident per process on the
 * AMD EPYC Zen 4 (shardvit --version: 4.5 ms and 5.6 MB without them), paid by every CPU run and
 * every rank of a CUDA-enabled build.
 *
 * The contract between program and module:
 *  - the module exports one symbol, SV_CUDA_MODULE_ENTRY, a function returning the table below;
 *    a module whose table has another abi (SV_CUDA_MODULE_ABI) or another build_id (the MD5 of
 *    the build directory, SV_CUDA_BUILD_ID: the programs and the module of one build know each
 *    other's structures, those of another build may not) is refused, never called;
 *  - every other symbol of the module is local to it; the functions of the program it calls, all
 *    sv_core's (status, log, clock, GPU choice), it finds in the program, whose executables are
 *    linked with their symbols exported (CMAKE_ENABLE_EXPORTS in CUDA builds) and keep them
 *    linked (module_needs in cuda_module.c); pure helpers of other libraries it compiles in
 *    (fsdp/comm_base.c, model/backend/cuda_peak.c); tests/gpu/cuda_module.sh checks both ends;
 *  - the program reaches the module through model/backend/cuda_loaded.c
 *    (sv_cuda_backend_create / _available, sv_gpu_info_query), fsdp/comm_nccl_loaded.c
 *    (sv_comm_nccl_create / _version) and `shardvit version --cuda` (app/cmd_version.c); builds
 *    without CUDA link the *_absent.c stubs instead;
 *  - the libraries' initialisers run when the module is loaded, after main installed its signal
 *    handlers: a disposition they change (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE,
 *    SIGXFSZ) is put back, with a warning.
 *
 * Where it is looked for: $SHARDVIT_CUDA_MODULE when set (a path; a bare name is searched as
 * below), else "libshardvit_cuda.so" through the dynamic loader's search: LD_LIBRARY_PATH, then
 * the program's run path: the build tree's lib/ (CMAKE_BUILD_RPATH), an archive's ../lib
 * (tests/gpu/pack.sh). (The one variable a library reads: docs/environment.md.) */
#ifndef SV_CORE_CUDA_MODULE_H
#define SV_CORE_CUDA_MODULE_H

#include <stddef.h>

#include "core/status.h"

struct sv_backend_config;
struct sv_backend;
struct sv_gpu_info;
struct sv_comm_config;
struct sv_comm;

#define SV_CUDA_MODULE_ABI 1
#define SV_CUDA_MODULE_ENTRY "sv_cuda_module_entry"
#define SV_CUDA_MODULE_FILE "libshardvit_cuda.so"
#ifndef SV_CUDA_BUILD_ID /* set by CMake on the two files that compare it (builds with CUDA) */
#define SV_CUDA_BUILD_ID "none"
#endif

/* What the module loaded, for `shardvit version`: the libraries' own *GetVersion answers (the
 * libraries actually loaded, not the headers), and the devices the runtime sees (the NCCL version
 * is the table's comm_nccl_version). */
typedef struct sv_cuda_libs {
    int runtime_version;     /* cudaRuntimeGetVersion: 1000 * major + 10 * minor */
    int driver_version;      /* cudaDriverGetVersion, 0 without a driver */
    size_t cudnn_version;    /* cudnnGetVersion */
    size_t cublaslt_version; /* cublasLtGetVersion */
    int devices;             /* cudaGetDeviceCount, 0 when it fails */
    char no_device[160];     /* devices == 0: why (the runtime's error string) */
} sv_cuda_libs;

typedef struct sv_cuda_module {
    int abi;              /* SV_CUDA_MODULE_ABI */
    const char *build_id; /* SV_CUDA_BUILD_ID of the build that made the module */
    sv_status (*backend_create)(const struct sv_backend_config *cfg, struct sv_backend **out);
    int (*backend_available)(void);
    void (*gpu_info_query)(int device, struct sv_gpu_info *out);
    sv_status (*comm_nccl_create)(const struct sv_comm_config *cfg, struct sv_comm **out);
    int (*comm_nccl_version)(void);
    void (*libs)(sv_cuda_libs *out);
} sv_cuda_module;

typedef const sv_cuda_module *(*sv_cuda_module_entry_fn)(void);

/* The module's table, loading the module on the first call (once per process, thread-safe). On
 * failure (not found, a library it needs missing, an unresolved symbol, another ABI or build) *out is
 * NULL and the reason is the calling thread's error message, the same on every call. */
sv_status sv_cuda_module_get(const sv_cuda_module **out);

/* The file the module was loaded from ("" before a successful sv_cuda_module_get). */
const char *sv_cuda_module_path(void);

/* 1 when the NVIDIA driver's library (libcuda.so.1) can be loaded. Without it the CUDA runtime
 * sees no device, so "is a CUDA device usable?" is answered no without loading the module (a
 * CPU run of a CUDA-enabled build with --device auto pays nothing for CUDA). */
int sv_cuda_driver_present(void);

#endif
