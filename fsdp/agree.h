/* shardvit fsdp: host values and statuses agreed over every rank of a communicator (collectives
 * staged through device memory when a backend is given, so that NCCL works too). */
#ifndef SV_FSDP_AGREE_H
#define SV_FSDP_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/comm.h"
#include "fsdp/fsdp.h"
#include "model/backend/backend.h"

/* recv[i] = minimum over the ranks of send[i], i < n. */
sv_status sv_fsdp_world_min_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n);
/* recv[r * n + i] = rank r's send[i] (recv: n * world_size values). */
sv_status sv_fsdp_world_gather_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n);

/* Rank 0's NUL-terminated string in buf (cap bytes, cap <= 65536) into every rank's buf (cut to
 * cap - 1 bytes). Collective over f->world. */
sv_status sv_fsdp_world_bcast_str(sv_fsdp *f, char *buf, size_t cap);

/* All ranks of c agree on a status: when some rank failed, every rank returns the lowest failing
 * rank's status and message; the other ranks append " (reported by rank R)", once (a message that
 * already ends in that tag, having passed an agreement before, keeps it as it is). The failing
 * rank's message travels cut to SV_ERR_MSG_CAP - 1 bytes (the error buffer's own limit). The rank
 * and the world size are c's (sv_comm_rank, sv_comm_size).
 * `stage`: the backend whose device memory the two collectives (an all-reduce of the lowest
 * failing rank, a broadcast of its status and message) go through, for communicators that need
 * device buffers (NCCL); NULL: host buffers (MPI, local). Collective over c: every rank calls it
 * once with the same `stage` kind. A failed collective returns its own error instead. */
sv_status sv_fsdp_agree_comm(sv_comm *c, sv_backend *stage, sv_status st);
/* sv_fsdp_agree_comm over f->world, staged through f->be. Collective. */
sv_status sv_fsdp_agree(sv_fsdp *f, sv_status st);

#endif
