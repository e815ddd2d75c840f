/* Provenance of a result: what built the binary and what it ran on, so that a benchmark figure,
 * a training log or an evaluation can be reproduced and compared (docs/performance.md
 * "Provenance"). Every result writer embeds it as the "provenance" object: bench (train, --op,
 * --comm, --sweep rows), the metrics.jsonl header record, eval.json, `shardvit version --json`;
 * the HTML report shows the run's and its own.
 *
 * Build facts come from the generated sv_build_info.h (cmake/build_info.cmake: the git commit at
 * build time, "unknown" without git; dirty = tracked files differed from HEAD). Library versions
 * are those of the libraries this process actually loaded (MPI_Get_library_version,
 * openblas_get_config, the loaded file of each shared library) and, for the CUDA libraries, only
 * when the run uses the CUDA backend (else null). CPU model and ISA features come from the CPU
 * backend's own dispatch (model/backend/cpu/cpu_info.h). Nothing here touches a result's values:
 * provenance is written next to them, never into checkpoints. */
#ifndef SV_APP_PROVENANCE_H
#define SV_APP_PROVENANCE_H

#include "app/commands.h"
#include "app/flags.h"
#include "core/json.h"
#include "model/backend/cpu/cpu_info.h"
#include "model/backend/gpu_info.h"

/* One shared library as loaded: its version string ("" unknown) and resolved file ("" not loaded). */
typedef struct sv_prov_lib {
    char version[256];
    char file[512];
} sv_prov_lib;

typedef struct sv_provenance {
    /* build */
    const char *version, *commit, *describe, *build_type, *cuda_compiler;
    int dirty; /* 1, 0, -1 = unknown (no git at build time) */
    int build_cuda, build_mpi;
    char compiler[128];
    /* libraries loaded by this process */
    sv_prov_lib mpi, openblas, turbojpeg;
    int cuda_in_use;  /* the run uses the CUDA backend: the fields below are filled */
    int nccl_version; /* NCCL_VERSION_CODE, 0 = none */
    sv_gpu_info gpu;
    /* machine and run */
    char host[256], cpu_model[256], isa[256], gemm_engines[128];
    sv_cpu_id cpu_id; /* CPUID vendor, family, model, stepping */
    const char *kernels_compiled, *kernels_dispatch, *gelu_bwd16;
    const char *command;
    int world, ranks_per_node, threads_per_rank;
    double start_unix;  /* UTC start of the process (sv_provenance_mark_start), seconds */
    char start_utc[32]; /* the same, ISO 8601 "2026-01-02T03:04:05.678Z" */
} sv_provenance;

/* Record the process start time (main calls it first; later calls do nothing). */
void sv_provenance_mark_start(void);
/* Wall-clock now (CLOCK_REALTIME, seconds since the epoch) and as ISO 8601 UTC with milliseconds. */
double sv_wall_time(void);
void sv_wall_time_iso(double t, char *buf, size_t cap);

/* Fill everything for `command` run by `proc` with `threads_per_rank` CPU threads per rank;
 * cuda_device >= 0: the run uses the CUDA backend on that device (GPU fields and CUDA library
 * versions are queried), -1: the CPU backend (they stay null). Never fails. */
void sv_provenance_fill(sv_provenance *p, const char *command, const sv_proc *proc, int threads_per_rank,
                        int cuda_device);
/* Write the provenance object (a value: call after sv_json_key). `flags` (nullable): the command's
 * resolved flag table, written as "config". */
void sv_provenance_write(sv_json_writer *w, const sv_provenance *p, const sv_flag *flags);
/* The same as one line of compact JSON text (malloc'd; the caller frees it), NULL when out of memory. */
char *sv_provenance_json(const sv_provenance *p, const sv_flag *flags);
/* Is the file at path an earlier `shardvit bench --json` result: its first line a JSON object
 * whose "provenance" object names `command` (a const char *) as its "command", and no other line
 * such an object (a JSONL of several results, as a sweep writes, is not one result)?
 * sv_provenance_jsonl_of: an earlier `bench --sweep-jsonl` file: every line such an object, but
 * for a last line that is not JSON at all (a row cut short, text appended)? 0 for anything else:
 * a missing path, a symbolic link (not followed), a FIFO (never blocks), a device, a file over
 * 256 MiB. No error state is left behind. For recognising an earlier output before replacing it
 * (ckpt/ckpt_out.h sv_ckpt_out_check_earlier). */
int sv_provenance_file_of(const char *path, const void *command);
int sv_provenance_jsonl_of(const char *path, const void *command);
/* "shardvit 0.1.0 (commit 67c3eeb9d..., dirty)" into buf. */
void sv_provenance_version_line(char *buf, size_t cap);

#endif
