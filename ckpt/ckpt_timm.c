/* timm-compatible export (checkpoint -> safetensors + config.json) and import (safetensors ->
 * master shards). A file of another image or patch size is adapted on import as timm does
 * (pos_embed / patch_embed resampling): ckpt/ckpt_adapt.c, on model/resample.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/elementwise.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_meta.h"
#include "ckpt/ckpt_out.h"
#include "ckpt/ckpt_adapt.h"

/* ---- export ------------------------------------------------------------------------------- */

typedef struct {
    sv_ckpt_reader rd;
    sv_st_dtype dtype;
    int kind;   /* SV_CKPT_MASTER, or SV_CKPT_EMA (export --ema) */
    float *tmp; /* bf16 conversion staging */
} export_ctx;

static sv_status export_fill(void *vctx, size_t index, uint64_t byte_off, void *buf, size_t n) {
    export_ctx *c = vctx;
    size_t esz = c->dtype == SV_ST_BF16 ? 2 : 4;
    if (byte_off % esz || n % esz) return SV_FAIL(SV_ERR_INVALID, "export: unaligned chunk");
    uint64_t e0 = byte_off / esz, cnt = n / esz;
    if (c->dtype == SV_ST_F32) return sv_ckpt_read(&c->rd, c->kind, (int)index, e0, cnt, buf);
    SV_TRY(sv_ckpt_read(&c->rd, c->kind, (int)index, e0, cnt, c->tmp));
    uint16_t *o = buf;
    for (uint64_t i = 0; i < cnt; i++) o[i] = sv_f32_to_bf16(c->tmp[i]);
    return SV_OK;
}

/* timm architecture name of an exactly matching preset (model/config.h sv_vit_timm_name);
 * otherwise a ViT entry point whose model_args (which override every shape field) describe the
 * model. */
static const char *timm_arch(const sv_vit_config *c) {
    const char *n = sv_vit_timm_name(c);
    return n ? n : "vit_base_patch16_224";
}

void sv_ckpt_config_path(const char *st_path, char *path, size_t cap) {
    const char *slash = strrchr(st_path, '/');
    if (slash)
        snprintf(path, cap, "%.*s/config.json", (int)(slash - st_path), st_path);
    else
        snprintf(path, cap, "config.json");
}

static void write_labels(sv_json_writer *w, const sv_ckpt_meta *m) {
    sv_json_key(w, "label_names");
    sv_json_arr_begin(w);
    for (int i = 0; i < m->n_labels; i++) sv_json_str(w, m->labels[i]);
    sv_json_arr_end(w);
}

/* timm's hub config.json (timm/models/_hub.py save_config): top-level architecture, shape and
 * label_names, model_args for create_model, pretrained_cfg for resolve_data_config. */
