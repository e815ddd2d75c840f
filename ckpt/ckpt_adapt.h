/* Adapting a timm file's tensor to a model of another image or patch size, as timm's
 * checkpoint_filter_fn does when it loads weights (timm/models/vision_transformer.py, defaults
 * interpolation "bicubic", antialias True):
 *   pos_embed (1, 1 + g*g, D) of another square grid g -> the model's (1, 1 + G*G, D), G =
 *     img / patch: resample_abs_pos_embed (model/resample.h sv_vit_resample_pos_embed);
 *   patch_embed.proj.weight (D, C, q, q) of another patch size q -> (D, C, p, p):
 *     resample_patch_embed, the pseudo-inverse of the patch resize
 *     (sv_vit_resample_patch_embed).
 * Everything else must match in shape. Used by train --init-from / import (ckpt/ckpt_timm.c)
 * and eval / predict --weights at another --img or --patch (eval/weights.c). */
#ifndef SV_CKPT_CKPT_ADAPT_H
#define SV_CKPT_CKPT_ADAPT_H

#include "formats/safetensors.h"
#include "model/params.h"

typedef enum { SV_ADAPT_NONE = 0, SV_ADAPT_POS, SV_ADAPT_PATCH } sv_adapt_kind;

/* How file tensor t (whose shape differs from model tensor p of config c) can be brought to p's
 * shape: SV_ADAPT_POS / SV_ADAPT_PATCH, or SV_ADAPT_NONE (a genuine mismatch). SV_ERR_FORMAT for
 * a tensor that would be adapted but is out of range (a pos_embed grid above
 * SV_CKPT_MAX_POS_GRID per side, a patch above SV_PATCH_RESAMPLE_MAX), naming the file. */
sv_status sv_ckpt_adapt_kind(const sv_st_file *sf, const sv_st_tensor *t, const sv_param_info *p,
                             const sv_vit_config *c, sv_adapt_kind *kind);

/* Read all of t (converted to fp32, every value checked finite: sv_ckpt_check_finite's error
 * otherwise) and resample it to p's shape: *out = malloc'ed p->numel floats (free()). `who`
 * prefixes the log line that says what was resampled ("init-from", "weights"). */
sv_status sv_ckpt_adapt_read(const sv_st_file *sf, const sv_st_tensor *t, const sv_param_info *p,
                             const sv_vit_config *c, sv_adapt_kind kind, const char *who, float **out);

#endif
