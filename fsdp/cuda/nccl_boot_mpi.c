/* NCCL bootstrap over MPI (docs/comm.md): rank 0's ncclUniqueId travels by MPI_Bcast over
 * MPI_COMM_WORLD; the node-local rank comes from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). */
#include <mpi.h>

#include "fsdp/cuda/nccl_boot.h"

static sv_status mpi_fail(int rc, const char *call) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) len = 0;
    s[len] = 0;
    return SV_FAIL(SV_ERR_COMM, "NCCL bootstrap: %s failed: %s", call, len ? s : "unknown MPI error");
}
#define MPI_TRY(call) \
    do { \
        int rc_ = (call); \
        if (rc_ != MPI_SUCCESS) return mpi_fail(rc_, #call); \
    } while (0)

sv_status sv_nccl_boot_info_get(sv_nccl_boot_info *out) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return SV_FAIL(SV_ERR_INVALID,
                       "NCCL comm: MPI is not initialised (app/ must call "
                       "MPI_Init_thread before creating the comm)");
    MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &out->rank));
    MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &out->size));
    MPI_Comm node;
    MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, out->rank, MPI_INFO_NULL, &node));
    int rc = MPI_Comm_rank(node, &out->local_rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(node, &out->local_size);
    MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_rank/size(node communicator)");
    return SV_OK;
}

sv_status sv_nccl_boot_node_uuids(const sv_nccl_boot_info *info, const unsigned char mine[16],
                                  unsigned char (*all)[16]) {
    MPI_Comm node;
    MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info->rank, MPI_INFO_NULL, &node));
    int rc = MPI_Allgather(mine, 16, MPI_BYTE, all, 16, MPI_BYTE, node);
    MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allgather(device UUIDs of the node)");
    return SV_OK;
}

sv_status sv_nccl_boot_share_id(const sv_nccl_boot_info *info, ncclUniqueId *id) {
    /* A failure on rank 0 must not leave the others blocked in MPI_Bcast: broadcast a flag too. */
    int ok = 1;
    if (info->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(id);
        ok = r == ncclSuccess;
        if (!ok) SV_FAIL(SV_ERR_COMM, "ncclGetUniqueId failed: %s", ncclGetErrorString(r));
    }
    MPI_TRY(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!ok)
        return info->rank == 0 ? SV_ERR_COMM
                               : SV_FAIL(SV_ERR_COMM, "NCCL bootstrap: rank 0 could not create the NCCL id");
    MPI_TRY(MPI_Bcast(id, (int)sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD));
    return SV_OK;
}