static sv_status config_text(const sv_vit_config *c, const sv_ckpt_meta *m, char **out, size_t *out_len) {
    sv_ckpt_xform x = m->xform;
    if (!x.present) sv_ckpt_xform_default(&x, c->img, c->in_chans);
    const char *arch = timm_arch(c);
    sv_json_writer w;
    sv_json_writer_init(&w, 2);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "architecture"), sv_json_str(&w, arch);
    sv_json_key(&w, "num_classes"), sv_json_i64(&w, c->num_classes);
    sv_json_key(&w, "num_features"), sv_json_i64(&w, c->dim);
    sv_json_key(&w, "global_pool"), sv_json_str(&w, sv_vit_pool_name(c->global_pool));
    sv_json_key(&w, "img_size"), sv_json_i64(&w, c->img);
    sv_json_key(&w, "patch_size"), sv_json_i64(&w, c->patch);
    sv_json_key(&w, "embed_dim"), sv_json_i64(&w, c->dim);
    sv_json_key(&w, "depth"), sv_json_i64(&w, c->depth);
    sv_json_key(&w, "num_heads"), sv_json_i64(&w, c->heads);
    sv_json_key(&w, "mlp_ratio"), sv_json_f64(&w, c->mlp_ratio);
    sv_json_key(&w, "in_chans"), sv_json_i64(&w, c->in_chans);
    if (m->labels) write_labels(&w, m);
    sv_json_key(&w, "model_args");
    sv_json_obj_begin(&w);
    sv_json_key(&w, "img_size"), sv_json_i64(&w, c->img);
    sv_json_key(&w, "patch_size"), sv_json_i64(&w, c->patch);
    sv_json_key(&w, "in_chans"), sv_json_i64(&w, c->in_chans);
    sv_json_key(&w, "num_classes"), sv_json_i64(&w, c->num_classes);
    sv_json_key(&w, "embed_dim"), sv_json_i64(&w, c->dim);
    sv_json_key(&w, "depth"), sv_json_i64(&w, c->depth);
    sv_json_key(&w, "num_heads"), sv_json_i64(&w, c->heads);
    sv_json_key(&w, "mlp_ratio"), sv_json_f64(&w, c->mlp_ratio);
    sv_json_key(&w, "qkv_bias"), sv_json_bool(&w, 1);
    sv_json_key(&w, "class_token"), sv_json_bool(&w, !c->no_class_token);
    sv_json_key(&w, "global_pool"), sv_json_str(&w, sv_vit_pool_name(c->global_pool));
    /* timm: fc_norm defaults to (global_pool == 'avg'), i.e. norm.* vs fc_norm.* as exported */
    sv_json_key(&w, "fc_norm"), sv_json_bool(&w, c->global_pool == SV_POOL_AVG);
    if (c->layer_scale > 0) sv_json_key(&w, "init_values"), sv_json_f64(&w, c->layer_scale);
    if (c->reg_tokens > 0) sv_json_key(&w, "reg_tokens"), sv_json_i64(&w, c->reg_tokens);
    if (c->no_embed_class) sv_json_key(&w, "no_embed_class"), sv_json_bool(&w, 1);
    sv_json_obj_end(&w);
    sv_json_key(&w, "pretrained_cfg");
    sv_json_obj_begin(&w);
    sv_json_key(&w, "architecture"), sv_json_str(&w, arch);
    sv_json_key(&w, "input_size");
    sv_json_arr_begin(&w);
    sv_json_i64(&w, c->in_chans), sv_json_i64(&w, c->img), sv_json_i64(&w, c->img);
    sv_json_arr_end(&w);
    sv_json_key(&w, "interpolation"), sv_json_str(&w, x.interp);
    sv_json_key(&w, "crop_pct"), sv_json_f64(&w, x.crop_pct);
    sv_json_key(&w, "crop_mode"), sv_json_str(&w, "center");
    sv_json_key(&w, "mean");
    sv_json_arr_begin(&w);
    for (int i = 0; i < c->in_chans; i++) sv_json_f64(&w, x.mean[i < x.channels ? i : 0]);
    sv_json_arr_end(&w);
    sv_json_key(&w, "std");
    sv_json_arr_begin(&w);
    for (int i = 0; i < c->in_chans; i++) sv_json_f64(&w, x.std[i < x.channels ? i : 0]);
    sv_json_arr_end(&w);
    sv_json_key(&w, "num_classes"), sv_json_i64(&w, c->num_classes);
    if (m->labels) write_labels(&w, m);
    sv_json_key(&w, "first_conv"), sv_json_str(&w, "patch_embed.proj");
    sv_json_key(&w, "classifier"), sv_json_str(&w, "head");
    sv_json_obj_end(&w);
    sv_json_obj_end(&w);
    const char *text;
    size_t len;
    sv_status st = sv_json_writer_finish(&w, &text, &len);
    if (st == SV_OK) {
        char *nl = malloc(len + 1);
        if (!nl)
            st = SV_FAIL(SV_ERR_OOM, "config.json");
        else {
            memcpy(nl, text, len);
            nl[len] = '\n';
            *out = nl;
            *out_len = len + 1;
        }
    }
    sv_json_writer_free(&w);
    return st;
}

/* classes.txt: the recorded label names, one per line (data/dataset.h sv_classes_read reads it;
 * label names never hold a newline, ckpt_meta.c refuses them). */
static sv_status classes_text(const sv_ckpt_meta *m, char **out, size_t *out_len) {
    size_t n = 0;
    for (int i = 0; i < m->n_labels; i++) n += strlen(m->labels[i]) + 1;
    char *t = malloc(n + 1), *p = t;
    if (!t) return SV_FAIL(SV_ERR_OOM, "classes.txt");
    for (int i = 0; i < m->n_labels; i++) {
        size_t k = strlen(m->labels[i]);
        memcpy(p, m->labels[i], k);
        p[k] = '\n';
        p += k + 1;
    }
    *out = t;
    *out_len = n;
    return SV_OK;
}

/* The file `name` in the directory of st_path. */
static void sidecar_path(const char *st_path, const char *name, char *path, size_t cap) {
    const char *slash = strrchr(st_path, '/');
    if (slash)
        snprintf(path, cap, "%.*s/%s", (int)(slash - st_path), st_path, name);
    else
        snprintf(path, cap, "%s", name);
}

/* Is the existing file at path a model config.json, as export (and timm) write it: a JSON
 * object with an "architecture" string? */
static int is_model_config(const char *path) {
    static const char *const keys[] = {"architecture"};
    static const sv_json_type types[] = {SV_JSON_STRING};
    return sv_json_file_has_members(path, SV_CKPT_CONFIG_MAX, keys, types, 1);
}

static sv_status is_shardvit_export(const char *st_path, int *yes);

/* Does the file at path hold exactly text[0, len)? (read through the FIFO-safe reader) */
static int file_holds(const char *path, const char *text, size_t len) {
    char *have = NULL;
    size_t n = 0;
    int same = sv_fileio_read_small(path, len + 1, &have, &n) == SV_OK && n == len && !memcmp(have, text, len);
    free(have);
    sv_err_clear();
    return same;
}

/* The first "*.safetensors" in the directory of `out` other than `out` itself (and other than
 * temporaries "*.tmp-*") into name; 0 when there is none (or the directory cannot be listed: the
 * output checks then report it). */
