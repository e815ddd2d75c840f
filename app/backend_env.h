/* The documented environment overrides of the backend configuration (docs/backend_cpu.md). */
#ifndef SV_APP_BACKEND_ENV_H
#define SV_APP_BACKEND_ENV_H

#include "model/backend/backend.h"

/* Apply the SHARDVIT_CPU_* variables that are set to bc->cpu (a set variable replaces the
 * field), then the `--cpu-gemm` flag's value `cpu_gemm` (NULL = not given; it wins over
 * SHARDVIT_CPU_GEMM): SHARDVIT_CPU_GEMM -> gemm, SHARDVIT_CPU_ISA -> isa, SHARDVIT_CPU_ATTN_GEMM=0 ->
 * attn_sgemm, SHARDVIT_CPU_FUSED_EPI=0 -> unfused_epi, SHARDVIT_CPU_AMX_DENY=1 -> amx_deny,
 * SHARDVIT_CPU_BF16_STORAGE=0 / 1 -> f32_storage 1 / -1.
 * Values are checked when the backend is created or sized, whose error messages name the
 * variable. The only place in shardvit that reads these variables. */
void sv_backend_env_apply(sv_backend_config *bc, const char *cpu_gemm);

/* Before any work (train, bench, plan, eval, predict): the values sv_backend_env_apply would pass
 * on that no machine accepts: a GEMM engine name that is none of sv_gemm_engine_names (the
 * `--cpu-gemm` value `cpu_gemm`, else SHARDVIT_CPU_GEMM; the backend's own check, so one list),
 * and a SHARDVIT_CPU_BF16_STORAGE, SHARDVIT_CPU_ATTN_GEMM, SHARDVIT_CPU_FUSED_EPI or
 * SHARDVIT_CPU_AMX_DENY other than 0 or 1 (empty: unset). Returns -1 when there is none, else 2 (the
 * usage-error exit code) after one line naming the flag or variable, its value and the accepted
 * values (sv_cmd_usage_error of command `cmd`). An engine that this CPU cannot run is left to
 * backend creation. */
int sv_backend_env_check(const char *cmd, const char *cpu_gemm);

#endif
