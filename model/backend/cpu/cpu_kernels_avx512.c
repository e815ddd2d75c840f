/* Element-wise kernels compiled for AVX-512 (F/BW/DQ/VL; no FMA, same bits as generic); the GELU,
 * attention softmax and LayerNorm row kernels are hand-written intrinsics of the same operations
 * (gelu_avx512.h, softmax_avx512.h, layernorm_avx512.h). */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#endif
#pragma GCC optimize("no-trapping-math", "fp-contract=off") /* -fno-math-errno: model/CMakeLists.txt */
#define SV_CPU_KERNELS_NAME sv_cpu_kernels_avx512
#define SV_CPU_KERNELS_ISA "avx512"
#if defined(__x86_64__) && defined(__GNUC__)
#include "model/backend/cpu/gelu_avx512.h"      /* bias_gelu, gelu, gelu_bwd in intrinsics (same bits) */
#include "model/backend/cpu/softmax_avx512.h"   /* softmax_rows (same bits) */
#include "model/backend/cpu/layernorm_avx512.h" /* layernorm_fwd_rows, layernorm_bwd_rows (same bits) */
#endif
#include "model/backend/cpu/cpu_kernels_impl.h"