static int other_weights(const char *out, char *name, size_t cap) {
    char dir[SV_CKPT_PATH_MAX];
    const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out) : 1, slash ? out : ".");
    if (slash == out) snprintf(dir, sizeof dir, "/");
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(dp));) {
        size_t L = strlen(e->d_name);
        found = L > 12 && !strcmp(e->d_name + L - 12, ".safetensors") && strcmp(e->d_name, base) &&
            !strstr(e->d_name, ".tmp-");
        if (found) snprintf(name, cap, "%s", e->d_name);
    }
    closedir(dp);
    return found;
}

/* Every output of an export, checked before anything is written (ckpt/ckpt_out.h): none inside
 * the checkpoint, none replacing a non-regular file, an existing OUT only when it is an earlier
 * shardvit export (a safetensors file with shardvit's metadata), and OUT not one of its own
 * sidecar names. config.json and classes.txt describe the one model of their directory (eval
 * takes the head count and the transform from config.json), so they are replaced only when
 * that cannot change how other files load: an existing config.json must be a model config (an
 * "architecture" entry) and either hold exactly what this export writes, or describe no
 * weights but OUT's (no other *.safetensors beside it) while OUT is an earlier export; an
 * existing classes.txt is replaced only beside such a config.json or when it already holds the
 * checkpoint's label names. A user's files of those names, a downloaded model's config beside
 * its weights and another export's sidecars are never overwritten. */
static sv_status check_export_outputs(const char *dir, const char *out, const char *cfg, const char *cls,
                                      const sv_vit_config *vc, const sv_ckpt_meta *meta) {
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (!strcmp(base, "config.json") || !strcmp(base, "classes.txt"))
        return SV_FAIL(SV_ERR_INVALID,
                       "export output %s: %s is the name of a file export writes beside the weights; "
                       "choose another name (e.g. model.safetensors)",
                       out, base);
    SV_TRY(sv_ckpt_out_check(out, dir, 0, "export output"));
    SV_TRY(sv_ckpt_out_check(cfg, dir, 0, "export output"));
    if (cls) SV_TRY(sv_ckpt_out_check(cls, dir, 0, "export output"));
    const int cfg_exists = access(cfg, F_OK) == 0;
    if (cfg_exists && !is_model_config(cfg))
        return SV_FAIL(SV_ERR_INVALID,
                       "export: %s exists and is not a model config.json (no \"architecture\"): refusing to replace "
                       "it; remove it or export into another directory",
                       cfg);
    int out_export = 0; /* OUT exists and is an earlier shardvit export */
    if (access(out, F_OK) == 0) {
        sv_status os = is_shardvit_export(out, &out_export);
        if (os != SV_OK || !out_export) {
            char m[700];
            snprintf(m, sizeof m, "%s", os != SV_OK ? sv_err_msg() : "no shardvit metadata: not an export");
            return SV_FAIL(SV_ERR_INVALID,
                           "export output %s exists and is not an earlier shardvit export (%s): refusing to replace "
                           "it; remove it or choose another path",
                           out, m);
        }
    }
    /* timm reads a file as safetensors by this suffix, and the rule above for config.json counts
     * the weights beside it by it: an export named otherwise would leave its config.json free to
     * be replaced by the next export into the directory, changing how these weights load */
    size_t ol = strlen(base);
    if (ol <= 12 || strcmp(base + ol - 12, ".safetensors")) /* and a name before it (other_weights' rule) */
        return SV_FAIL(SV_ERR_INVALID,
                       "export output %s: the name must end in .safetensors, after a name of its own (timm reads the "
                       "file by that suffix, "
                       "and the config.json beside it is kept for the weights files of that name), e.g. "
                       "model.safetensors",
                       out);
    if (cfg_exists) {
        char *text = NULL, other[256];
        size_t len = 0;
        SV_TRY(config_text(vc, meta, &text, &len));
        int same = file_holds(cfg, text, len);
        free(text);
        if (!same && other_weights(out, other, sizeof other))
            return SV_FAIL(SV_ERR_INVALID,
                           "export: %s describes other weights in that directory (%s): replacing it would change "
                           "how they load (eval and predict take the head count and the transform from it); export "
                           "each model into a directory of its own",
                           cfg, other);
        if (!same && !out_export)
            return SV_FAIL(SV_ERR_INVALID,
                           "export: %s exists and describes another model than this export, and %s is no earlier "
                           "export it could belong to: refusing to replace it; remove it or export into another "
                           "directory",
                           cfg, out);
    }
    if (cls && access(cls, F_OK) == 0 && !cfg_exists) {
        /* the same names export would write (train's RUN/classes.txt when exporting into the run
         * directory) are replaced by themselves: nothing is lost */
        char *text = NULL;
        size_t len = 0;
        SV_TRY(classes_text(meta, &text, &len));
        int same = file_holds(cls, text, len);
        free(text);
        if (!same)
            return SV_FAIL(SV_ERR_INVALID,
                           "export: %s exists, is not the label names this checkpoint records and no earlier "
                           "export's config.json is beside it: refusing to replace it; remove it or export into "
                           "another directory",
                           cls);
    }
    return SV_OK;
}

