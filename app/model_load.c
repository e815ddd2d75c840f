#include "app/model_load.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/log.h"
#include "data/dataset.h"
#include "eval/weights.h"
#include "fsdp/agree.h"
#include "ckpt/checkpoint.h"

sv_status sv_app_model_config(const sv_model_opts *mo, const char *weights, const char *ckpt, sv_model_opts *out) {
    sv_vit_config c;
    SV_TRY(sv_vit_preset(mo->model ? mo->model : "vit-28", &c));
    int have_heads = 0;
    if (weights)
        SV_TRY(sv_weights_infer_config(weights, &c, &have_heads));
    else if (ckpt) {
        char step_dir[SV_CKPT_PATH_MAX];
        sv_ckpt_index idx;
        memset(&idx, 0, sizeof idx);
        SV_TRY(sv_ckpt_resolve(ckpt, step_dir, sizeof step_dir));
        SV_TRY(sv_ckpt_index_load(&idx, step_dir));
        c = idx.cfg;
        have_heads = 1;
        sv_ckpt_index_free(&idx);
        sv_vit_config pc;
        if (mo->model && (sv_vit_preset(mo->model, &pc) != SV_OK || strcmp(pc.name, c.name)))
            return SV_FAIL(SV_ERR_INVALID,
                           "--model %s: checkpoint %s holds a %s model (img %d, patch %d, dim %d, depth %d, %d heads), "
                           "which it runs as it is: drop --model",
                           mo->model, step_dir, c.name, c.img, c.patch, c.dim, c.depth, c.heads);
        if ((mo->img && mo->img != c.img) || (mo->patch && mo->patch != c.patch))
            return SV_FAIL(SV_ERR_INVALID,
                           "--%s %d: checkpoint %s holds a model of img %d patch %d; to run it at another "
                           "resolution, export it (shardvit export) and pass the file as --weights, which resamples "
                           "pos_embed / patch_embed as timm does",
                           mo->img && mo->img != c.img ? "img" : "patch",
                           mo->img && mo->img != c.img ? mo->img : mo->patch, step_dir, c.img, c.patch);
    }
    /* The head count is in no tensor shape: without config.json's num_heads it is the user's to
     * give (--heads, or --model naming the preset whose count to take), never a silent guess; with
     * it, another --heads would compute another model than the one trained, silently. */
    if (weights && have_heads && mo->heads && mo->heads != c.heads)
        return SV_FAIL(SV_ERR_INVALID,
                       "--heads %d: the config.json beside %s records num_heads %d for these weights (another head "
                       "count splits the same attention weights into other heads: another model); drop --heads",
                       mo->heads, weights, c.heads);
    if (weights && !have_heads && !mo->heads && (!mo->model || c.dim % c.heads))
        return SV_FAIL(SV_ERR_INVALID,
                       "%s: the number of attention heads is not in the file (no config.json with num_heads "
                       "beside it): pass --heads%s",
                       weights, c.dim % c.heads ? "" : " (or --model PRESET to take that preset's count)");
    *out = *mo;
    out->img = mo->img ? mo->img : c.img;
    out->patch = mo->patch ? mo->patch : c.patch;
    out->in_chans = mo->in_chans ? mo->in_chans : c.in_chans;
    out->num_classes = mo->num_classes ? mo->num_classes : c.num_classes;
    out->dim = mo->dim ? mo->dim : c.dim;
    out->depth = mo->depth ? mo->depth : c.depth;
    out->heads = mo->heads ? mo->heads : c.heads;
    out->mlp_ratio = mo->mlp_ratio ? mo->mlp_ratio : c.mlp_ratio;
    /* the architecture options come from the weights (their tensors say which are present) */
    out->layer_scale = mo->layer_scale ? mo->layer_scale : c.layer_scale;
    out->global_pool = mo->global_pool ? mo->global_pool : sv_vit_pool_name(c.global_pool);
    out->class_token = mo->class_token ? mo->class_token : c.no_class_token ? "0" : "1";
    out->reg_tokens = mo->reg_tokens ? mo->reg_tokens : c.reg_tokens;
    out->no_embed_class = mo->no_embed_class ? mo->no_embed_class : c.no_embed_class;
    return SV_OK;
}

sv_status sv_model_source_pin(sv_model_source *s, char *buf, size_t cap) {
    if (!s->ckpt) return SV_OK;
    SV_TRY(sv_ckpt_resolve(s->ckpt, buf, cap));
    s->ckpt = buf;
    return SV_OK;
}

