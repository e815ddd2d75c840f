/* CPU backend: what this CPU is and which of the backend's code paths it runs, as the backend's
 * own run-time dispatch sees it (cpu_kernels.h, gemm_engine.h). For device names and for the
 * provenance of results (app/provenance.h). No function here fails: an unreadable /proc/cpuinfo
 * gives "unknown CPU", a non-x86-64 build empty feature lists. */
#ifndef SV_MODEL_BACKEND_CPU_INFO_H
#define SV_MODEL_BACKEND_CPU_INFO_H

#include <stddef.h>

/* "model name" from /proc/cpuinfo, or "unknown CPU". */
void sv_cpu_model_name(char *buf, size_t cap);
/* The ISA features the backend's dispatch tests, those this CPU has, comma-separated in this
 * order: sse4.2 avx avx2 fma avx512f avx512bw avx512dq avx512vl avx512bf16 amx-bf16 (amx-bf16:
 * the CPU has it AND the kernel granted this process the tile state). */
void sv_cpu_isa_features(char *buf, size_t cap);
/* The element-wise kernel variants compiled into this binary ("generic,avx2,avx512") and the one
 * the dispatch picks on this CPU. */
const char *sv_cpu_kernels_compiled(void);
const char *sv_cpu_kernels_dispatch(void);
/* The packed-GEMM engines this CPU and OS run (gemm_engine.h names, best first), comma-separated;
 * "" when none (OpenBLAS only). */
void sv_cpu_gemm_engines_available(char *buf, size_t cap);

#endif
