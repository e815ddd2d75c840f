/* Linked in SHARDVIT_MPI=OFF builds instead of comm_mpi.c.
 *
 * Asking for an MPI communicator in a build without MPI falls back to the world-of-one local
 * transport, because that is exactly what a single process is; a warning says so. But if the
 * process was started by a launcher as one of several ranks (sv_comm_launched_size: PMI_SIZE,
 * OMPI_COMM_WORLD_SIZE, or an srun step's SLURM_STEP_NUM_TASKS), N copies would each train alone
 * on the whole data set while looking healthy, so that fails with SV_ERR_UNSUPPORTED naming the
 * variable and the fix. */
#include <stdlib.h>

#include "core/log.h"
#include "fsdp/comm_impl.h"

sv_status sv_comm_mpi_create(const sv_comm_config *cfg, sv_comm **out) {
    const char *var = NULL;
    int n = sv_comm_launched_size(&var);
    if (n > 1)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "MPI comm requested and this process was launched as one of %d ranks "
                       "(%s=%s), but shardvit was built without MPI (SHARDVIT_MPI=OFF); "
                       "rebuild with -DSHARDVIT_MPI=ON",
                       n, var, getenv(var));
    SV_WARN("built without MPI (SHARDVIT_MPI=OFF): using the single-process local comm");
    sv_comm_config local = *cfg;
    local.kind = SV_COMM_KIND_LOCAL;
    SV_TRY(sv_comm_local_create(&local, out));
    return SV_OK;
}
