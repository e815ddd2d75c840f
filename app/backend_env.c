/* The SHARDVIT_CPU_* environment overrides -> sv_backend_config (see backend_env.h). */
#include "app/backend_env.h"

#include <stdlib.h>
#include <string.h>

#include "app/flags.h"
#include "model/backend/cpu/gemm_engine.h"

void sv_backend_env_apply(sv_backend_config *bc, const char *cpu_gemm) {
    const char *v;
    if ((v = getenv("SHARDVIT_CPU_GEMM"))) bc->cpu.gemm = v;
    if ((v = getenv("SHARDVIT_CPU_ISA")) && *v) bc->cpu.isa = v; /* empty: unset (auto) */
    if ((v = getenv("SHARDVIT_CPU_ATTN_GEMM"))) bc->cpu.attn_sgemm = !strcmp(v, "0");
    if ((v = getenv("SHARDVIT_CPU_FUSED_EPI"))) bc->cpu.unfused_epi = !strcmp(v, "0");
    if ((v = getenv("SHARDVIT_CPU_AMX_DENY"))) bc->cpu.amx_deny = !strcmp(v, "1");
    if ((v = getenv("SHARDVIT_CPU_BF16_STORAGE")) && *v) /* empty: unset; any other value: refused at creation */
        bc->cpu.f32_storage = !strcmp(v, "0") ? 1 : !strcmp(v, "1") ? -1 : 2;
    if (cpu_gemm) bc->cpu.gemm = cpu_gemm;
}

int sv_backend_env_check(const char *cmd, const char *cpu_gemm) {
    const char *v = cpu_gemm ? cpu_gemm : getenv("SHARDVIT_CPU_GEMM");
    if (v && !*v && !cpu_gemm) v = NULL; /* an empty variable is unset: auto, as the backend reads it */
    if (v && !sv_gemm_engine_name_known(v))
        return sv_cmd_usage_error(cmd, "%s: invalid value '%s' (expected %s)",
                                  cpu_gemm ? "--cpu-gemm" : "SHARDVIT_CPU_GEMM", v, sv_gemm_engine_names);
    if ((v = getenv("SHARDVIT_CPU_ISA")) && *v && strcmp(v, "generic") && strcmp(v, "avx2") && strcmp(v, "avx512") &&
        strcmp(v, "auto"))
        return sv_cmd_usage_error(cmd, "SHARDVIT_CPU_ISA: invalid value '%s' (expected generic|avx2|avx512|auto)", v);
    static const char *const bools[] = {"SHARDVIT_CPU_ATTN_GEMM", "SHARDVIT_CPU_FUSED_EPI", "SHARDVIT_CPU_AMX_DENY"};
    for (int i = 0; i < 3; i++)
        if ((v = getenv(bools[i])) && *v && strcmp(v, "0") && strcmp(v, "1"))
            return sv_cmd_usage_error(cmd, "%s: invalid value '%s' (expected 0 or 1)", bools[i], v);
    if ((v = getenv("SHARDVIT_CPU_BF16_STORAGE")) && *v && strcmp(v, "0") && strcmp(v, "1"))
        return sv_cmd_usage_error(
            cmd, "SHARDVIT_CPU_BF16_STORAGE: invalid value '%s' (expected 0 or 1; 0 keeps bf16 mode's buffers in fp32)",
            v);
    return -1;
}
