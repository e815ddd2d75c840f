/* The CPU hardware peak that MFU is stated against, shared by `bench` and `train`: the per-core
 * ISA peak of the GEMM engine the run's CPU backend uses (model/backend/cpu/isa_peak.h; the
 * engine is read from the backend's device name, none named = OpenBLAS sgemm = the widest fp32
 * FMA), measured on every rank at once between barriers, the best rank's figure kept, times the
 * cores the run occupies.
 *
 * Cost: the in-register loop needs only milliseconds to settle (isa_peak.h), so `train` measures
 * for --mfu-calib-seconds (default 0.05 s) at start-up; `bench` uses its --calib-seconds (0.5 s). */
#ifndef SV_APP_CPU_PEAK_H
#define SV_APP_CPU_PEAK_H

#include "app/run.h"

typedef struct sv_cpu_peak {
    char engine[32];   /* "amx-bf16", ..., or "openblas" */
    double per_core;   /* ISA peak FLOP/s of one core; 0: not measured or the CPU lacks the instruction */
    int threads_rank;  /* CPU threads per rank (1 on a GPU backend) */
    int oversub;       /* ranks x threads on a node exceed its cores */
    double cores_used; /* cores the run occupies over all nodes (capped at the cores of each node) */
} sv_cpu_peak;

/* threads_rank, oversub and cores_used of run r (threads_rank: the threads its CPU backend runs
 * with, sv_be_config's; 1 on a GPU backend). Local, no communication. */
void sv_cpu_peak_cores(const sv_run *r, sv_cpu_peak *pk);
/* sv_cpu_peak_cores, then the measurement (collective over r->world_comm: every rank calls).
 * seconds <= 0: nothing measured (per_core = 0). */
sv_status sv_cpu_peak_measure(sv_run *r, double seconds, sv_cpu_peak *pk);
/* The peak of the whole run, per_core x cores_used (0 when unknown). */
double sv_cpu_peak_flops(const sv_cpu_peak *pk);

/* bench's second figure (mfu_gemm): the per-core rate of a real GEMM, the best of single-threaded
 * 1024^3 linear-layer calls over `seconds` through a CPU backend of compute dtype dt and GEMM engine
 * cpu_gemm (NULL: the environment's / auto; fp32: sgemm or the own fp32 engines, bf16: the bf16
 * GEMM), the first call (cold) left out. Every rank measures at once between barriers, each on its
 * own core, so the figure reflects every core busy; the best rank's value is kept (noise only lowers
 * it). Collective over a world communicator of its own (comm_timeout: the run's), before any run is
 * set up. */
sv_status sv_cpu_peak_gemm(int comm_timeout, double seconds, sv_dtype dt, const char *cpu_gemm, double *flops);

#endif
