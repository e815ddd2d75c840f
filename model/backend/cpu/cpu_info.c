#include "model/backend/cpu/cpu_info.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "model/backend/cpu/cpu_kernels.h"
#include "model/backend/cpu/gelu_grad16.h"
#include "model/backend/cpu/gemm_engine.h"

void sv_cpu_identity(sv_cpu_id *id) {
    memset(id, 0, sizeof *id);
    id->family = id->model = id->stepping = -1;
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    memcpy(id->vendor, &b, 4), memcpy(id->vendor + 4, &d, 4), memcpy(id->vendor + 8, &c, 4);
    id->vendor[12] = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
    id->family = (int)(base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family);
    id->model = (int)(base_family == 0x6 || base_family == 0xf ? base_model | (((a >> 16) & 0xf) << 4) : base_model);
    id->stepping = (int)(a & 0xf);
#endif
}

const char *sv_cpu_gelu_bwd16_form(void) {
    const sv_cpu_kernels *k = sv_cpu_kernels_pick(NULL);
    return k && !strcmp(k->isa, "avx512") && sv_cpu_gelu_bwd16_gather() ? "gather" : "compute";
}

void sv_cpu_model_name(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *s = colon + 1;
        while (*s == ' ' || *s == '\t') s++;
        size_t len = strcspn(s, "\n");
        while (len > 0 && s[len - 1] == ' ') len--;
        if (len > 0) snprintf(buf, cap, "%.*s", (int)len, s);
        break;
    }
    fclose(f);
}

static void append(char *buf, size_t cap, const char *item) {
    size_t n = strlen(buf);
    if (n + 1 < cap) snprintf(buf + n, cap - n, "%s%s", n ? "," : "", item);
}

void sv_cpu_isa_features(char *buf, size_t cap) {
    if (cap) buf[0] = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) append(buf, cap, "sse4.2");
    if (__builtin_cpu_supports("avx")) append(buf, cap, "avx");
    if (__builtin_cpu_supports("avx2")) append(buf, cap, "avx2");
    if (__builtin_cpu_supports("fma")) append(buf, cap, "fma");
    if (__builtin_cpu_supports("avx512f")) append(buf, cap, "avx512f");
    if (__builtin_cpu_supports("avx512bw")) append(buf, cap, "avx512bw");
    if (__builtin_cpu_supports("avx512dq")) append(buf, cap, "avx512dq");
    if (__builtin_cpu_supports("avx512vl")) append(buf, cap, "avx512vl");
    if (__builtin_cpu_supports("avx512bf16")) append(buf, cap, "avx512bf16");
    if (sv_gemm_amx_permission(NULL, 0)) append(buf, cap, "amx-bf16");
#endif
}

const char *sv_cpu_kernels_compiled(void) { return "generic,avx2,avx512"; }

const char *sv_cpu_kernels_dispatch(void) {
    const sv_cpu_kernels *k = sv_cpu_kernels_pick(NULL);
    return k ? k->isa : "generic";
}

void sv_cpu_gemm_engines_available(char *buf, size_t cap) {
    static const char *const names[] = {"amx-bf16", "avx512-bf16", "avx512-f32", "avx2-f32"};
    if (cap) buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const sv_gemm_engine *e = sv_gemm_engine_by_name(names[i]);
        if (e && e->available()) append(buf, cap, names[i]);
    }
}
