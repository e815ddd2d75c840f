/* The evaluation transform of eval, predict and train: the --crop-pct/--interp/--mean/--std
 * flags (unset unless given), what the model recorded (checkpoint index or config.json beside
 * the weights, ckpt/checkpoint.h sv_ckpt_meta) and the defaults, resolved field by field with
 * the source of each value named in one log line (docs/evaluation.md). */
#ifndef SV_APP_XFORM_H
#define SV_APP_XFORM_H

#include "ckpt/checkpoint.h"

typedef struct sv_xform_flags {
    double crop_pct;        /* < 0: unset */
    const char *interp;     /* NULL: unset; bilinear | bicubic */
    const char *mean, *std; /* NULL: unset; a comma list (1 or in_chans values) | imagenet | half */
} sv_xform_flags;

#define SV_XFORM_FLAGS_UNSET \
    { .crop_pct = -1, .interp = NULL, .mean = NULL, .std = NULL }

/* Flag table entries for the four flags above (x: an sv_xform_flags lvalue). */
/* clang-format off: one flag per line */
#define SV_XFORM_FLAGS(x) \
    {"crop-pct", \
     SV_FLAG_DOUBLE, \
     &(x).crop_pct, \
     -1, \
     SV_CKPT_CROP_PCT_MAX, \
     "resize the shorter side to img/crop-pct, then center crop: in [0.05, 1], or -1 (unset: the model's, else " \
     "0.875)", \
     0}, \
        {"interp", SV_FLAG_STR, &(x).interp, \
         0,        0,           "resize interpolation bilinear | bicubic (unset: the model's, else bilinear)", \
         0}, \
        {"mean", \
         SV_FLAG_STR, \
         &(x).mean, \
         0, \
         0, \
         "normalisation mean: comma list | imagenet | half (unset: the model's, else half for 1 channel, imagenet " \
         "for 3)", \
         0}, \
    { \
        "std", SV_FLAG_STR, &(x).std, 0, 0, "normalisation std: comma list | imagenet | half (unset: as --mean)", 0 \
    }
/* clang-format on */

/* One of --mean/--std (is_std selects which preset values) for `channels` channels into out[3].
 * imagenet: 0.485,0.456,0.406 / 0.229,0.224,0.225 (one channel: 0.449 / 0.226, as the loader);
 * half: 0.5. A list of one value applies to every channel. std must be > 0. Errors:
 * SV_ERR_INVALID naming the flag. */
sv_status sv_xform_parse_norm(const char *spec, int is_std, int channels, double out[3]);

/* Check --crop-pct (-1, unset, or in [SV_CKPT_CROP_PCT_MIN, SV_CKPT_CROP_PCT_MAX]), --interp (NULL
 * is fine) and the syntax of --mean/--std for `channels` channels. */
sv_status sv_xform_flags_check(const sv_xform_flags *fl, int channels);

/* Resolve: each field from the flag when set, else from `model` when model->present, else the
 * default (sv_ckpt_xform_default). img/channels are the model's. Logs one line naming every
 * value and its source (flag / model: <model_src> / default), plus a line when the model has
 * no recorded transform. *out has present = 1. */
sv_status sv_xform_resolve(const sv_xform_flags *fl, const sv_ckpt_xform *model, const char *model_src, int img,
                           int channels, sv_ckpt_xform *out);

/* The recorded transform of a training run for a model of img x img x channels: flags
 * (crop_pct/interp/mean/std as given), else for mean/std the normalisation of the model the run
 * starts from (`init`: the --init-from file's config.json pretrained_cfg, nullable; used when
 * init->present and its channel count matches; one log line names the source `init_src`), else
 * for a --model given as a timm name (`timm_name`, nullable) that name's data config (model/config.h
 * sv_vit_timm_data: mean, std, and the evaluation's interpolation and crop_pct, as timm's train.py
 * resolves them; 3 channels only; one log line names it), else the defaults. */
sv_status sv_xform_for_training(const sv_xform_flags *fl, const sv_ckpt_xform *init, const char *init_src,
                                const char *timm_name, int img, int channels, sv_ckpt_xform *out);

/* 0 = SV_INTERP_BILINEAR, 1 = SV_INTERP_BICUBIC for a checked transform. */
int sv_xform_interp_id(const sv_ckpt_xform *x);

#endif