sv_status sv_app_load_model(sv_run *r, const char *weights, const char *ckpt, int ema) {
    if (weights) return sv_weights_load(&r->fsdp, weights);
    char step_dir[SV_CKPT_PATH_MAX], first[SV_CKPT_PATH_MAX];
    sv_status rst = sv_ckpt_resolve(ckpt, step_dir, sizeof step_dir);
    snprintf(first, sizeof first, "%s", rst == SV_OK ? step_dir : "");
    SV_TRY(sv_run_agreed(r, sv_fsdp_world_bcast_str(&r->fsdp, first, sizeof first)));
    if (rst == SV_OK && strcmp(first, step_dir))
        rst =
            SV_FAIL(SV_ERR_INVALID,
                    "--ckpt: rank 0 loads %s, this rank %s: the checkpoint's `latest` changed while the ranks read it "
                    "(a run still saving?); give the step directory itself",
                    first, step_dir);
    SV_TRY(sv_run_agree(r, rst));
    sv_ckpt_train_state st;
    if (ema)
        SV_TRY(sv_ckpt_load_ema_weights(&r->fsdp, step_dir, &st));
    else
        SV_TRY(sv_ckpt_load(&r->fsdp, step_dir, NULL, &st));
    SV_INFO("weights: checkpoint %s (step %lld)%s", step_dir, (long long)st.step, ema ? ", its weight EMA" : "");
    return SV_OK;
}

/* dir of `path` (the path itself when it is a directory) + "/classes.txt", if anything exists at that name
 * (lstat: a dangling link or an unreadable file is then read, and refused with its error, rather than
 * passed over as absent). */
static int classes_near(const char *path, char *out, size_t cap) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    if (access(dir, F_OK) == 0) {
        char probe[PATH_MAX + 8];
        snprintf(probe, sizeof probe, "%s/.", dir);
        if (access(probe, F_OK) != 0) (void)sv_fileio_parent(path, dir); /* a file: start at its directory */
    }
    snprintf(out, cap, "%s/classes.txt", dir);
    struct stat st;              /* anything at the name counts (a dangling link, a loop, an unreadable file): */
    return lstat(out, &st) == 0; /* the guarded reader then names what is wrong with it */
}

/* classes.txt of a checkpoint's run directory, if anything exists at that name: the run directory
 * is CKPT itself when it holds checkpoints/latest, else the directory above a checkpoint root
 * named "checkpoints" (train's OUT/checkpoints, given as the root or as one of its step
 * directories). A root elsewhere (--ckpt-dir) has no run directory to look in: nothing above
 * the path given is searched (the recorded label names serve), so an unrelated classes.txt
 * higher up is never taken for the model's. */
static int classes_of_run(const char *ckpt, char *out, size_t cap) {
    /* the parents below fit: each is shorter than the path it is taken from */
    char dir[PATH_MAX], root[PATH_MAX], probe[PATH_MAX + 32];
    struct stat st;
    snprintf(dir, sizeof dir, "%s", ckpt);
    for (size_t L = strlen(dir); L > 1 && dir[L - 1] == '/'; L--) dir[L - 1] = 0;
    snprintf(probe, sizeof probe, "%s/checkpoints/latest", dir);
    if (lstat(probe, &st) != 0) { /* not a run directory: a root, or a step directory in one */
        snprintf(probe, sizeof probe, "%s/latest", dir);
        if (lstat(probe, &st) == 0)
            snprintf(root, sizeof root, "%s", dir);
        else
            (void)sv_fileio_parent(dir, root);
        const char *s = strrchr(root, '/');
        if (strcmp(s ? s + 1 : root, "checkpoints")) return 0;
        (void)sv_fileio_parent(root, dir);
    }
    snprintf(out, cap, "%s/classes.txt", dir);
    return lstat(out, &st) == 0; /* anything at the name: a dangling link is read and refused */
}

sv_status sv_app_model_meta(const char *weights, const char *ckpt, sv_ckpt_meta *m, char *src, char *lsrc, size_t cap) {
    memset(m, 0, sizeof *m);
    if (weights) {
        int found;
        snprintf(src, cap, "%s", weights);
        sv_ckpt_config_path(weights, lsrc, cap);
        SV_TRY(sv_ckpt_read_config_meta(weights, m, &found));
        if (!found) snprintf(src, cap, "%s (no config.json beside it)", weights);
        return SV_OK;
    }
    char step_dir[SV_CKPT_PATH_MAX];
    sv_ckpt_index idx;
    SV_TRY(sv_ckpt_resolve(ckpt, step_dir, sizeof step_dir));
    SV_TRY(sv_ckpt_index_load(&idx, step_dir));
    snprintf(src, cap, "%s/index.json", step_dir);
    snprintf(lsrc, cap, "%s", src);
    sv_status st = sv_ckpt_meta_copy(m, &idx.meta);
    sv_ckpt_index_free(&idx);
    return st;
}

