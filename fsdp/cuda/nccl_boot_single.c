/* NCCL bootstrap without MPI (SHARDVIT_MPI=OFF builds): a world of one process, GPU 0 of its
 * node unless the config names another. */
#include <string.h>

#include "fsdp/cuda/nccl_boot.h"

sv_status sv_nccl_boot_info_get(sv_nccl_boot_info *out) {
    out->rank = 0;
    out->size = 1;
    out->local_rank = 0;
    out->local_size = 1;
    return SV_OK;
}

sv_status sv_nccl_boot_node_uuids(const sv_nccl_boot_info *info, const unsigned char mine[16],
                                  unsigned char (*all)[16]) {
    (void)info;
    memcpy(all[0], mine, 16);
    return SV_OK;
}

sv_status sv_nccl_boot_share_id(const sv_nccl_boot_info *info, ncclUniqueId *id) {
    (void)info;
    ncclResult_t r = ncclGetUniqueId(id);
    if (r != ncclSuccess) return SV_FAIL(SV_ERR_COMM, "ncclGetUniqueId failed: %s", ncclGetErrorString(r));
    return SV_OK;
}
