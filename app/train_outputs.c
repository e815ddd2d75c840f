/* shardvit train: the run's output paths, checked and prepared before training, and the
 * --dump-logits file (app/train_outputs.h). */
#include "app/train_outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt_out.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/trace.h"
#include "formats/safetensors.h"
#include "fsdp/agree.h"

int sv_train_outputs_absolute(const char *flag, const char **path, char *buf) {
    if (!*path || !**path || **path == '/') return -1;
    if (sv_fileio_absolute(*path, buf) != SV_OK) return sv_cmd_usage_error("train", "%s: %s", flag, sv_err_msg());
    *path = buf;
    return -1;
}

/* Is path an earlier --save-params / --save-ema-params dump of this model: a regular file (a
 * symbolic link is not followed) of exactly 4 bytes per parameter (*(const size_t *)params)? The
 * dump is raw fp32 with no header, so its size is all there is to recognise it by: a user's file
 * of another size, a safetensors file or a dump of another model is never replaced. */
static int earlier_dump(const char *path, const void *params) {
    uint64_t n = *(const size_t *)params;
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == 4 * n;
}

/* Is path an earlier --dump-logits file: a regular file (a symbolic link is not followed; the
 * safetensors reader refuses a FIFO without blocking) in safetensors format that holds exactly
 * the tensors sv_train_outputs_dump_logits writes, "images" F32 (B, C, H, W), "labels" I32 (B)
 * and "logits" F32 (B, K)? A model's weights, or any other safetensors or other file, is never
 * replaced. */
static int earlier_logits(const char *path, const void *unused) {
    (void)unused;
    struct stat sb;
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
    sv_st_file f;
    if (sv_safetensors_open(&f, path) != SV_OK) {
        sv_err_clear();
        return 0;
    }
    const sv_st_tensor *im = sv_safetensors_find(&f, "images"), *lb = sv_safetensors_find(&f, "labels"),
                       *lg = sv_safetensors_find(&f, "logits");
    int ok = f.n_tensors == 3 && im && lb && lg && im->dtype == SV_ST_F32 && im->ndim == 4 && lb->dtype == SV_ST_I32 &&
        lb->ndim == 1 && lg->dtype == SV_ST_F32 && lg->ndim == 2 && im->shape[0] == lb->shape[0] &&
        lg->shape[0] == lb->shape[0];
    sv_safetensors_close(&f);
    return ok;
}

/* A directory train creates or writes (flag `what`, path p) must not lie in an ImageFolder tree
 * the run reads (--data / --val-data): the scan would take it for a class, or for images of one. */
static sv_status outside_data(const char *p, const char *what, const char *data, const char *data_flag) {
    if (!p || !data || !*data || sv_dataset_spec_kind(data, NULL) != SV_DATASET_FOLDER) return SV_OK;
    char rp[PATH_MAX], rd[PATH_MAX];
    SV_TRY(sv_fileio_real_path(p, rp));
    SV_TRY(sv_fileio_real_path(data, rd));
    if (!sv_fileio_path_inside(rp, rd)) return SV_OK;
    return SV_FAIL(SV_ERR_INVALID,
                   "%s %s lies in the ImageFolder tree of %s %s (%s): the data scan would take its directory for a "
                   "class (or its files for images); put the run directory outside the data (nothing was created)",
                   what, p, data_flag, data, rd);
}

/* The directory of an end-of-run output exists (sv_ckpt_out_check_parent), or is --out or
 * --ckpt-dir itself, which does not exist yet and is created once every check has passed. */
