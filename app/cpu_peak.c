#include "app/cpu_peak.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/backend_env.h"
#include "app/env_overrides.h"
#include "core/cpus.h"
#include "core/rng.h"
#include "model/backend/cpu/isa_peak.h"

void sv_cpu_peak_cores(const sv_run *r, sv_cpu_peak *pk) {
    long cores = sv_cpus_node(); /* all ranks' CPUs on the node: bound ranks each see only theirs */
    int local = r->local_size > 0 ? r->local_size : 1;
    /* the backend's own count: what it runs with (OpenMP's limits may have lowered the one asked for) */
    int t = !strcmp(sv_be_name(r->be), "cpu") ? sv_be_config(r->be)->threads : 1;
    pk->threads_rank = t < 1 ? 1 : t;
    int nodes = r->world / local;
    long used_node = (long)pk->threads_rank * local;
    pk->oversub = used_node > cores;
    pk->cores_used = (double)(pk->oversub ? cores : used_node) * (nodes > 0 ? nodes : 1);
}

sv_status sv_cpu_peak_measure(sv_run *r, double seconds, sv_cpu_peak *pk) {
    memset(pk, 0, sizeof *pk);
    sv_cpu_peak_cores(r, pk);
    if (!sv_cpu_gemm_engine_of_device(sv_be_device_name(r->be), pk->engine, sizeof pk->engine))
        snprintf(pk->engine, sizeof pk->engine, "openblas");
    if (seconds <= 0) return SV_OK;
    SV_TRY(sv_comm_barrier_sync(r->world_comm));
    pk->per_core = sv_cpu_isa_peak_flops(pk->engine, seconds);
    SV_TRY(sv_comm_all_reduce_sync(r->world_comm, &pk->per_core, 1, SV_COMM_F64, SV_COMM_MAX));
    return sv_comm_barrier_sync(r->world_comm);
}

double sv_cpu_peak_flops(const sv_cpu_peak *pk) { return pk->per_core > 0 ? pk->per_core * pk->cores_used : 0; }

/* The best rate of single-threaded 1024^3 linear-layer calls over `seconds` (see the header). */
static sv_status gemm_peak_per_core(double seconds, sv_dtype dt, const char *cpu_gemm, double *flops) {
    const int n = 1024;
    sv_backend_config bc = {.device = SV_DEVICE_CPU, .compute_dtype = dt, .threads = 1};
    sv_backend_env_apply(&bc, cpu_gemm); /* the peak of the engine the run uses */
    sv_backend *be;
    SV_TRY(sv_backend_create(&bc, &be));
    float *a = NULL, *b = NULL, *c = NULL;
    sv_status st = sv_be_alloc(be, (size_t)n * n * 4, (void **)&a);
    if (st == SV_OK) st = sv_be_alloc(be, (size_t)n * n * 4, (void **)&b);
    if (st == SV_OK) st = sv_be_alloc(be, (size_t)n * n * 4, (void **)&c);
    if (st == SV_OK) {
        for (size_t i = 0; i < (size_t)n * n; i++) a[i] = b[i] = (float)sv_rand_unit(7, i) - 0.5f;
        double best = 0, t_end = sv_now_s() + seconds;
        int calls = 0;
        while (st == SV_OK && (calls < 3 || sv_now_s() < t_end)) {
            double t0 = sv_now_s();
            st = sv_be_linear_fwd(be, c, NULL, a, b, NULL, n, n, n);
            double dt = sv_now_s() - t0;
            if (calls++ > 0 && dt > 0 && 2.0 * n * n * n / dt > best) best = 2.0 * n * n * n / dt; /* 1st: cold */
        }
        *flops = best;
    }
    sv_be_free(be, a);
    sv_be_free(be, b);
    sv_be_free(be, c);
    sv_backend_destroy(be);
    return st;
}

sv_status sv_cpu_peak_gemm(int comm_timeout, double seconds, sv_dtype dt, const char *cpu_gemm, double *flops) {
    sv_comm_config cc = sv_env_comm_config(comm_timeout);
    sv_comm *cm;
    SV_TRY(sv_comm_create_world(&cc, &cm));
    sv_status st = sv_comm_barrier_sync(cm);
    if (st == SV_OK) st = gemm_peak_per_core(seconds, dt, cpu_gemm, flops);
    if (st == SV_OK) st = sv_comm_all_reduce_sync(cm, flops, 1, SV_COMM_F64, SV_COMM_MAX);
    sv_comm_destroy(cm);
    return st;
}
