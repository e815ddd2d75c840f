/* shardvit fsdp: host values and statuses agreed over every rank of f->world (collectives on
 * the FSDP communicators, staged through device memory so that NCCL works too). */
#ifndef SV_FSDP_AGREE_H
#define SV_FSDP_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/fsdp.h"

/* recv[i] = minimum over the ranks of send[i], i < n. */
sv_status sv_fsdp_world_min_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n);
/* recv[r * n + i] = rank r's send[i] (recv: n * world_size values). */
sv_status sv_fsdp_world_gather_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n);
/* All ranks of f->world agree on a status: when some rank failed, every rank returns the lowest
 * failing rank's status and message ("... (reported by rank R)" on the others). Collective. */
sv_status sv_fsdp_agree(sv_fsdp *f, sv_status st);

#endif
