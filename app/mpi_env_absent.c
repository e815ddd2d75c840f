/* Single-process build (SHARDVIT_MPI=OFF): a world of one. */
#include <stdio.h>
#include <stdlib.h>

#include "app/mpi_env.h"

void sv_mpi_env_init(int *argc, char ***argv, int *rank, int *size) {
    (void)argc;
    (void)argv;
    *rank = 0;
    *size = 1;
}
int sv_mpi_env_singleton(void) { return 0; }
sv_comm_kind sv_mpi_env_comm_kind(void) { return SV_COMM_KIND_LOCAL; }
void sv_mpi_env_finalize(void) {}
void sv_mpi_env_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    exit(code);
}
void sv_mpi_env_local(int *local_rank, int *local_size) {
    *local_rank = 0;
    *local_size = 1;
}
void sv_mpi_env_library_version(char *buf, size_t n) {
    if (n) buf[0] = 0;
}
