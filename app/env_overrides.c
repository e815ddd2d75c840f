/* Environment overrides -> library setters and configuration (see env_overrides.h). */
#include "app/env_overrides.h"

#include <stdlib.h>
#include <string.h>

#include "app/mpi_env.h"
#include "ckpt/checkpoint.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "data/randaug_simd.h"

/* The variable's value, NULL when unset or empty. */
static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A byte count from the variable into *n (-1 when unset); anything but a non-negative decimal is
 * an error naming it. */
static sv_status env_bytes(const char *name, long long *n) {
    const char *v = env(name);
    *n = -1;
    if (!v) return SV_OK;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end || x < 0) return SV_FAIL(SV_ERR_INVALID, "%s=%s: expected a non-negative byte count", name, v);
    *n = x;
    return SV_OK;
}

sv_status sv_env_overrides_apply(void) {
    const char *v;
    if ((v = env("SHARDVIT_CLOCK")) && strcmp(v, "auto")) {
        if (strcmp(v, "mono")) return SV_FAIL(SV_ERR_INVALID, "SHARDVIT_CLOCK=%s: expected mono or auto", v);
        sv_clock_use_mono();
    }
    if ((v = env("SHARDVIT_RA_ISA"))) { /* a cap on the data augmentation kernels' level */
        int i = 0;
        while (i <= SV_RA_ISA_AVX512 && strcmp(v, sv_ra_isa_name((sv_ra_isa)i))) i++;
        if (i > SV_RA_ISA_AVX512)
            return SV_FAIL(SV_ERR_INVALID, "SHARDVIT_RA_ISA=%s: expected scalar, avx2 or avx512", v);
        sv_ra_simd_set_level((sv_ra_isa)i); /* at most what this CPU has */
    }
    sv_ckpt_set_crash_point(env(SV_CKPT_CRASH_ENV));
    long long n;
    SV_TRY(env_bytes(SV_FILEIO_FAULT_ENV, &n));
    if (n >= 0) sv_fileio_inject_write_fault(n);
    SV_TRY(env_bytes(SV_FILEIO_STALL_ENV, &n));
    if (n >= 0) sv_fileio_inject_write_stall(n);
    return SV_OK;
}

sv_comm_config sv_env_comm_config(double timeout_s) {
    sv_comm_config cc = {.kind = sv_mpi_env_comm_kind(), .timeout_s = timeout_s};
    const char *v = env("SHARDVIT_COMM_CHUNK_BYTES");
    char *end = NULL;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    if (v && end != v && *end == 0) cc.chunk_bytes = n < 64 ? 64 : (size_t)n;
    return cc;
}