static sv_status end_parent(const sv_train_outputs *o, const char *path, const char *flag) {
    char d[PATH_MAX], rd[PATH_MAX], rr[PATH_MAX];
    struct stat sb;
    if (path && *path && sv_fileio_parent(path, d) == SV_OK && stat(d, &sb) != 0 && errno == ENOENT &&
        sv_fileio_real_path(d, rd) == SV_OK) {
        const char *dirs[2] = {o->out, o->ckpt_dir};
        for (int i = 0; i < 2; i++)
            if (dirs[i] && sv_fileio_real_path(dirs[i], rr) == SV_OK && !strcmp(rd, rr)) return SV_OK;
    }
    sv_err_clear();
    return sv_ckpt_out_check_parent(path, flag);
}

/* The longest name a run writes below --out or --ckpt-dir: a shard's temporary inside a step
 * directory's temporary below OUT/checkpoints (about 60 bytes), the TensorBoard file named with
 * the host name (up to about 110), with room to spare. */
#define SV_RUN_NAME_ROOM 256

sv_status sv_train_outputs_check(const sv_train_outputs *o) {
    const char *dirs[2] = {o->out, o->ckpt_dir}, *dir_flags[2] = {"--out", "--ckpt-dir"};
    for (int i = 0; i < 2; i++) {
        /* a path the run's own files would take past PATH_MAX: refused now, not at the first save
         * after the training (a 4046-byte --out trained every step, then failed its checkpoint) */
        size_t len = dirs[i] ? strlen(dirs[i]) : 0;
        if (len + SV_RUN_NAME_ROOM >= PATH_MAX)
            return SV_FAIL(SV_ERR_INVALID,
                           "%s ...%s is %zu bytes long: the files a run writes below it (checkpoint step "
                           "directories, shards and their temporaries, the TensorBoard file) would pass the "
                           "system's path limit of %d bytes; choose a path shorter than %d bytes (nothing was "
                           "created)",
                           dir_flags[i], dirs[i] + len - 60, len, PATH_MAX, PATH_MAX - SV_RUN_NAME_ROOM);
        SV_TRY(outside_data(dirs[i], dir_flags[i], o->data, "--data"));
        SV_TRY(outside_data(dirs[i], dir_flags[i], o->val_data, "--val-data"));
    }
    if (o->out && o->ckpt_dir) {
        char a[PATH_MAX], b[PATH_MAX];
        SV_TRY(sv_fileio_real_path(o->out, a));
        SV_TRY(sv_fileio_real_path(o->ckpt_dir, b));
        if (!strcmp(a, b))
            return SV_FAIL(SV_ERR_INVALID,
                           "--ckpt-dir %s is the --out directory itself (%s): --ckpt-dir names a checkpoint root (its "
                           "step_* directories and `latest`), the run directory keeps its checkpoints in "
                           "OUT/checkpoints; drop --ckpt-dir, or give a directory of its own",
                           o->ckpt_dir, a);
        if (sv_fileio_path_inside(a, b))
            return SV_FAIL(SV_ERR_INVALID,
                           "--out %s lies inside --ckpt-dir %s (%s): a checkpoint root holds its step_* directories "
                           "and `latest` only, and a run directory inside one would be taken for part of it; give "
                           "--out a directory outside the checkpoint root (nothing was created)",
                           o->out, o->ckpt_dir, b);
    }
    /* neither lies in a checkpoint (a run there would be taken for part of it) */
    if (o->out) SV_TRY(sv_ckpt_out_check_run_dir(o->out, "--out"));
    if (o->ckpt_dir) SV_TRY(sv_ckpt_out_check_run_dir(o->ckpt_dir, "--ckpt-dir"));
    if (o->out) SV_TRY(sv_run_dir_check(o->out, "--out", o->resuming));
    if (o->ckpt_dir) SV_TRY(sv_run_dir_check(o->ckpt_dir, "--ckpt-dir", o->resuming));
    /* files written at the end: refused now rather than after the training (a missing directory,
     * a FIFO would block the open, a device would be written, a user's file replaced) */
    const char *ends[4] = {o->save_params, o->save_ema_params, o->dump_logits, o->trace};
    const char *end_flags[4] = {"--save-params", "--save-ema-params", "--dump-logits", "--trace"};
    for (int i = 0; i < 4; i++)
        if (ends[i]) SV_TRY(end_parent(o, ends[i], end_flags[i]));
    static const char dump_kind[] = "parameter dump of this model (4 bytes per parameter)";
    if (o->save_params)
        SV_TRY(sv_ckpt_out_check_earlier(o->save_params, "--save-params", earlier_dump, &o->params, dump_kind));
    if (o->dump_logits)
        SV_TRY(sv_ckpt_out_check_earlier(o->dump_logits, "--dump-logits", earlier_logits, NULL,
                                         "logits dump (a safetensors file of images, labels and logits)"));
    if (o->save_ema_params)
        SV_TRY(sv_ckpt_out_check_earlier(o->save_ema_params, "--save-ema-params", earlier_dump, &o->params, dump_kind));
    char p[4096];
    if (o->trace) {
        SV_TRY(sv_ckpt_out_check_earlier(o->trace, "--trace", sv_trace_is_merged, NULL, "shardvit trace"));
        SV_TRY(sv_run_check_trace_parts(o->trace, o->world));
    }
    if (o->out) {
        static const char *const mine[] = {"config.toml", "metrics.jsonl", "classes.txt", "eval.json", "confusion.csv"};
        for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
            snprintf(p, sizeof p, "%s/%s", o->out, mine[i]);
            SV_TRY(sv_ckpt_out_check(p, NULL, 0, "run directory file"));
        }
    }
    return SV_OK;
}

