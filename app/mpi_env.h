/* Process-level MPI lifetime (app/ only). mpi_env.c is linked in MPI builds,
 * mpi_env_absent.c in single-process builds. */
#ifndef SV_APP_MPI_ENV_H
#define SV_APP_MPI_ENV_H

#include "fsdp/comm.h"

/* Initialise MPI (once) and report this process's world rank/size. Without MPI: rank 0 of 1.
 * First sets glibc's malloc to keep freed heap pages (fixed trim / mmap thresholds, unless
 * GLIBC_TUNABLES sets malloc tunables): MPICH frees collective buffers every call. */
void sv_mpi_env_init(int *argc, char ***argv, int *rank, int *size);
/* 1 when MPI is initialised in a process no launcher started (an MPI singleton: world 1, neither
 * PMI_FD nor PMI_PORT, MPICH's own test), else 0 (always 0 without MPI). */
int sv_mpi_env_singleton(void);
/* Communicator kind for the world: MPI when built and initialised, else LOCAL. */
sv_comm_kind sv_mpi_env_comm_kind(void);
/* Finalise MPI (normal exit). */
void sv_mpi_env_finalize(void);
/* Abort every rank with `code` (runtime failure: never leave peers hanging). Returns to nobody:
 * MPI_Abort, or _exit(code) if the process manager has not ended this process 3 s later (it is
 * unreachable, e.g. this host's link to mpiexec is down). */
void sv_mpi_env_abort(int code) __attribute__((noreturn));
/* Local rank on this node (for device selection / thread defaults) and ranks on this node. */
void sv_mpi_env_local(int *local_rank, int *local_size);
/* The MPI library this process loaded (first line of MPI_Get_library_version, which works before
 * MPI_Init), e.g. "MPICH Version: 4.0.2"; "" in single-process builds. */
void sv_mpi_env_library_version(char *buf, size_t n);

#endif
