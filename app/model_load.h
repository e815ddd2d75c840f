/* Where eval and predict get a trained model from: a timm-named safetensors file (--weights) or
 * a shardvit checkpoint (--ckpt), plus the class names that go with it. */
#ifndef SV_APP_MODEL_LOAD_H
#define SV_APP_MODEL_LOAD_H

#include "app/run.h"
#include "ckpt/checkpoint.h"

/* Where eval and predict take the trained model from: --weights FILE | --ckpt PATH [--ema]. */
typedef struct sv_model_source {
    const char *weights; /* timm-named safetensors file */
    const char *ckpt;    /* shardvit checkpoint: run dir, checkpoint root or step dir */
    int ema;             /* the checkpoint's weight EMA instead of its weights */
} sv_model_source;

/* The flag rows of a sv_model_source lvalue `s`, for a command's flag table. */
#define SV_MODEL_SOURCE_FLAGS(s) \
    {"weights", SV_FLAG_STR, &(s).weights, 0, 0, "timm-named safetensors file (config.json beside it is read)", 0}, \
        {"ckpt", SV_FLAG_STR, &(s).ckpt, 0, 0, "shardvit checkpoint: run dir, checkpoint root or step dir", 0}, { \
        "ema", SV_FLAG_BOOL, &(s).ema, 0, 1, \
            "the checkpoint's weight EMA instead of its weights (train --model-ema; needs --ckpt)", 0 \
    }

/* The rules of those flags: exactly one of --weights / --ckpt, and --ema only with --ckpt. 0 when
 * they hold, else the usage line "shardvit CMD: ..." on stderr and 2 (sv_cmd_usage_error). */
int sv_model_source_check(const char *cmd, const sv_model_source *s);

/* --ckpt read once: s->ckpt is replaced by the step directory it names now (a run directory's or
 * a root's `latest` is read here, once), kept in buf (cap bytes), so that everything this process
 * reads of the checkpoint is of one step. Call before anything else reads s->ckpt; nothing to do
 * for --weights. sv_app_load_model then checks that every rank pinned the same step. */
sv_status sv_model_source_pin(sv_model_source *s, char *buf, size_t cap);

/* Model shape for --weights/--ckpt: the preset named by mo->model, then what the weights say
 * (eval/weights.h: config.json next to the file, tensor shapes), then every field the user set
 * explicitly (non-zero in *mo). The result has every field filled (no 0 = "preset"), ready for
 * sv_run_setup. */
sv_status sv_app_model_config(const sv_model_opts *mo, const char *weights, const char *ckpt, sv_model_opts *out);

/* Replace the freshly initialised master shards of r with the trained weights (every rank).
 * ema: the checkpoint's weight EMA (ckpt only; sv_ckpt_load_ema_weights). Collective for ckpt:
 * every rank must have resolved it to rank 0's step directory (sv_model_source_pin; `latest`
 * moved between the ranks' reads is an error on every rank, never a model mixed of two steps). */
sv_status sv_app_load_model(sv_run *r, const char *weights, const char *ckpt, int ema);

/* What the model recorded besides its weights (ckpt/checkpoint.h sv_ckpt_meta): the checkpoint
 * index for `ckpt`, config.json beside `weights` (a missing config.json: nothing recorded).
 * src (cap bytes) names where it came from, for log lines; lsrc (cap bytes) the file that holds
 * its label names (index.json, config.json). free(m->labels) releases the names. */
sv_status sv_app_model_meta(const char *weights, const char *ckpt, sv_ckpt_meta *m, char *src, char *lsrc, size_t cap);

/* A class-name list file for a model of num_classes classes: sv_classes_read (UTF-8 text, one
 * distinct name per line), then checked against the model. Where it recorded label names
 * (`meta`, nullable; read from the file lsrc) the list must hold exactly those, in that order
 * (fewer than num_classes when the model was trained on fewer classes); else one name per class.
 * need_all: one name per class in any case (outputs that name every class). A list that
 * disagrees is an SV_ERR_INVALID naming the list, and for recorded names lsrc and the first
 * differing class: printed names never contradict the model. free(*names) releases everything. */
sv_status sv_app_class_list(const char *path, const sv_ckpt_meta *meta, const char *lsrc, int num_classes, int need_all,
                            char ***names, int *n);

/* Class names: `classes` (a file, one name per line) when given; else classes.txt in the
 * directory of `weights`, or of `ckpt` and its parents up to two levels (a step directory sits
 * in <run>/checkpoints/); else the label names the model recorded (`meta`, nullable). A list
 * is checked as sv_app_class_list does (it never overrides the recorded names); recorded names
 * must not outnumber num_classes. *names = NULL and *n = 0 when none is found (not an error).
 * free(*names) releases everything. */
sv_status sv_app_class_names(const char *classes, const char *weights, const char *ckpt, const sv_ckpt_meta *meta,
                             const char *lsrc, int num_classes, char ***names, int *n);

#endif