sv_status sv_train_outputs_lock(const sv_train_outputs *o, sv_run_lock locks[2]) {
    /* every check passed: only now is anything created (a refused start leaves no directory) */
    if (o->out) SV_TRY(sv_run_dir_lock(o->out, &locks[0]));
    /* the default checkpoint root OUT/checkpoints is locked as an explicit one is: another
     * training given it as --ckpt-dir (or as --out) would otherwise save, rotate and move
     * `latest` among this run's checkpoints */
    char buf[PATH_MAX];
    const char *root;
    SV_TRY(sv_run_dir_ckpt_root(o->ckpt_dir, o->out, buf, sizeof buf, &root));
    return root ? sv_run_dir_lock(root, &locks[1]) : SV_OK;
}

sv_status sv_train_outputs_shared(sv_run *r, const sv_train_outputs *o) {
    if (r->world <= 1 || (!o->ckpt_dir && !o->out)) return SV_OK; /* the same on every rank */
    /* per rank: the paths were made absolute against each rank's own working directory, so a
     * failure here may be one rank's alone; every rank still takes part in the broadcast */
    char buf[PATH_MAX], marker[PATH_MAX], mine[320] = "", first[320];
    const char *root = NULL;
    sv_status st = sv_run_dir_ckpt_root(o->ckpt_dir, o->out, buf, sizeof buf, &root);
    int n = st == SV_OK ? snprintf(marker, sizeof marker, "%s/%s", root, SV_RUN_DIR_MARKER) : -1;
    int err = 0;
    if (n > 0 && (size_t)n < sizeof marker) {
        int fd = open(marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        ssize_t got = fd >= 0 ? pread(fd, mine, sizeof mine - 1, 0) : -1;
        err = got < 0 ? errno : 0;
        mine[got > 0 ? got : 0] = 0;
        if (fd >= 0) close(fd);
    } else if (st == SV_OK)
        st = SV_FAIL(SV_ERR_INVALID, "the checkpoint root's lock path is too long: %.200s", root);
    memcpy(first, mine, sizeof first);
    SV_TRY(sv_run_agreed(r, sv_fsdp_world_bcast_str(&r->fsdp, first, sizeof first)));
    if (st == SV_OK && r->rank != 0 && (!mine[0] || strcmp(first, mine))) {
        sv_run_dir_printable(first);
        sv_run_dir_printable(mine);
        char here[400];
        if (mine[0])
            snprintf(here, sizeof here, "here it holds the lock of %s", mine);
        else
            snprintf(here, sizeof here, "here %s", err ? strerror(err) : "the lock is empty");
        st = SV_FAIL(SV_ERR_INVALID,
                     "%s is not the same directory on this rank as on rank 0 (rank 0's run: %s; %s): every rank "
                     "writes its own shard files into the checkpoint root, so --out / --ckpt-dir must be on a file "
                     "system all ranks share (docs/multinode.md); refused before the training, not at its first save",
                     marker, first[0] ? first : "?", here);
    }
    return sv_run_agree(r, st);
}

sv_status sv_train_outputs_write_config(const char *out, const sv_flag *flags) {
    if (!out) return SV_OK;
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s/config.toml", out) >= sizeof p)
        return SV_FAIL(SV_ERR_INVALID, "--out too long: %.200s", out);
    FILE *cf;
    SV_TRY(sv_fileio_fopen_write(p, SV_FILEIO_TRUNC, &cf));
    sv_flags_dump(flags, cf);
    int bad = ferror(cf);
    bad |= fclose(cf) != 0;
    if (bad) return SV_FAIL(SV_ERR_IO, "cannot write %s: %s", p, strerror(errno));
    return SV_OK;
}

sv_status sv_train_outputs_dump_logits(sv_run *r, const sv_loader_opts *train_lo, const char *path) {
    sv_loader_opts lo = *train_lo;
    lo.mode = SV_TRANSFORM_EVAL;
    lo.mixup_alpha = lo.cutmix_alpha = 0;
    const sv_vit_config *c = &r->vcfg;
    int B = r->micro_batch, K = c->num_classes;
    size_t img = (size_t)B * c->in_chans * c->img * c->img;
    sv_loader *ld;
    SV_TRY(sv_loader_create(&lo, &ld));
    const sv_batch *b = NULL;
    sv_eval_bufs eb = sv_run_eval_bufs(r); /* the run's micro-batch buffers, as evaluation uses them */
    float *d_img = eb.images, *d_f32 = eb.logits32, *logits = malloc((size_t)B * K * 4);
    sv_status st = sv_loader_next(ld, &b);
    if (st == SV_OK && !b) st = SV_FAIL(SV_ERR_INVALID, "--dump-logits: the data set yields no batch");
    if (st == SV_OK && !logits) st = SV_FAIL(SV_ERR_OOM, "logits");
    if (st == SV_OK) st = sv_be_upload(r->be, d_img, b->images, img * 4);
    /* the forward pass is collective: a rank whose batch failed must not leave the others in it */
    st = sv_fsdp_agree(&r->fsdp, st);
    if (st == SV_OK) st = sv_fsdp_forward(&r->fsdp, d_img);
    if (st == SV_OK) {
        if (sv_be_compute_elem_size(r->be) == 4)
            st = sv_be_download(r->be, logits, r->model.logits, (size_t)B * K * 4);
        else {
            st = sv_be_compute_to_f32(r->be, d_f32, r->model.logits, (size_t)B * K);
            if (st == SV_OK) st = sv_be_download(r->be, logits, d_f32, (size_t)B * K * 4);
        }
    }
    if (st == SV_OK && r->rank == 0) {
        int64_t si[4] = {B, c->in_chans, c->img, c->img}, sl[2] = {B, K}, sb[1] = {B};
        sv_st_entry e[3] = {{"images", SV_ST_F32, 4, si, b->images},
                            {"labels", SV_ST_I32, 1, sb, b->labels},
                            {"logits", SV_ST_F32, 2, sl, logits}};
        st = sv_safetensors_write(path, e, 3, NULL, 0, NULL, NULL);
        if (st == SV_OK) SV_INFO("dump-logits: %d images of rank 0 and their logits -> %s", B, path);
    }
    free(logits);
    sv_loader_destroy(ld);
    return st;
}
