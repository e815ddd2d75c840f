/* The GELU derivative of every bf16 value, and where gelu_bwd16 reads it (gelu_grad16.h). The
 * table is the scalar formula's bits: no FMA contraction, as in the kernel files. */
#pragma GCC optimize("fp-contract=off")
#include "model/backend/cpu/gelu_grad16.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "core/elementwise.h"
#include "model/backend/cpu/cpu_info.h"

static float g_table[1 << 16];
static pthread_once_t g_table_once = PTHREAD_ONCE_INIT;

/* The scalar formula, element by element (no contraction: see the pragma above). */
static void fill(void) {
    for (uint32_t h = 0; h < (1u << 16); h++) g_table[h] = sv_gelu_grad(sv_bf16_to_f32((uint16_t)h));
}

const float *sv_cpu_gelu_grad16(void) {
    pthread_once(&g_table_once, fill);
    return g_table;
}

/* AMD family 0x19 (Zen 3 / Zen 4; only Zen 4 runs the AVX-512 table). */
static int gather_rule(void) {
    sv_cpu_id id;
    sv_cpu_identity(&id);
    return !strcmp(id.vendor, "AuthenticAMD") && id.family == 0x19;
}

static int g_rule = -1, g_forced = -1;
static pthread_once_t g_rule_once = PTHREAD_ONCE_INIT;
static void decide(void) { g_rule = gather_rule(); }

int sv_cpu_gelu_bwd16_gather(void) {
    int f = __atomic_load_n(&g_forced, __ATOMIC_RELAXED);
    if (f >= 0) return f;
    pthread_once(&g_rule_once, decide);
    return g_rule;
}

void sv_cpu_gelu_bwd16_force(int mode) {
    __atomic_store_n(&g_forced, mode == 0 || mode == 1 ? mode : -1, __ATOMIC_RELAXED);
}
