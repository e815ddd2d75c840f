/* Update rules beside AdamW on the sharded fp32 masters (docs/fsdp.md "Optimizer"), and the
 * per-tensor learning-rate multipliers of layer-wise LR decay.
 *
 * Every rule runs piece by piece over each unit's master shard (sv_layout_piece: the part of one
 * tensor this rank owns), so the flat layout and the checkpointed m / v buffers are those of
 * AdamW: SGD keeps its momentum buffer in m, Lion its moving average in m (v stays zero), LAMB
 * uses m and v as Adam does.
 *
 * LAMB needs per-TENSOR norms of the weights and of the update while a tensor's elements are
 * split over the ranks of the shard group: each rank sums the squares of its pieces per tensor
 * (in double), the partials of every rank are all-gathered and summed in rank order, identical
 * on every rank and for every reduction algorithm (as the global gradient norm is). Replicas
 * (no_shard, hybrid_shard) hold identical shards and compute identical ratios without talking. */
#ifndef SV_FSDP_OPTIM_H
#define SV_FSDP_OPTIM_H

#include "fsdp/fsdp.h"

/* The walk every rule takes: fn for each non-empty piece (the part of one tensor in this rank's
 * shard: unit u, entry e, piece p) in unit and entry order; stops at the first error. */
typedef sv_status (*sv_fsdp_piece_fn)(void *ctx, sv_fsdp *f, int u, const sv_flat_entry *e, sv_shard_piece p);
sv_status sv_fsdp_each_piece(sv_fsdp *f, sv_fsdp_piece_fn fn, void *ctx);

/* The learning rate of tensor `param`'s pieces: lr, times its layer-decay scale when there is one. */
static inline float sv_optim_piece_lr(const sv_optim_config *oc, int param) {
    return oc->lr_scale ? oc->lr * oc->lr_scale[param] : oc->lr;
}

/* "adamw" | "lamb" | "sgd" | "lion". */
const char *sv_opt_name(sv_opt_kind k);
sv_status sv_opt_parse(const char *s, sv_opt_kind *out);

/* The non-AdamW step (oc->kind != SV_OPT_ADAMW) after the global norm: `clip` is the gradient
 * multiplier (1: none) and `t` the count of applied updates including this one (LAMB's bias
 * correction). Collective over the shard communicator for LAMB. */
sv_status sv_fsdp_optim_rule_step(sv_fsdp *f, const sv_optim_config *oc, float clip, long t);

/* Layer index of tensor `p` for layer-wise LR decay (timm param_groups_layer_decay on a ViT):
 * patch_embed.*, cls_token, reg_token, pos_embed: 0; blocks.i.*: i + 1; the final norm.*: depth (timm's
 * group_matcher puts it in the last block's group, MATCH_PREV_GROUP); everything else (head):
 * depth + 1. */
int sv_layer_decay_layer(const sv_param_info *p, int depth);
/* out[k] = decay^(depth + 1 - layer(k)) for every tensor of L (float, as applied). */
void sv_layer_decay_scales(const sv_layout *L, double decay, float *out);

#endif
