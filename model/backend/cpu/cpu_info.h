/* CPU backend: what this CPU is and which of the backend's code paths it runs, as the backend's
 * own run-time dispatch sees it (cpu_kernels.h, gemm_engine.h). For device names and for the
 * provenance of results (app/provenance.h). No function here fails: an unreadable /proc/cpuinfo
 * gives "unknown CPU", a non-x86-64 build empty feature lists. */
#ifndef SV_MODEL_BACKEND_CPU_INFO_H
#define SV_MODEL_BACKEND_CPU_INFO_H

#include <stddef.h>

/* "model name" from /proc/cpuinfo, or "unknown CPU". */
void sv_cpu_model_name(char *buf, size_t cap);
/* Vendor, family, model and stepping from CPUID leaves 0 and 1, decoded as /proc/cpuinfo's
 * "vendor_id", "cpu family", "model" and "stepping" are (family: base + extended when the base is
 * 0xF; model: extended bits above the base for families 6 and 0xF and up): the AMD EPYC Zen 4 is
 * AuthenticAMD 25 / 17, the Zen 5 26 / 2, the Intel Xeon with AMX GenuineIntel 6 / 143 or 207.
 * Names a result's machine beyond its model name ("AMD EPYC" for both Zen 4 and Zen 5) and
 * picks per-CPU code paths (gelu_grad16.h). Not x86-64: vendor "", numbers -1. */
typedef struct sv_cpu_id {
    char vendor[13];
    int family, model, stepping;
} sv_cpu_id;
void sv_cpu_identity(sv_cpu_id *id);
/* The ISA features the backend's dispatch tests, those this CPU has, comma-separated in this
 * order: sse4.2 avx avx2 fma avx512f avx512bw avx512dq avx512vl avx512bf16 amx-bf16 (amx-bf16:
 * the CPU has it AND the kernel granted this process the tile state). */
void sv_cpu_isa_features(char *buf, size_t cap);
/* How this CPU's AVX-512 gelu_bwd16 gets gelu': "gather" (the bf16 table) or "compute"
 * (gelu_grad16.h); "compute" where the dispatch picks no AVX-512 table. */
const char *sv_cpu_gelu_bwd16_form(void);
/* The element-wise kernel variants compiled into this binary ("generic,avx2,avx512") and the one
 * the dispatch picks on this CPU. */
const char *sv_cpu_kernels_compiled(void);
const char *sv_cpu_kernels_dispatch(void);
/* The packed-GEMM engines this CPU and OS run (gemm_engine.h names, best first), comma-separated;
 * "" when none (OpenBLAS only). */
void sv_cpu_gemm_engines_available(char *buf, size_t cap);

#endif
