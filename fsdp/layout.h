/* FSDP units and flat-parameter layout (docs/fsdp.md).
 *
 * Unit 0 is the root unit (patch embed, cls_token, reg_token, pos_embed, final norm, head). Units
 * 1..n-1 each hold consecutive transformer blocks: one block per unit with wrap "block", or
 * as many consecutive blocks as fit a byte budget with wrap "auto:<MB>" (at least one).
 *
 * A unit's tensors are concatenated in canonical order (model/params.h) into one flat buffer:
 * each tensor starts at a multiple of SV_FLAT_ALIGN elements, and the total is padded to a
 * multiple of shard_world * SV_FLAT_ALIGN. Rank r of the shard group owns elements
 * [r*shard, (r+1)*shard). Tensors may straddle ranks; padding elements are always zero and
 * never updated. The per-tensor table (name, shape, offset, numel) is what checkpoints store. */
#ifndef SV_FSDP_LAYOUT_H
#define SV_FSDP_LAYOUT_H

#include <stddef.h>

#include "model/params.h"

#define SV_FLAT_ALIGN 64 /* elements: 256 B in fp32, 128 B in bf16 */
#define SV_MAX_UNITS 512

typedef struct sv_flat_entry {
    int param;     /* index into the canonical parameter table */
    size_t offset; /* element offset inside the unit's flat buffer */
    size_t numel;
} sv_flat_entry;

typedef struct sv_unit {
    int first_block, last_block; /* inclusive; -1/-1 for the root unit */
    int first_entry, n_entries;  /* range in sv_layout.entries */
    size_t numel;                /* end of the last tensor (before padding) */
    size_t padded;               /* multiple of shard_world * SV_FLAT_ALIGN */
    size_t shard;                /* padded / shard_world: elements owned per rank */
} sv_unit;

typedef struct sv_layout {
    sv_vit_config cfg;
    int n_params;
    sv_param_info *params; /* [n_params], owned */
    int n_units;
    sv_unit units[SV_MAX_UNITS];
    sv_flat_entry *entries; /* [n_params], owned; grouped by unit */
    int shard_world;
    size_t max_padded;   /* largest block unit (root excluded) */
    size_t total_padded; /* sum over units */
} sv_layout;

/* wrap_bytes == 0: one unit per block; > 0: group consecutive blocks while the group's fp32
 * bytes stay <= wrap_bytes (each unit gets at least one block). */
sv_status sv_layout_build(sv_layout *L, const sv_vit_config *cfg, int head_zero_init, int shard_world,
                          size_t wrap_bytes);
void sv_layout_free(sv_layout *L);

/* Intersection of [e->offset, e->offset+e->numel) with rank r's shard of unit u, as
 * (begin element inside the tensor, count, offset inside the shard). count == 0: no overlap. */
typedef struct sv_shard_piece {
    size_t tensor_begin, count, shard_offset;
} sv_shard_piece;
sv_shard_piece sv_layout_piece(const sv_unit *u, const sv_flat_entry *e, int rank);

/* Unit index holding block l. */
int sv_layout_unit_of_block(const sv_layout *L, int l);

/* The largest per-rank shard (elements) over all units, the root included: the size of any
 * one-unit host staging buffer. */
size_t sv_layout_max_shard(const sv_layout *L);

/* The largest padded unit (elements) over all units, the root included (the field max_padded
 * leaves the root out): the size of any one-unit full buffer. */
size_t sv_layout_max_padded(const sv_layout *L);

#endif
