/* Choosing a GEMM engine at run time (see gemm_engine.h). */
#include "model/backend/cpu/gemm_engine.h"
#include "model/backend/cpu/gemm_f32.h"

#include <stdio.h>
#include <string.h>

/* Best first, per mode. bf16 mode may fall back to the fp32 engines: the ops round their
 * outputs to bf16 anyway, so the GEMM then computes on bf16 values in fp32 (as sgemm did).
 * Without an engine the backend runs OpenBLAS sgemm. */
static const sv_gemm_engine *const k_bf16_order[] = {&sv_gemm_engine_amx_bf16, &sv_gemm_engine_avx512_bf16,
                                                     &sv_gemm_engine_avx512_f32, &sv_gemm_engine_avx2_f32};
static const sv_gemm_engine *const k_f32_order[] = {&sv_gemm_engine_avx512_f32, &sv_gemm_engine_avx2_f32};

const sv_gemm_engine *sv_gemm_engine_by_name(const char *name) {
    for (size_t i = 0; name && i < sizeof k_bf16_order / sizeof k_bf16_order[0]; i++)
        if (!strcmp(name, k_bf16_order[i]->name)) return k_bf16_order[i];
    return NULL;
}

const char sv_gemm_engine_names[] = "amx-bf16|avx512-bf16|avx512-f32|avx2-f32|openblas|blas|auto";

int sv_gemm_engine_name_known(const char *name) {
    return name &&
        (sv_gemm_engine_by_name(name) || !strcmp(name, "openblas") || !strcmp(name, "blas") || !strcmp(name, "auto"));
}

/* why/note are 160-byte buffers; a longer message is cut. */
static void put(char *buf, const char *fmt, const char *a, const char *b) {
    if (!buf) return;
    int n = snprintf(buf, 160, fmt, a, b);
    (void)n;
}

/* sv_gemm_amx_permission, or a simulated refusal (amx_deny: a test setting) where AMX would be usable. */
static int amx_usable(int amx_deny, char *why, size_t n) {
    if (!sv_gemm_amx_permission(why, n)) return 0;
    if (amx_deny) {
        if (why) snprintf(why, n, "the kernel refused the AMX tile state (simulated by SHARDVIT_CPU_AMX_DENY=1)");
        return 0;
    }
    return 1;
}

const sv_gemm_engine *sv_gemm_engine_pick(int bf16, const char *force, int amx_deny, int *forced_blas, char *why,
                                          char *note) {
    put(why, "%s%s", "", "");
    put(note, "%s%s", "", "");
    *forced_blas = 0;
    if (force && *force && strcmp(force, "auto")) {
        if (!strcmp(force, "openblas")) {
            *forced_blas = 1;
            return NULL;
        }
        const sv_gemm_engine *e = sv_gemm_engine_by_name(force);
        if (!e) {
            put(why, "unknown GEMM engine '%s' (%s)", force, sv_gemm_engine_names);
            return NULL;
        }
        if (e->bf16 && !bf16) {
            put(why, "GEMM engine %s rounds its operands to bf16: only with --param-dtype bf16%s", force, "");
            return NULL;
        }
        char perm[96];
        if (e == &sv_gemm_engine_amx_bf16 && !amx_usable(amx_deny, perm, sizeof perm)) {
            put(why, "GEMM engine amx-bf16 is not usable here: %s%s", perm, "");
            return NULL;
        }
        if (!e->available()) {
            put(why, "GEMM engine %s is not available on this CPU (it lacks the instructions)%s", force, "");
            return NULL;
        }
        return e;
    }
    const sv_gemm_engine *const *order = bf16 ? k_bf16_order : k_f32_order;
    size_t n = bf16 ? sizeof k_bf16_order / sizeof k_bf16_order[0] : sizeof k_f32_order / sizeof k_f32_order[0];
    char perm[96];
    int amx_ok = bf16 && amx_usable(amx_deny, perm, sizeof perm);
    int amx_refused = bf16 && !amx_ok && strstr(perm, "refused");
    for (size_t i = 0; i < n; i++) {
        if (order[i] == &sv_gemm_engine_amx_bf16 ? !amx_ok : !order[i]->available()) continue;
        if (amx_refused) put(note, "AMX-BF16 not used: %s; using %s", perm, order[i]->name);
        return order[i];
    }
    return NULL;
}

int sv_gemm_run_trivial(float *C, size_t ldc, int m, int n, int r, int accumulate) {
    if (m <= 0 || n <= 0) return 1;
    if (r > 0) return 0;
    if (!accumulate)
        for (int i = 0; i < m; i++) memset(C + (size_t)i * ldc, 0, (size_t)n * sizeof(float));
    return 1;
}

void sv_gemm_engine_gemm(const sv_gemm_engine *e, float *C, size_t ldc, sv_gemm_mat A, int m, sv_gemm_mat B, int n,
                         int r, int accumulate, void *pack, void *scratch) {
    e->pack(pack, B, n, r, 0, n);
    e->run(C, ldc, A, m, pack, n, r, accumulate, scratch);
}