/* Names printed for the model's classes must be its classes: never more names than it has
 * classes; where it recorded label names, exactly those in that order (fewer than its classes
 * when it was trained on fewer: the rest have no name); else one per class. need_all: one per
 * class in any case (outputs that name every class). `what` names the list in the message. */
static sv_status check_names(char *const *names, int n, const char *what, const sv_ckpt_meta *meta, const char *lsrc,
                             int num_classes, int need_all) {
    int own = meta && names == meta->labels;                      /* the recorded names themselves */
    int recorded = meta && meta->labels && names != meta->labels; /* a list, and recorded names */
    if (n > num_classes || (n < num_classes && (need_all || !(own || recorded))))
        return SV_FAIL(SV_ERR_INVALID, "%s lists %d class names but the model has %d classes", what, n, num_classes);
    if (!recorded) return SV_OK;
    /* the recorded names first; need_all: a model trained with more classes than its data had
     * recorded fewer names, and the list then names the rest too */
    if (need_all ? n < meta->n_labels : meta->n_labels != n)
        return SV_FAIL(SV_ERR_INVALID, "%s lists %d class names but %s records %d label names for the model", what, n,
                       lsrc, meta->n_labels);
    for (int k = 0; k < meta->n_labels; k++) {
        if (!strcmp(names[k], meta->labels[k])) continue;
        char a[SV_ESC_CAP], b[SV_ESC_CAP];
        return SV_FAIL(SV_ERR_INVALID,
                       "%s contradicts the label names the model recorded in %s: class %d is \"%s\" there but \"%s\" "
                       "in the list (correct or remove the list)",
                       what, lsrc, k, sv_log_esc(meta->labels[k], a, sizeof a), sv_log_esc(names[k], b, sizeof b));
    }
    return SV_OK;
}

sv_status sv_app_class_list(const char *path, const sv_ckpt_meta *meta, const char *lsrc, int num_classes, int need_all,
                            char ***names, int *n) {
    char what[4200];
    SV_TRY(sv_classes_read(path, names, n));
    snprintf(what, sizeof what, "class list %s", path);
    sv_status st = check_names(*names, *n, what, meta, lsrc, num_classes, need_all);
    if (st != SV_OK) {
        free(*names);
        *names = NULL;
        *n = 0;
    }
    return st;
}

sv_status sv_app_class_names(const char *classes, const char *weights, const char *ckpt, const sv_ckpt_meta *meta,
                             const char *lsrc, int num_classes, char ***names, int *n) {
    *names = NULL;
    *n = 0;
    char p[PATH_MAX + 16];
    if (classes) return sv_app_class_list(classes, meta, lsrc, num_classes, 0, names, n);
    if ((weights && classes_near(weights, p, sizeof p)) || (ckpt && classes_of_run(ckpt, p, sizeof p))) {
        SV_INFO("class names from %s", p);
        return sv_app_class_list(p, meta, lsrc, num_classes, 0, names, n);
    }
    if (meta && meta->labels) {
        char what[4200];
        snprintf(what, sizeof what, "%s (label_names)", lsrc);
        SV_TRY(check_names(meta->labels, meta->n_labels, what, meta, lsrc, num_classes, 0));
        sv_ckpt_meta copy;
        SV_TRY(sv_ckpt_meta_copy(&copy, meta));
        SV_INFO("class names: the %d label names the model recorded", copy.n_labels);
        *names = copy.labels;
        *n = copy.n_labels;
    }
    return SV_OK;
}

int sv_model_source_check(const char *cmd, const sv_model_source *s) {
    if (!s->weights == !s->ckpt) return sv_cmd_usage_error(cmd, "--weights / --ckpt: give exactly one of them");
    if (s->ema && !s->ckpt)
        return sv_cmd_usage_error(cmd,
                                  "--ema needs --ckpt (a --weights file holds one set of weights; write the EMA "
                                  "as one with shardvit export --ema)");
    return 0;
}