/* Two exports into one directory run one after the other: each writes three files (weights,
 * config.json, classes.txt) renamed into place one by one, so two at once could leave the weights
 * of one beside the config.json of the other. The output directory's host-wide lock
 * (sv_fileio_dir_lock, tag "export"), waited for when another export holds it. Where the lock
 * cannot be had (no such directory yet, a temporary directory without room) the export goes on
 * unlocked. Returns the descriptor for sv_fileio_dir_unlock with `lock`, or -1. */
static int lock_out_dir(const char *out, char *lock) {
    char dir[PATH_MAX];
    if (sv_fileio_parent(out, dir) != SV_OK) return -1;
    int fd = sv_fileio_dir_lock(dir, "export", 0, lock);
    if (fd == SV_FILEIO_LOCK_BUSY) {
        SV_INFO("export: another export is writing into %s: waiting for it to finish", dir);
        fd = sv_fileio_dir_lock(dir, "export", 1, lock);
    }
    return fd < 0 ? -1 : fd;
}

sv_status sv_ckpt_export(const char *in, const char *out, sv_st_dtype dtype, int ema) {
    if (dtype != SV_ST_F32 && dtype != SV_ST_BF16) return SV_FAIL(SV_ERR_INVALID, "export dtype must be F32 or BF16");
    char dir[SV_CKPT_PATH_MAX], cfg[SV_CKPT_PATH_MAX + 16], cls[SV_CKPT_PATH_MAX + 16];
    SV_TRY(sv_ckpt_resolve(in, dir, sizeof dir));
    sv_ckpt_index idx;
    SV_TRY(sv_ckpt_index_load(&idx, dir));
    if (ema && !idx.state.ema) {
        sv_ckpt_index_free(&idx);
        return SV_FAIL(SV_ERR_FORMAT, "--ema: %s holds no weight EMA (it was saved by a run without --model-ema)", dir);
    }
    int have_cls = idx.meta.labels != NULL;
    char lock[PATH_MAX];
    const int lock_fd = lock_out_dir(out, lock); /* before the checks: they judge what is there now */
    sidecar_path(out, "config.json", cfg, sizeof cfg);
    sidecar_path(out, "classes.txt", cls, sizeof cls);
    sv_status st = check_export_outputs(dir, out, cfg, have_cls ? cls : NULL, &idx.cfg, &idx.meta);
    /* Staging: every output goes to a fresh temporary of our own first ("<name>.tmp-XXXXXXXX",
     * O_EXCL; the safetensors writer stages its own file the same way and renames it onto t_st).
     * Only then are they renamed into place. */
    char t_st[SV_CKPT_PATH_MAX + 48], t_cfg[SV_CKPT_PATH_MAX + 48], t_cls[SV_CKPT_PATH_MAX + 48];
    int made_st = 0, made_cfg = 0, made_cls = 0;
    if (st == SV_OK && (st = sv_fileio_tmp_file(out, t_st, sizeof t_st, NULL)) == SV_OK) made_st = 1;
    export_ctx c = {.dtype = dtype, .kind = ema ? SV_CKPT_EMA : SV_CKPT_MASTER};
    sv_st_entry *ents = calloc((size_t)idx.n_tensors, sizeof *ents);
    c.tmp = malloc((size_t)4 << 21); /* the writer asks for <= 4 MiB: <= 2 Mi bf16 elements */
    if (st == SV_OK && (!ents || !c.tmp)) st = SV_FAIL(SV_ERR_OOM, "export tables");
    if (st == SV_OK) st = sv_ckpt_reader_open(&c.rd, &idx);
    if (st == SV_OK) {
        for (int t = 0; t < idx.n_tensors; t++)
            ents[t] = (sv_st_entry){idx.tensors[t].name, dtype, idx.tensors[t].ndim, idx.tensors[t].shape, NULL};
        char step[32];
        snprintf(step, sizeof step, "%lld", (long long)idx.state.step);
        const char *meta[] = {"format",         "pt",         "shardvit_step",    step,
                              "shardvit_model", idx.cfg.name, "shardvit_weights", "ema"};
        st = sv_safetensors_write(t_st, ents, (size_t)idx.n_tensors, meta, ema ? 4 : 3, export_fill, &c);
        sv_ckpt_reader_close(&c.rd);
    }
    if (st == SV_OK && !idx.meta.xform.present)
        SV_INFO("export: %s/index.json records no eval transform (an older checkpoint): config.json gets the "
                "defaults (crop_pct %g, bilinear, %s mean/std)",
                dir, SV_CKPT_DEFAULT_CROP_PCT, idx.cfg.in_chans == 1 ? "0.5" : "ImageNet");
    char *text = NULL;
    size_t len = 0;
    if (st == SV_OK) st = config_text(&idx.cfg, &idx.meta, &text, &len);
    int fd = -1;
    if (st == SV_OK) st = sv_fileio_tmp_file(cfg, t_cfg, sizeof t_cfg, &fd);
    if (st == SV_OK) {
        made_cfg = 1;
        st = sv_fileio_write_all(fd, text, len, t_cfg);
        if (st == SV_OK) st = sv_fileio_fsync(fd, t_cfg);
        close(fd);
    }
    free(text);
    text = NULL;
    if (st == SV_OK && have_cls) st = classes_text(&idx.meta, &text, &len);
    if (st == SV_OK && have_cls) st = sv_fileio_tmp_file(cls, t_cls, sizeof t_cls, &fd);
    if (st == SV_OK && have_cls) {
        made_cls = 1;
        st = sv_fileio_write_all(fd, text, len, t_cls);
        if (st == SV_OK) st = sv_fileio_fsync(fd, t_cls);
        close(fd);
    }
    free(text);
    /* Commit: the weights first, then the files describing them, as one step for a signal (cut
     * between two renames, new weights would stand beside an earlier export's config.json) */
    sigset_t held;
    sv_fileio_commit_begin(&held);
    if (st == SV_OK && (st = sv_fileio_rename(t_st, out, 0)) == SV_OK) made_st = 0;
    if (st == SV_OK && (st = sv_fileio_rename(t_cfg, cfg, 0)) == SV_OK) made_cfg = 0;
    if (st == SV_OK && have_cls && (st = sv_fileio_rename(t_cls, cls, 0)) == SV_OK) made_cls = 0;
    sv_fileio_commit_end(&held);
    /* On failure remove exactly the temporaries created above. */
    if (made_st) unlink(t_st);
    if (made_cfg) unlink(t_cfg);
    if (made_cls) unlink(t_cls);
    if (st == SV_OK && !have_cls && access(cls, F_OK) == 0)
        SV_WARN("export: %s/index.json records no label names, so no classes.txt was written; the existing %s is not "
                "from this checkpoint (predict would use it)",
                dir, cls);
    if (st == SV_OK)
        SV_INFO("export: %s -> %s (%d tensors, %s) + config.json%s", dir, out, idx.n_tensors, sv_st_dtype_name(dtype),
                have_cls ? " + classes.txt" : "");
    free(ents);
    free(c.tmp);
    sv_ckpt_index_free(&idx);
    sv_fileio_dir_unlock(lock_fd, lock);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

/* ---- reading config.json back ------------------------------------------------------------ */

sv_status sv_ckpt_config_read(const char *st_path, char *path, size_t cap, char **text, size_t *len, int *found) {
    *found = 0;
    *text = NULL;
    *len = 0;
    sv_ckpt_config_path(st_path, path, cap);
    /* lstat, not access(): a dangling link or a link loop is something at that name, and must not
     * pass for "no config.json" (the transform and label names would be silently lost); never
     * opened blocking (it may be a FIFO: sv_fileio_read_small refuses it) */
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) return SV_OK;
        return SV_FAIL(SV_ERR_IO, "%s: %s", path, strerror(errno));
    }
    *found = 1;
    sv_status st = sv_fileio_read_small(path, SV_CKPT_CONFIG_MAX, text, len);
    if (st == SV_ERR_NOT_FOUND && S_ISLNK(sb.st_mode))
        st = SV_FAIL(SV_ERR_NOT_FOUND,
                     "%s is a symbolic link to a file that does not exist: the model's config.json cannot be read "
                     "(remove the link or restore its target)",
                     path);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

