/* Element-wise kernels compiled for AVX2 (no FMA, so the bits equal the generic variant's). */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2")
#endif
#pragma GCC optimize("no-trapping-math", "fp-contract=off") /* -fno-math-errno: model/CMakeLists.txt */
#define SV_CPU_KERNELS_NAME sv_cpu_kernels_avx2
#define SV_CPU_KERNELS_ISA "avx2"
#include "model/backend/cpu/cpu_kernels_impl.h"
