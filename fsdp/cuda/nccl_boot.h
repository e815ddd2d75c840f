/* Bootstrap of the NCCL communicator (internal to fsdp/cuda/): who am I, how many are we, which
 * GPU of this node is mine, and rank 0's ncclUniqueId. Two variants, chosen by CMake:
 * nccl_boot_mpi.c (MPI_COMM_WORLD; MPI must be initialised by app/) and nccl_boot_single.c
 * (SHARDVIT_MPI=OFF builds: a world of one process). */
#ifndef SV_FSDP_CUDA_NCCL_BOOT_H
#define SV_FSDP_CUDA_NCCL_BOOT_H

#include <nccl.h>

#include "core/status.h"

typedef struct sv_nccl_boot_info {
    int rank, size; /* in the world */
    int local_rank; /* among the processes of this node (MPI_COMM_TYPE_SHARED) */
    int local_size;
} sv_nccl_boot_info;

/* Rank, size and node-local rank of this process. Not collective over the whole world except
 * for the node split (collective over MPI_COMM_WORLD). */
sv_status sv_nccl_boot_info_get(sv_nccl_boot_info *out);

/* Collective over the world (the node split): every rank of this node gets the 16-byte UUIDs of
 * the devices of all ranks of its node, in local-rank order (all: local_size entries). */
sv_status sv_nccl_boot_node_uuids(const sv_nccl_boot_info *info, const unsigned char mine[16],
                                  unsigned char (*all)[16]);

/* Collective over the world: rank 0 creates the id, every rank receives it. */
sv_status sv_nccl_boot_share_id(const sv_nccl_boot_info *info, ncclUniqueId *id);

#endif