/* Was the safetensors file at st_path written by shardvit's export (its metadata names the
 * checkpoint's step and model)? */
static sv_status is_shardvit_export(const char *st_path, int *yes) {
    sv_st_file sf;
    SV_TRY(sv_safetensors_open(&sf, st_path));
    *yes = sv_safetensors_meta(&sf, "shardvit_model") != NULL || sv_safetensors_meta(&sf, "shardvit_step") != NULL;
    sv_safetensors_close(&sf);
    return SV_OK;
}

/* pretrained_cfg's transform into x. input_size is required; a key that is absent takes the value
 * timm's resolve_data_config (timm/data/config.py) takes then: crop_mode "center" (or null),
 * crop_pct 0.875, interpolation bicubic, mean / std ImageNet's (0.5 for one channel). */
static sv_status parse_pretrained_cfg(const sv_json *p, sv_ckpt_xform *x, const char *src) {
    const sv_json *in, *cm = sv_json_member_get(p, "crop_mode");
    const char *interp, *mode = "center";
    size_t ilen;
    int64_t v[3];
    SV_TRY(sv_json_get(p, "input_size", SV_JSON_ARRAY, &in));
    if (sv_json_count(in) != 3) return SV_FAIL(SV_ERR_FORMAT, "%s: pretrained_cfg.input_size is not [C, H, W]", src);
    for (int i = 0; i < 3; i++) SV_TRY(sv_json_as_i64(sv_json_index(in, (size_t)i), &v[i]));
    if (v[1] != v[2] || v[0] < 1 || v[0] > 3 || v[1] < 1 || v[1] > 1000000)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: pretrained_cfg.input_size [%lld, %lld, %lld] is not a square 1..3 channel "
                       "input",
                       src, (long long)v[0], (long long)v[1], (long long)v[2]);
    /* what timm's resolve_data_config takes for a key pretrained_cfg lacks: crop_pct 0.875,
     * bicubic, ImageNet's mean / std (0.5 for one channel here, as everywhere in shardvit) */
    sv_ckpt_xform_default(x, (int)v[1], (int)v[0]);
    snprintf(x->interp, sizeof x->interp, "bicubic");
    if (cm && cm->type != SV_JSON_NULL) SV_TRY(sv_json_as_str(cm, &mode, NULL));
    if (strcmp(mode, "center")) {
        char e[SV_ESC_CAP];
        return SV_FAIL(SV_ERR_FORMAT, "%s: pretrained_cfg.crop_mode \"%s\": only \"center\" is supported", src,
                       sv_log_esc(mode, e, sizeof e));
    }
    if (sv_json_member_get(p, "crop_pct")) SV_TRY(sv_json_get_f64(p, "crop_pct", &x->crop_pct));
    if (sv_json_member_get(p, "interpolation")) {
        SV_TRY(sv_json_get_str(p, "interpolation", &interp, &ilen));
        snprintf(x->interp, sizeof x->interp, "%s", ilen < sizeof x->interp ? interp : "?");
    }
    return sv_ckpt_xform_norm_parse(p, x, 1, 1, src, "pretrained_cfg");
}

