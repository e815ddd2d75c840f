#include "app/cpu_peak.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/cpus.h"
#include "model/backend/cpu/isa_peak.h"

void sv_cpu_peak_cores(const sv_run *r, int threads_opt, sv_cpu_peak *pk) {
    long cores = sv_cpus_node(); /* all ranks' CPUs on the node: bound ranks each see only theirs */
    int local = r->local_size > 0 ? r->local_size : 1;
    int t = !strcmp(sv_be_name(r->be), "cpu") ? (threads_opt ? threads_opt : sv_cpus_rank_share(local)) : 1;
    pk->threads_rank = t < 1 ? 1 : t;
    int nodes = r->world / local;
    long used_node = (long)pk->threads_rank * local;
    pk->oversub = used_node > cores;
    pk->cores_used = (double)(pk->oversub ? cores : used_node) * (nodes > 0 ? nodes : 1);
}

sv_status sv_cpu_peak_measure(sv_run *r, int threads_opt, double seconds, sv_cpu_peak *pk) {
    memset(pk, 0, sizeof *pk);
    sv_cpu_peak_cores(r, threads_opt, pk);
    if (!sv_cpu_gemm_engine_of_device(sv_be_device_name(r->be), pk->engine, sizeof pk->engine))
        snprintf(pk->engine, sizeof pk->engine, "openblas");
    if (seconds <= 0) return SV_OK;
    SV_TRY(sv_comm_barrier_sync(r->world_comm));
    pk->per_core = sv_cpu_isa_peak_flops(pk->engine, seconds);
    SV_TRY(sv_comm_all_reduce_sync(r->world_comm, &pk->per_core, 1, SV_COMM_F64, SV_COMM_MAX));
    return sv_comm_barrier_sync(r->world_comm);
}

double sv_cpu_peak_flops(const sv_cpu_peak *pk) { return pk->per_core > 0 ? pk->per_core * pk->cores_used : 0; }
