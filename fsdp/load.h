/* shardvit fsdp: filling the master shards of a carved FSDP state from a source of tensor values
 * (the deterministic init, a safetensors file, a checkpoint), one unit at a time.
 *
 * Every loader is the same loop: for each unit, stage the rank's shard on the host, let the
 * source fill each tensor piece that falls into it (sv_layout_piece), upload it; optimizer state
 * and gradients end zero unless the source supplies m and v. The source has the shape of the
 * checkpoint shard writer's (ckpt/checkpoint.h sv_ckpt_source_fn is this type). */
#ifndef SV_FSDP_LOAD_H
#define SV_FSDP_LOAD_H

#include <stdint.h>

#include "fsdp/fsdp.h"

/* Kinds of per-shard state a source produces (the checkpoint's SV_CKPT_MASTER/M/V). */
enum { SV_FSDP_MASTER = 0, SV_FSDP_M = 1, SV_FSDP_V = 2, SV_FSDP_KINDS = 3 };
/* The weight EMA (fsdp/ema.h), a fourth kind a source may supply (SV_FSDP_LOAD_EMA). */
enum { SV_FSDP_EMA = 3 };

/* Produce `count` elements of tensor t, kind, starting at element tensor_begin, which sit at
 * element shard_offset of unit u's shard, into dst (count floats). t is the flat entry index
 * (sv_layout.entries; also the tensor index of a checkpoint index, which is in flat order).
 * A source may leave dst as it is (the tensor keeps what the staging held). */
typedef sv_status (*sv_fsdp_source_fn)(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                                       uint64_t count, float *dst);

#define SV_FSDP_LOAD_KEEP \
    1u                        /* master staging starts as the current master, not zeros (tensors the
                                 source leaves alone keep their values) */
#define SV_FSDP_LOAD_OPTIM 2u /* m and v come from the source too (kinds M, V); otherwise zeroed */
#define SV_FSDP_LOAD_EMA 4u   /* the EMA shards (f->cfg.ema) come from the source (kind EMA) */

/* For each unit: for each kind (MASTER; M and V with SV_FSDP_LOAD_OPTIM) stage zeros (or the
 * current master, SV_FSDP_LOAD_KEEP), call src for every non-empty piece of this rank's shard,
 * upload. Then zero what the source did not supply (m, v), the gradient shard and the local
 * accumulator. With f->cfg.ema the EMA shards come from the source (SV_FSDP_LOAD_EMA) or start
 * as a copy of the loaded masters (fsdp/ema.h). No communication. Memory: one host buffer of sv_layout_max_shard floats. */
sv_status sv_fsdp_load_masters(sv_fsdp *f, sv_fsdp_source_fn src, void *ctx, unsigned flags);

#endif
