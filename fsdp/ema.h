/* shardvit fsdp: model weight EMA (timm's --model-ema, ModelEmaV3) on sharded masters.
 *
 * The EMA is elementwise, so it shards like the master weights: with sv_fsdp_config.ema set,
 * sv_fsdp_carve gives every unit u an fp32 shard f->us[u].ema (units[u].shard floats, device
 * memory, counted as sv_fsdp_mem.ema and carved after every other FSDP buffer) and each rank
 * keeps the EMA of exactly the master elements it owns. No communication: an update is one
 * backend op per unit over the whole shard (padding is zero in both and stays zero). Replica
 * groups (hybrid_shard, no_shard) hold identical masters, so they hold identical EMAs.
 *
 * Semantics (timm train.py: `model_ema.update(model, step=num_updates)` after each optimizer
 * step; ModelEmaV3.get_decay / lerp_):
 *   - the EMA starts as a copy of the masters whenever they are loaded (fsdp/load.h: fresh
 *     init, --init-from, a checkpoint without EMA) unless the source supplies it;
 *   - after applied update n (1-based count of applied optimizer steps, f->step -
 *     f->ctr.skipped_steps), ema = lerp(ema, master, 1 - decay(n)) per element
 *     (core/elementwise.h sv_ema_elem, torch.lerp_'s formula, fp32), where
 *       decay(n) = 0 for n <= 1 (the first update copies the weights), else
 *       decay(n) = D, or with warmup clamp(1 - (1 + (n - 1))^(-2/3), 0, D);
 *     decay is computed in double and w = (float)(1 - decay) is the lerp weight;
 *   - a step skipped for a non-finite gradient norm leaves the EMA (and its count n) unchanged:
 *     nothing was applied. (timm with a GradScaler still lerps towards the unchanged weights
 *     and counts the step; here the count is the applied updates, like AdamW's bias correction.)
 *
 * Evaluating the EMA weights: sv_ema_swap exchanges master and EMA pointers of every unit, so
 * the forward (which casts masters before each all-gather) computes with the EMA; swap again
 * to restore. Bitwise exact, no copies. */
#ifndef SV_FSDP_EMA_H
#define SV_FSDP_EMA_H

#include <stdint.h>

#include "fsdp/fsdp.h"

#define SV_EMA_DEFAULT_DECAY 0.9998 /* timm train.py --model-ema-decay default */
#define SV_EMA_WARMUP_GAMMA 1.0     /* ModelEmaV3 warmup_gamma default */
#define SV_EMA_WARMUP_POWER (2.0 / 3.0)

typedef struct sv_ema_opts {
    double decay; /* D in [0, 1] */
    int warmup;   /* 1: --model-ema-warmup */
} sv_ema_opts;

/* The decay of applied update n (1-based), timm ModelEmaV3.get_decay(step=n). */
double sv_ema_decay(const sv_ema_opts *o, int64_t n);

/* After sv_fsdp_optimizer_step: when the step was applied (!skipped) and f->cfg.ema, lerp every
 * unit's EMA shard towards its master with decay(f->step - f->ctr.skipped_steps). No-op
 * otherwise. No communication. */
sv_status sv_ema_update(sv_fsdp *f, const sv_ema_opts *o, int skipped);

/* ema := master for every unit (device copies). */
sv_status sv_ema_reset(sv_fsdp *f);

/* Exchange us[u].master and us[u].ema for every unit (f->cfg.ema must be set); call twice. */
void sv_ema_swap(sv_fsdp *f);

#endif