sv_status sv_ckpt_read_config_meta(const char *st_path, sv_ckpt_meta *m, int *found) {
    char path[SV_CKPT_PATH_MAX + 16];
    memset(m, 0, sizeof *m);
    char *text;
    size_t len;
    SV_TRY(sv_ckpt_config_read(st_path, path, sizeof path, &text, &len, found));
    if (!*found) return SV_OK;
    sv_json_doc doc;
    sv_status st = sv_json_parse(&doc, text, len, path, NULL);
    free(text);
    SV_TRY(st);
    const sv_json *root = &doc.root, *p = sv_json_member_get(root, "pretrained_cfg"), *l;
    st = sv_json_expect(root, SV_JSON_OBJECT);
    /* shardvit's exports before the transform was recorded wrote a fixed pretrained_cfg without
     * crop_mode: not the model's own transform, so it is not used. Any other file's pretrained_cfg
     * without crop_mode (older timm wrote none) is the model's transform with timm's default
     * crop_mode. */
    int old_export = 0;
    const sv_json *cm = p && p->type == SV_JSON_OBJECT ? sv_json_member_get(p, "crop_mode") : NULL;
    if (st == SV_OK && p && p->type == SV_JSON_OBJECT && (!cm || cm->type == SV_JSON_NULL))
        st = is_shardvit_export(st_path, &old_export);
    if (st == SV_OK && p && p->type == SV_JSON_OBJECT && !old_export) st = parse_pretrained_cfg(p, &m->xform, path);
    l = sv_json_member_get(root, "label_names");
    if (!l && p) l = sv_json_member_get(p, "label_names");
    if (st == SV_OK && l && l->type != SV_JSON_NULL) st = sv_ckpt_labels_parse(l, &m->labels, &m->n_labels, path);
    sv_json_doc_free(&doc);
    if (st != SV_OK) {
        free(m->labels);
        memset(m, 0, sizeof *m);
    }
    return st;
}

/* ---- import ----------------------------------------------------------------------------- */

static int is_head(const char *n) { return !strcmp(n, "head.weight") || !strcmp(n, "head.bias"); }

static void shape_text(char *o, size_t cap, const int64_t *s, int nd) {
    size_t n = (size_t)snprintf(o, cap, "(");
    for (int d = 0; d < nd && n < cap; d++)
        n += (size_t)snprintf(o + n, cap - n, d ? ", %lld" : "%lld", (long long)s[d]);
    if (n < cap) snprintf(o + n, cap - n, ")");
}

/* The classifier head, head.weight (K, D) and head.bias (K), is one unit: both of the model's
 * class count are loaded; both of another class count (or neither: a headless backbone) leave
 * the whole head freshly initialised, and the log says so; one without the other, a weight and
 * a bias of different class counts, or shapes that are no head of width D are refused (loading
 * half a head would pair a trained weight with a fresh bias, or the reverse, silently). *fresh:
 * 1 when the head stays fresh; log: say so in the log. */
static sv_status plan_head(const sv_layout *L, const sv_st_file *sf, int log, int *fresh) {
    const sv_vit_config *c = &L->cfg;
    const sv_st_tensor *w = sv_safetensors_find(sf, "head.weight"), *b = sv_safetensors_find(sf, "head.bias");
    *fresh = 0;
    if (!w && !b) {
        *fresh = 1;
        if (log)
            SV_INFO("init-from: %s holds no head (head.weight, head.bias): the head (%d classes) is initialised fresh",
                    sf->path, c->num_classes);
        return SV_OK;
    }
    if (!w || !b)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: the file holds %s but no %s: a classifier head is loaded whole or not at all (remove "
                       "%s too to start with a fresh head)",
                       sf->path, w ? "head.weight" : "head.bias", w ? "head.bias" : "head.weight",
                       w ? "head.weight" : "head.bias");
    char a[96], bb[96];
    shape_text(a, sizeof a, w->shape, w->ndim);
    shape_text(bb, sizeof bb, b->shape, b->ndim);
    if (w->ndim != 2 || b->ndim != 1 || w->shape[1] != c->dim)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: head.weight %s and head.bias %s are not a classifier head of width %d ((K, %d) and (K))",
                       sf->path, a, bb, c->dim, c->dim);
    if (w->shape[0] != b->shape[0])
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: head.weight %s has %lld rows (classes) but head.bias %s has %lld: the head contradicts "
                       "itself",
                       sf->path, a, (long long)w->shape[0], bb, (long long)b->shape[0]);
    if (w->shape[0] != c->num_classes) {
        *fresh = 1;
        if (log)
            SV_INFO("init-from: head.weight is %s in %s but (%d, %d) here (--num-classes %d): the head is initialised "
                    "fresh",
                    a, sf->path, c->num_classes, c->dim, c->num_classes);
    }
    return SV_OK;
}

