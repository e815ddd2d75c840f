/* Element-wise kernels for any CPU (baseline instruction set of the build). */
#pragma GCC optimize("no-trapping-math", "fp-contract=off") /* -fno-math-errno: model/CMakeLists.txt */
#define SV_CPU_KERNELS_NAME sv_cpu_kernels_generic
#define SV_CPU_KERNELS_ISA "generic"
#include "model/backend/cpu/cpu_kernels_impl.h"

#include <string.h>

const sv_cpu_kernels *sv_cpu_kernels_pick(const char *isa) {
    int any = !isa || !strcmp(isa, "auto");
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    int has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    int has2 = __builtin_cpu_supports("avx2");
    if ((any || !strcmp(isa, "avx512")) && has512) return &sv_cpu_kernels_avx512;
    if ((any || !strcmp(isa, "avx2")) && has2) return &sv_cpu_kernels_avx2;
#endif
    if (any || !strcmp(isa, "generic")) return &sv_cpu_kernels_generic;
    return NULL;
}
