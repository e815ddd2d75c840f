/* Internal to ckpt/: the eval transform and label names of a checkpoint as JSON (index.json's
 * "eval_transform" and "label_names"; config.json's pretrained_cfg is written in ckpt_timm.c). */
#ifndef SV_CKPT_CKPT_META_H
#define SV_CKPT_CKPT_META_H

#include "core/json.h"
#include "ckpt/checkpoint.h"

/* Append "eval_transform": {...} (when m->xform.present) and "label_names": [...] (when
 * m->labels) as members of the object being written. */
void sv_ckpt_meta_write(sv_json_writer *w, const sv_ckpt_meta *m);
/* Read the optional members above from object `root` into *m (zeroed first; absent members
 * leave present = 0 / labels = NULL). Malformed values: SV_ERR_FORMAT naming src and the path. */
sv_status sv_ckpt_meta_parse(const sv_json *root, sv_ckpt_meta *m, const char *src);
/* The tail that index.json's eval_transform and config.json's pretrained_cfg share: members
 * "mean" and "std" of object o (arrays of x->channels numbers, which must already be set; allow_one:
 * a single value stands for every channel, as timm's pretrained_cfg writes [0.5] for grey images)
 * into x->mean / x->std (keep_absent: a member that is absent leaves x's value as it was, a
 * default the caller set; otherwise both are required), then the whole of *x checked
 * (sv_ckpt_xform_check, messages prefixed "src: where") and x->present = 1. Wrong length or type:
 * SV_ERR_FORMAT naming src and the path; on any error x->present is left unchanged. */
sv_status sv_ckpt_xform_norm_parse(const sv_json *o, sv_ckpt_xform *x, int allow_one, int keep_absent, const char *src,
                                   const char *where);
/* Labels from a JSON array of strings into one allocation (*out NULL when the array is empty). */
sv_status sv_ckpt_labels_parse(const sv_json *arr, char ***out, int *n, const char *src);

#endif