/* How each model tensor is sourced: 0 = copy, 1 = keep fresh init (head), 2 = resampled
 * (ckpt/ckpt_adapt.h: pos_embed of another grid, patch_embed of another patch size; kind[k]).
 * log: a fresh head is logged. */
static sv_status plan_import(const sv_layout *L, const sv_st_file *sf, int log, int *how, sv_adapt_kind *kind,
                             const sv_st_tensor **src) {
    const sv_vit_config *c = &L->cfg;
    /* register tokens first: their count also shifts pos_embed, and the flag is the better message */
    const sv_st_tensor *reg = sv_safetensors_find(sf, "reg_token");
    if (reg && reg->ndim != 3)
        return SV_FAIL(SV_ERR_FORMAT, "%s: tensor reg_token has %d dimensions, expected 3 (1, R, D)", sf->path,
                       reg->ndim);
    int64_t file_reg = reg ? reg->shape[1] : 0;
    if (file_reg != c->reg_tokens)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: the file has %lld register tokens (reg_token) but this model has %d (--reg-tokens)",
                       sf->path, (long long)file_reg, c->reg_tokens);
    /* every tensor but the head first (a file of another width is named by its first tensor),
     * then the head as a unit (plan_head: loaded as it is, or left fresh) */
    for (int k = 0; k < L->n_params; k++) {
        const sv_param_info *p = &L->params[L->entries[k].param];
        const sv_st_tensor *t = sv_safetensors_find(sf, p->name);
        src[k] = t;
        how[k] = 0;
        kind[k] = SV_ADAPT_NONE;
        if (is_head(p->name)) continue;
        if (!t) return SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s is missing", sf->path, p->name);
        int same = t->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = t->shape[d] == p->shape[d];
        if (same) continue;
        char a[96], b[96];
        shape_text(a, sizeof a, t->shape, t->ndim);
        shape_text(b, sizeof b, p->shape, p->ndim);
        SV_TRY(sv_ckpt_adapt_kind(sf, t, p, c, &kind[k]));
        if (kind[k] != SV_ADAPT_NONE) {
            how[k] = 2;
            continue;
        }
        return SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s has shape %s but this model needs %s", sf->path, p->name, a, b);
    }
    int fresh_head;
    SV_TRY(plan_head(L, sf, log, &fresh_head));
    for (int k = 0; k < L->n_params; k++) /* not fresh: both there with the model's shapes */
        if (is_head(L->params[L->entries[k].param].name)) how[k] = fresh_head ? 1 : 0;
    /* nothing else in the file: every tensor a parameter found above (marked by its place in the
     * header, so this is linear in the number of tensors however many there are) */
    unsigned char *used = calloc(sf->n_tensors ? sf->n_tensors : 1, 1);
    if (!used) return SV_FAIL(SV_ERR_OOM, "import tables");
    for (int k = 0; k < L->n_params; k++)
        if (src[k]) used[src[k] - sf->tensors] = 1;
    sv_status st = SV_OK;
    for (size_t i = 0; i < sf->n_tensors && st == SV_OK; i++) {
        char e[SV_ESC_CAP];
        if (!used[i])
            st = SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s is not a parameter of this model (depth %d)", sf->path,
                         sv_log_esc(sf->tensors[i].name, e, sizeof e), c->depth);
    }
    free(used);
    return st;
}

static const char *nonfinite_kind(float v) { return isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

sv_status sv_ckpt_check_finite(const sv_st_file *sf, const sv_st_tensor *t) {
    enum { CHUNK = 1 << 18 };
    float *buf = malloc((size_t)CHUNK * sizeof *buf);
    if (!buf) return SV_FAIL(SV_ERR_OOM, "finite check buffer");
    sv_status st = SV_OK;
    for (uint64_t i = 0; i < t->numel && st == SV_OK; i += CHUNK) {
        uint64_t n = t->numel - i < CHUNK ? t->numel - i : CHUNK;
        st = sv_safetensors_read_f32(sf, t, i, n, buf);
        for (uint64_t j = 0; j < n && st == SV_OK; j++) {
            if (isfinite(buf[j])) continue;
            char e[SV_ESC_CAP], at[160];
            uint64_t x = i + j;
            size_t o = (size_t)snprintf(at, sizeof at, "[");
            /* multi-index in row-major order */
            uint64_t idx[SV_ST_MAX_DIMS], r = x;
            for (int d = t->ndim - 1; d >= 0; d--) {
                uint64_t dim = t->shape[d] > 0 ? (uint64_t)t->shape[d] : 1;
                idx[d] = r % dim;
                r /= dim;
            }
            for (int d = 0; d < t->ndim && o < sizeof at; d++)
                o += (size_t)snprintf(at + o, sizeof at - o, d ? ", %llu" : "%llu", (unsigned long long)idx[d]);
            if (o < sizeof at) snprintf(at + o, sizeof at - o, "]");
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s: tensor %s holds a non-finite value: element %llu %s is %s (refusing "
                         "weights with NaN/Inf)",
                         sf->path, sv_log_esc(t->name, e, sizeof e), (unsigned long long)x, at, nonfinite_kind(buf[j]));
        }
    }
    free(buf);
    return st;
}

sv_status sv_ckpt_values_finite(const sv_st_file *sf, const sv_st_tensor *t, const float *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            sv_status st = sv_ckpt_check_finite(sf, t);
            char e[SV_ESC_CAP];
            return st != SV_OK ? st
                               : SV_FAIL(SV_ERR_IO, "%s: tensor %s changed while it was read", sf->path,
                                         sv_log_esc(t->name, e, sizeof e));
        }
    return SV_OK;
}

sv_status sv_ckpt_check_import(const sv_layout *L, const char *path, int log, int *n_loaded) {
    sv_st_file sf;
    SV_TRY(sv_safetensors_open(&sf, path));
    int n = L->n_params;
    int *how = calloc((size_t)n, sizeof *how);
    sv_adapt_kind *kind = calloc((size_t)n, sizeof *kind);
    const sv_st_tensor **src = calloc((size_t)n, sizeof *src);
    sv_status st = how && kind && src ? plan_import(L, &sf, log, how, kind, src) : SV_FAIL(SV_ERR_OOM, "import tables");
    *n_loaded = 0;
    for (int k = 0; k < n && st == SV_OK; k++) *n_loaded += how[k] != 1;
    for (int k = 0; k < n && st == SV_OK; k++) /* every value that would be loaded must be finite */
        if (how[k] != 1) st = sv_ckpt_check_finite(&sf, src[k]);
    for (int k = 0; k < n && st == SV_OK; k++) /* and every resampling possible */
        if (how[k] == 2) {
            float *v = NULL;
            st = sv_ckpt_adapt_read(&sf, src[k], &L->params[L->entries[k].param], &L->cfg, kind[k], "import", &v);
            free(v);
        }
    free(how);
    free(kind);
    free(src);
    sv_safetensors_close(&sf);
    return st;
}

/* --init-from values for the master-shard loader: how[t] 0 = copy from the file, 1 = keep the
 * fresh init (left as staged), 2 = the resampled tensor adapted[t]. */
typedef struct import_source {
    const sv_st_file *sf;
    const int *how;
    const sv_st_tensor **src;
    float *const *adapted;
} import_source;

static sv_status import_piece(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                              uint64_t count, float *dst) {
    const import_source *c = ctx;
    (void)u, (void)kind, (void)shard_offset;
    if (c->how[t] == 1) return SV_OK;
    if (c->how[t] == 2) {
        memcpy(dst, c->adapted[t] + tensor_begin, count * 4);
        return SV_OK;
    }
    SV_TRY(sv_safetensors_read_f32(c->sf, c->src[t], tensor_begin, count, dst));
    return sv_ckpt_values_finite(c->sf, c->src[t], dst, count);
}

sv_status sv_ckpt_init_from_safetensors(sv_fsdp *f, const char *path) {
    sv_st_file sf;
    sv_status os = sv_safetensors_open(&sf, path);
    sv_status as = sv_ckpt_agree_same_file(f, &sf, os, "--init-from");
    if (as != SV_OK) {
        if (os == SV_OK) sv_safetensors_close(&sf);
        return as;
    }
    int n = f->L.n_params;
    int *how = calloc((size_t)n, sizeof *how);
    sv_adapt_kind *kind = calloc((size_t)n, sizeof *kind);
    const sv_st_tensor **src = calloc((size_t)n, sizeof *src);
    float **adapted = calloc((size_t)n, sizeof *adapted);
    sv_status st = how && kind && src && adapted ? plan_import(&f->L, &sf, 1, how, kind, src)
                                                 : SV_FAIL(SV_ERR_OOM, "import tables");
    for (int k = 0; k < n && st == SV_OK; k++)
        if (how[k] == 2)
            st = sv_ckpt_adapt_read(&sf, src[k], &f->L.params[f->L.entries[k].param], &f->L.cfg, kind[k], "init-from",
                                    &adapted[k]);
    import_source c = {.sf = &sf, .how = how, .src = src, .adapted = adapted};
    /* fresh init stays where kept (SV_FSDP_LOAD_KEEP) */
    if (st == SV_OK) st = sv_fsdp_load_masters(f, import_piece, &c, SV_FSDP_LOAD_KEEP);
    int loaded = 0;
    for (int e = 0; e < n && st == SV_OK; e++) loaded += how[e] == 0;
    if (st == SV_OK) SV_INFO("init-from: %d of %d tensors loaded from %s; optimizer state zero", loaded, n, path);
    for (int k = 0; adapted && k < n; k++) free(adapted[k]);
    free(adapted);
    free(how);
    free(kind);
    free(src);
    sv_safetensors_close(&sf);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
