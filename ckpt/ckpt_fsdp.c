/* Collective checkpoint save and load on a live FSDP state (ckpt/checkpoint.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* renameat2 */
#endif
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/log.h"
#include "core/trace.h"
#include "ckpt/checkpoint.h"
#include "fsdp/agree.h"

static const char *g_crash_at; /* sv_ckpt_set_crash_point */

void sv_ckpt_set_crash_point(const char *spec) { g_crash_at = spec; }

/* The test hook of sv_ckpt_set_crash_point at `point` of the save of `step`. */
static void crash_point(const char *point, int64_t step) {
    const char *e = g_crash_at;
    if (!e) return;
    size_t n = strlen(point);
    if (strncmp(e, point, n)) return;
    if (e[n] == 0 || (e[n] == '@' && atoll(e + n + 1) == step)) {
        fprintf(stderr, "[shardvit] %s=%s: killing the process at '%s' of the save of step %lld\n", SV_CKPT_CRASH_ENV,
                e, point, (long long)step);
        raise(SIGKILL);
    }
}

/* "step_00001200" (no suffix) => 1200; else -1. */
static int cmp_desc(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* At least one decimal digit at *p? *p moves past the digits. */
static int digits(const char **p) {
    const char *q = *p;
    while (*q >= '0' && *q <= '9') q++;
    int ok = q > *p;
    *p = q;
    return ok;
}

/* Is `name` a file the checkpoint writer puts in a step directory (or its step_N.tmp): index.json,
 * a temporary of its atomic write "index.json.tmp-XXXXXXXX" (core/fileio.h sv_fileio_tmp_file;
 * left by a crash), or a shard file "shard_NNNNN-of-NNNNN.bin" (ckpt_index.c names them)? */
static int writer_file(const char *name) {
    static const char tmp[] = "index.json.tmp-";
    if (!strcmp(name, "index.json")) return 1;
    if (!strncmp(name, tmp, sizeof tmp - 1)) {
        const char *x = name + sizeof tmp - 1;
        size_t n = strlen(x);
        return n == 8 && strspn(x, "0123456789abcdef") == 8;
    }
    if (strncmp(name, "shard_", 6)) return 0;
    const char *q = name + 6;
    if (!digits(&q) || strncmp(q, "-of-", 4)) return 0;
    q += 4;
    return digits(&q) && !strcmp(q, ".bin");
}

/* The first entry of directory `dir` that the checkpoint writer did not make (not a regular file
 * of a writer_file name), escaped into name (SV_ESC_CAP bytes); "" when there is none. */
static sv_status first_foreign(const char *dir, char *name) {
    name[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return SV_FAIL(SV_ERR_IO, "cannot list %s: %s", dir, strerror(errno));
    char p[SV_CKPT_PATH_MAX + 300];
    struct stat sb;
    for (struct dirent *e; !name[0] && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int ours = writer_file(e->d_name) && (size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p &&
            lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
        if (!ours) sv_log_esc(e->d_name, name, SV_ESC_CAP);
    }
    closedir(d);
    return SV_OK;
}

/* Remove the step directory (or step_N.tmp) `dir` that this module wrote (why: for the log):
 * only the files the writer makes (writer_file), then the directory itself. A directory that
 * holds anything else (a user's file, a directory - another run's, say -, a link) is not a
 * directory the writer left as it made it: it is kept whole, with a warning naming what it
 * holds, and never deleted; so is a `dir` that is a link or not a directory. A complete step
 * directory is first renamed to step_N.tmp, so that a crash during the removal leaves an
 * incomplete directory the next save removes, never a step directory with half its files; index.json
 * goes first either way. SV_ERR_IO when a file cannot be removed. */
static sv_status remove_step(const char *dir, const char *why) {
    struct stat sb;
    if (lstat(dir, &sb) != 0) {
        if (errno == ENOENT) return SV_OK;
        return SV_FAIL(SV_ERR_IO, "%s: cannot remove %s: %s", why, dir, strerror(errno));
    }
    char foreign[SV_ESC_CAP];
    if (!S_ISDIR(sb.st_mode)) {
        SV_WARN("checkpoint: %s: kept %s: it is %s, not a directory the checkpoint writer made", why, dir,
                sv_fileio_mode_kind(sb.st_mode));
        return SV_OK;
    }
    SV_TRY(first_foreign(dir, foreign));
    if (foreign[0]) {
        SV_WARN("checkpoint: %s: kept %s: it holds '%s', which the checkpoint writer did not make (nothing in it "
                "was removed; remove it by hand once it is not needed)",
                why, dir, foreign);
        return SV_OK;
    }
    SV_INFO("checkpoint: %s: removing %s", why, dir);
    char gone[SV_CKPT_PATH_MAX + 300];
    const char *base = strrchr(dir, '/');
    snprintf(gone, sizeof gone, "%s", dir);
    if (!sv_ckpt_is_tmp_name(base ? base + 1 : dir) &&
        (size_t)snprintf(gone, sizeof gone, "%s.tmp", dir) < sizeof gone &&
        renameat2(AT_FDCWD, dir, AT_FDCWD, gone, RENAME_NOREPLACE) != 0)
        snprintf(gone, sizeof gone, "%s", dir); /* step_N.tmp exists (or no renameat2): in place */
    char p[SV_CKPT_PATH_MAX + 600];
    snprintf(p, sizeof p, "%s/index.json", gone);
    if (unlink(p) != 0 && errno != ENOENT)
        return SV_FAIL(SV_ERR_IO, "%s: cannot remove %s: %s", why, p, strerror(errno));
    DIR *d = opendir(gone);
    if (!d) return SV_FAIL(SV_ERR_IO, "%s: cannot list %s: %s", why, gone, strerror(errno));
    sv_status st = SV_OK;
    for (struct dirent *e; st == SV_OK && (e = readdir(d));) {
        if (!writer_file(e->d_name)) continue; /* ".", "..", and anything put there since the check */
        snprintf(p, sizeof p, "%s/%s", gone, e->d_name);
        if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(p) != 0 && errno != ENOENT)
            st = SV_FAIL(SV_ERR_IO, "%s: cannot remove %s: %s", why, p, strerror(errno));
    }
    closedir(d);
    SV_TRY(st);
    if (rmdir(gone) != 0) {
        if (errno != ENOTEMPTY && errno != EEXIST)
            return SV_FAIL(SV_ERR_IO, "%s: cannot remove the directory %s: %s", why, gone, strerror(errno));
        SV_TRY(first_foreign(gone, foreign));
        SV_WARN("checkpoint: %s: kept %s: it holds '%s', which the checkpoint writer did not make (put there during "
                "the removal; nothing else was left in it)",
                why, gone, foreign);
    }
    return SV_OK;
}

/* Remove stale *.tmp directories; with keep > 0 also complete checkpoints beyond the newest
 * `keep` (never `current`). Only names this module writes are touched, and in them only the
 * files it writes (remove_step: a directory holding anything else is kept, with a warning). */
static sv_status clean_root(const char *root, int keep, long long current) {
    DIR *d = opendir(root);
    if (!d) return SV_FAIL(SV_ERR_IO, "cannot list %s: %s", root, strerror(errno));
    long long steps[4096];
    int n = 0;
    char p[SV_CKPT_PATH_MAX + 300];
    sv_status st = SV_OK;
    struct dirent *de;
    while ((de = readdir(d)) && st == SV_OK) {
        snprintf(p, sizeof p, "%s/%s", root, de->d_name);
        if (sv_ckpt_is_tmp_name(de->d_name)) {
            st = remove_step(p, "incomplete save");
            continue;
        }
        long long s = sv_ckpt_step_of_name(de->d_name);
        if (s < 0 || n == 4096) continue;
        snprintf(p, sizeof p, "%s/%s/index.json", root, de->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0) steps[n++] = s;
    }
    closedir(d);
    SV_TRY(st);
    if (keep <= 0) return SV_OK;
    qsort(steps, (size_t)n, sizeof steps[0], cmp_desc);
    char why[32];
    snprintf(why, sizeof why, "--keep %d", keep);
    for (int i = keep; i < n; i++) {
        if (steps[i] == current) continue;
        snprintf(p, sizeof p, "%s/step_%08lld", root, steps[i]);
        SV_TRY(remove_step(p, why));
    }
    return SV_OK;
}

typedef struct {
    sv_fsdp *f;
} dev_src;

static sv_status device_src(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                            uint64_t count, float *dst) {
    sv_fsdp *f = ((dev_src *)ctx)->f;
    (void)t, (void)tensor_begin;
    const float *base = kind == SV_CKPT_MASTER ? f->us[u].master
        : kind == SV_CKPT_M                    ? f->us[u].m
        : kind == SV_CKPT_V                    ? f->us[u].v
                                               : f->us[u].ema;
    return sv_be_download(f->be, dst, base + shard_offset, (size_t)count * 4);
}

/* Rank 0's part after every shard is on disk: index.json, rename, `latest`, retention. */
static sv_status publish(sv_ckpt_index *idx, const char *root, const char *tmp, const char *final, const char *name,
                         int keep) {
    int64_t step = idx->state.step;
    crash_point("before_index", step);
    SV_TRY(sv_ckpt_index_store(idx, tmp));
    crash_point("before_rename", step);
    struct stat sb;
    if (stat(final, &sb) == 0) {
        /* Re-saving an existing step: swap atomically, then drop the old copy. */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) != 0)
            return SV_FAIL(SV_ERR_IO, "exchange %s <-> %s: %s", tmp, final, strerror(errno));
        SV_TRY(sv_fileio_fsync_dir(root));
        SV_TRY(remove_step(tmp, "the earlier copy of a re-saved step"));
    } else if (rename(tmp, final) != 0) {
        return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", tmp, final, strerror(errno));
    }
    SV_TRY(sv_fileio_fsync_dir(root));
    crash_point("before_latest", step);
    char latest[SV_CKPT_PATH_MAX + 16], text[64];
    snprintf(latest, sizeof latest, "%s/latest", root);
    int n = snprintf(text, sizeof text, "%s\n", name);
    SV_TRY(sv_fileio_write_atomic(latest, text, (size_t)n));
    return clean_root(root, keep, step);
}

/* One save between begin and finish. In the synchronous form the writer rank writes its shard
 * inside begin, straight from the device; in the asynchronous form begin copies the shard to host
 * memory and a thread writes it while training goes on. Finish is the collective rest of the
 * protocol either way: agreement, CRCs to rank 0, index.json, rename, `latest`, retention. */
struct sv_ckpt_async {
    int in_flight, writer, keep, threaded;
    pthread_t thread;
    atomic_int written; /* the writer thread has finished (or this rank writes nothing) */
    sv_status write_st; /* its result, and its message (error messages are per thread) */
    char write_err[1024];
    sv_ckpt_index idx;
    size_t maxc;
    char root[SV_CKPT_PATH_MAX], name[32], final[SV_CKPT_PATH_MAX + 40], tmp[SV_CKPT_PATH_MAX + 48];
    double t0, blocked_s;
    /* host copy of this rank's master / m / v (/ EMA) shards: unit u, kind k at snap + off[u] + k * n[u] */
    float *snap;
    size_t snap_cap, *off, *n;
    int n_units;
    const sv_fsdp *f;
};

typedef struct {
    const struct sv_ckpt_async *a;
} snap_src;

static sv_status snapshot_src(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                              uint64_t count, float *dst) {
    const struct sv_ckpt_async *a = ((snap_src *)ctx)->a;
    (void)t, (void)tensor_begin;
    memcpy(dst, a->snap + a->off[u] + (size_t)kind * a->n[u] + shard_offset, (size_t)count * 4);
    return SV_OK;
}

static void *writer_main(void *arg) {
    struct sv_ckpt_async *a = arg;
    snap_src ss = {a};
    a->write_st = sv_ckpt_write_shard(&a->idx, a->tmp, a->f->shard_rank, snapshot_src, &ss);
    if (a->write_st != SV_OK) snprintf(a->write_err, sizeof a->write_err, "%s", sv_err_msg());
    atomic_store(&a->written, 1);
    return NULL;
}

/* The host copy of every master / m / v (/ EMA) shard of f (buffers kept for the next save). */
static sv_status snapshot(struct sv_ckpt_async *a, sv_fsdp *f) {
    if (a->n_units != f->L.n_units) {
        free(a->off);
        free(a->n);
        a->off = calloc((size_t)f->L.n_units, sizeof *a->off);
        a->n = calloc((size_t)f->L.n_units, sizeof *a->n);
        if (!a->off || !a->n) return SV_FAIL(SV_ERR_OOM, "checkpoint snapshot tables");
        a->n_units = f->L.n_units;
    }
    size_t total = 0, kinds = (size_t)SV_CKPT_FILE_KINDS(&a->idx);
    for (int u = 0; u < f->L.n_units; u++) {
        a->off[u] = total;
        a->n[u] = f->L.units[u].shard;
        total += kinds * a->n[u];
    }
    if (total > a->snap_cap) {
        free(a->snap);
        a->snap = malloc((total ? total : 1) * 4);
        if (!a->snap) {
            a->snap_cap = 0;
            return SV_FAIL(SV_ERR_OOM, "checkpoint snapshot (%zu bytes)", total * 4);
        }
        a->snap_cap = total;
    }
    for (int u = 0; u < f->L.n_units; u++) {
        const float *src[4] = {f->us[u].master, f->us[u].m, f->us[u].v, f->us[u].ema};
        for (size_t k = 0; k < kinds; k++)
            SV_TRY(sv_be_download(f->be, a->snap + a->off[u] + (size_t)k * a->n[u], src[k], a->n[u] * 4));
    }
    return SV_OK;
}

sv_status sv_ckpt_async_create(sv_ckpt_async **out) {
    *out = calloc(1, sizeof **out);
    return *out ? SV_OK : SV_FAIL(SV_ERR_OOM, "checkpoint writer");
}

void sv_ckpt_async_destroy(sv_ckpt_async *a) {
    if (!a) return;
    if (a->in_flight && a->threaded) pthread_join(a->thread, NULL);
    if (a->in_flight) sv_ckpt_index_free(&a->idx);
    free(a->snap);
    free(a->off);
    free(a->n);
    free(a);
}

int sv_ckpt_save_in_flight(const sv_ckpt_async *a) { return a && a->in_flight; }
int sv_ckpt_save_written(const sv_ckpt_async *a) { return !a || !a->in_flight || atomic_load(&a->written); }

sv_status sv_ckpt_save_begin(sv_fsdp *f, sv_ckpt_async *a, int background, const char *root,
                             const sv_ckpt_train_state *st_in, const sv_ckpt_meta *meta, int keep) {
    if (a->in_flight) return SV_FAIL(SV_ERR_INVALID, "a checkpoint save is already in flight");
    if (strlen(root) >= SV_CKPT_PATH_MAX) return SV_FAIL(SV_ERR_INVALID, "--ckpt-dir too long: %.200s", root);
    a->t0 = sv_now_s();
    a->f = f;
    a->keep = keep;
    snprintf(a->root, sizeof a->root, "%s", root);
    snprintf(a->name, sizeof a->name, "step_%08lld", (long long)st_in->step);
    snprintf(a->final, sizeof a->final, "%s/%s", root, a->name);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp", a->final);
    a->writer = sv_comm_rank(f->repl) == 0; /* the first replica group: world ranks 0..W-1 */
    sv_status st = SV_OK;
    if (f->rank == 0) {
        st = sv_fileio_mkdirs(root, 0755);
        if (st == SV_OK) st = clean_root(root, 0, -1); /* a .tmp left by a crash */
        if (st == SV_OK) st = sv_fileio_mkdirs(a->tmp, 0755);
    }
    SV_TRY(sv_fsdp_agree(f, st));

    sv_ckpt_train_state ts = *st_in;
    ts.ema = f->cfg.ema; /* the shards hold the EMA exactly when this run keeps one */
    SV_TRY(sv_ckpt_index_from_layout(&a->idx, &f->L, f->world_size, sv_strategy_name(f->cfg.strategy), &ts));
    if (f->rank == 0) st = sv_ckpt_meta_copy(&a->idx.meta, meta); /* only rank 0 writes index.json */
    a->maxc = 1;
    for (int r = 0; r < a->idx.shard_world && st == SV_OK; r++) {
        st = sv_ckpt_plan_chunks(&a->idx, r);
        if (a->idx.files[r].n_chunks > a->maxc) a->maxc = a->idx.files[r].n_chunks;
    }
    a->in_flight = 1;
    a->threaded = 0;
    a->write_st = SV_OK;
    atomic_store(&a->written, 1);
    if (st == SV_OK && a->writer && !background) {
        dev_src ds = {f};
        st = sv_ckpt_write_shard(&a->idx, a->tmp, f->shard_rank, device_src, &ds);
    } else if (st == SV_OK && a->writer) {
        st = snapshot(a, f);
        if (st == SV_OK) {
            atomic_store(&a->written, 0);
            if (pthread_create(&a->thread, NULL, writer_main, a) != 0) {
                atomic_store(&a->written, 1);
                st = SV_FAIL(SV_ERR_IO, "cannot start the checkpoint writer thread");
            } else {
                a->threaded = 1;
            }
        }
    }
    a->blocked_s = sv_now_s() - a->t0;
    st = sv_fsdp_agree(f, st);
    if (st != SV_OK) {
        if (a->threaded) pthread_join(a->thread, NULL);
        sv_ckpt_index_free(&a->idx);
        a->in_flight = a->threaded = 0;
    }
    return st;
}

sv_status sv_ckpt_save_finish(sv_fsdp *f, sv_ckpt_async *a, char *saved, size_t cap) {
    if (!a->in_flight) return SV_OK;
    double t1 = sv_now_s();
    if (a->threaded) pthread_join(a->thread, NULL);
    a->threaded = 0;
    a->in_flight = 0;
    sv_status st = a->write_st == SV_OK ? SV_OK : SV_FAIL(a->write_st, "%s", a->write_err);
    if (st == SV_OK && f->rank == 0) crash_point("after_shards", a->idx.state.step);
    st = sv_fsdp_agree(f, st);

    /* CRCs of every writer to rank 0 (chunk positions are known to all from the layout). */
    int64_t *send = NULL, *recv = NULL;
    size_t maxc = a->maxc;
    if (st == SV_OK) {
        send = calloc(maxc, 8);
        recv = calloc(maxc * (size_t)f->world_size, 8);
        if (!send || !recv) st = SV_FAIL(SV_ERR_OOM, "checkpoint CRC tables");
        st = sv_fsdp_agree(f, st); /* a rank without its tables must not leave the others in the gather */
    }
    if (st == SV_OK && a->writer)
        for (size_t i = 0; i < a->idx.files[f->shard_rank].n_chunks; i++)
            send[i] = a->idx.files[f->shard_rank].chunks[i].crc;
    if (st == SV_OK) st = sv_fsdp_world_gather_i64(f, recv, send, maxc);
    if (st == SV_OK && f->rank == 0) {
        for (int r = 0; r < a->idx.shard_world; r++)
            for (size_t i = 0; i < a->idx.files[r].n_chunks; i++)
                a->idx.files[r].chunks[i].crc = (uint32_t)recv[(size_t)r * maxc + i];
        st = publish(&a->idx, a->root, a->tmp, a->final, a->name, a->keep);
    }
    free(send);
    free(recv);
    int W = a->idx.shard_world;
    long long step = (long long)a->idx.state.step;
    sv_ckpt_index_free(&a->idx);
    SV_TRY(sv_fsdp_agree(f, st));
    a->blocked_s += sv_now_s() - t1;
    if (saved) snprintf(saved, cap, "%s", a->final);
    if (a->snap)
        SV_INFO("checkpoint: saved %s (%d shard files, step %lld, %.2f s; training blocked %.3f s)", a->final, W, step,
                sv_now_s() - a->t0, a->blocked_s);
    else
        SV_INFO("checkpoint: saved %s (%d shard files, step %lld, %.2f s)", a->final, W, step, sv_now_s() - a->t0);
    return SV_OK;
}

double sv_ckpt_save_blocked_s(const sv_ckpt_async *a) { return a ? a->blocked_s : 0; }

sv_status sv_ckpt_save(sv_fsdp *f, const char *root, const sv_ckpt_train_state *st_in, const sv_ckpt_meta *meta,
                       int keep, char *saved, size_t cap) {
    struct sv_ckpt_async a;
    memset(&a, 0, sizeof a);
    sv_status st = sv_ckpt_save_begin(f, &a, 0, root, st_in, meta, keep);
    if (st == SV_OK) st = sv_ckpt_save_finish(f, &a, saved, cap);
    return st;
}

static void shape_str(char *out, size_t cap, const int64_t *shape, int ndim) {
    size_t n = (size_t)snprintf(out, cap, "(");
    for (int d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(out + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < cap) snprintf(out + n, cap - n, ")");
}

/* sv_ckpt_check_compatible (ckpt/checkpoint.h): every model tensor must be in the checkpoint with
 * the same shape, and nothing else; then the recorded model, field by field. */
sv_status sv_ckpt_check_compatible(const sv_layout *L, const sv_ckpt_index *idx, int *map) {
    /* the timm options first: they change tensor names, and the flags are the better message */
    {
        const sv_vit_config *a = &idx->cfg, *b = &L->cfg;
        if ((a->layer_scale > 0) != (b->layer_scale > 0) || a->global_pool != b->global_pool ||
            a->no_class_token != b->no_class_token || a->reg_tokens != b->reg_tokens ||
            a->no_embed_class != b->no_embed_class)
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s/index.json: the checkpoint's model has LayerScale %s, global pool %s, class token %d, "
                           "%d register tokens, no_embed_class %d but this run has %s, %s, %d, %d, %d (--layer-scale "
                           "/ --global-pool / --class-token / --reg-tokens / --no-embed-class)",
                           idx->dir, a->layer_scale > 0 ? "on" : "off", sv_vit_pool_name(a->global_pool),
                           !a->no_class_token, a->reg_tokens, a->no_embed_class, b->layer_scale > 0 ? "on" : "off",
                           sv_vit_pool_name(b->global_pool), !b->no_class_token, b->reg_tokens, b->no_embed_class);
    }
    for (int k = 0; k < L->n_params; k++) {
        const sv_param_info *p = &L->params[L->entries[k].param];
        int t = sv_ckpt_find_tensor(idx, p->name);
        if (t < 0)
            return SV_FAIL(SV_ERR_FORMAT, "%s/index.json: tensor %s of this model is not in the checkpoint", idx->dir,
                           p->name);
        const sv_ckpt_tensor *T = &idx->tensors[t];
        int same = T->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = T->shape[d] == p->shape[d];
        if (!same) {
            char a[96], b[96];
            shape_str(a, sizeof a, T->shape, T->ndim);
            shape_str(b, sizeof b, p->shape, p->ndim);
            return SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s has shape %s in the checkpoint but %s in this model", idx->dir,
                           p->name, a, b);
        }
        if (map) map[k] = t;
    }
    if (idx->n_tensors != L->n_params)
        return SV_FAIL(SV_ERR_FORMAT, "%s: checkpoint has %d tensors, this model %d (different --depth?)", idx->dir,
                       idx->n_tensors, L->n_params);
    /* Equal shapes do not make the same model: --heads changes no shape, and the other fields
     * are compared too so the message names the flag rather than a tensor. */
    const sv_vit_config *a = &idx->cfg, *b = &L->cfg;
    static const char *const names[] = {"img", "patch", "in-chans", "num-classes", "dim", "depth", "heads"};
    const int va[] = {a->img, a->patch, a->in_chans, a->num_classes, a->dim, a->depth, a->heads};
    const int vb[] = {b->img, b->patch, b->in_chans, b->num_classes, b->dim, b->depth, b->heads};
    for (int i = 0; i < 7; i++)
        if (va[i] != vb[i])
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s/index.json: the checkpoint's model has %s %d but this run has --%s %d "
                           "(a checkpoint loads only into the model it was saved from)",
                           idx->dir, names[i], va[i], names[i], vb[i]);
    if (sv_vit_hidden(a) != sv_vit_hidden(b))
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s/index.json: the checkpoint's model has mlp_ratio %g (hidden %d) but this run "
                       "has --mlp-ratio %g (hidden %d)",
                       idx->dir, a->mlp_ratio, sv_vit_hidden(a), b->mlp_ratio, sv_vit_hidden(b));
    return SV_OK;
}

/* Checkpoint values for the master-shard loader: entry t of this model is tensor map[t] of
 * the checkpoint, read through a CRC-checking reader (any saved layout). */
typedef struct ckpt_source {
    sv_ckpt_reader rd;
    const int *map;
    int ema_as_master; /* the masters are filled from the EMA range (sv_ckpt_load_ema_weights) */
} ckpt_source;

static sv_status ckpt_piece(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                            uint64_t count, float *dst) {
    ckpt_source *c = ctx;
    (void)u, (void)shard_offset;
    if (c->ema_as_master && kind == SV_CKPT_MASTER) kind = SV_CKPT_EMA;
    return sv_ckpt_read(&c->rd, kind, c->map[t], tensor_begin, count, dst);
}

static sv_status load_shards(sv_fsdp *f, const sv_ckpt_index *idx, const int *map, int ema_as_master) {
    ckpt_source c = {.map = map, .ema_as_master = ema_as_master};
    unsigned flags = ema_as_master ? 0 : SV_FSDP_LOAD_OPTIM | (f->cfg.ema && idx->state.ema ? SV_FSDP_LOAD_EMA : 0);
    sv_status st = sv_ckpt_reader_open(&c.rd, idx);
    if (st == SV_OK) st = sv_fsdp_load_masters(f, ckpt_piece, &c, flags);
    if (c.rd.fds) sv_ckpt_reader_close(&c.rd);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_ckpt_load(sv_fsdp *f, const char *step_dir, const sv_ckpt_xform *norm, sv_ckpt_train_state *out) {
    double t0 = sv_now_s();
    sv_ckpt_index idx;
    memset(&idx, 0, sizeof idx);
    int *map = malloc((size_t)f->L.n_params * sizeof *map);
    sv_status st = map ? sv_ckpt_index_load(&idx, step_dir) : SV_FAIL(SV_ERR_OOM, "tensor map");
    if (st == SV_OK && norm) {
        char where[SV_CKPT_PATH_MAX + 16];
        snprintf(where, sizeof where, "%s/index.json", step_dir);
        st = sv_ckpt_xform_same_norm(&idx.meta.xform, norm, where);
    }
    if (st == SV_OK) st = sv_ckpt_check_compatible(&f->L, &idx, map);
    if (st == SV_OK) st = load_shards(f, &idx, map, 0);
    st = sv_fsdp_agree(f, st);
    if (st == SV_OK && f->cfg.ema && !idx.state.ema)
        SV_INFO("checkpoint: %s holds no weight EMA: --model-ema starts it from the restored weights", step_dir);
    if (st == SV_OK && !f->cfg.ema && idx.state.ema)
        SV_INFO("checkpoint: %s holds a weight EMA; this run has no --model-ema, so it is dropped (later checkpoints "
                "hold none)",
                step_dir);
    if (st == SV_OK) {
        *out = idx.state;
        f->step = (long)idx.state.step;
        f->ctr.skipped_steps = (uint64_t)idx.state.skipped_steps;
        char e[64];
        SV_INFO("checkpoint: resumed from %s (step %lld, saved by %d ranks as %s over %d shards; now %d ranks, %d "
                "shards; %.2f s)",
                step_dir, (long long)idx.state.step, idx.world_size, sv_log_esc(idx.strategy, e, sizeof e),
                idx.shard_world, f->world_size, f->shard_size, sv_now_s() - t0);
    }
    free(map);
    sv_ckpt_index_free(&idx);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_ckpt_load_ema_weights(sv_fsdp *f, const char *step_dir, sv_ckpt_train_state *out) {
    sv_ckpt_index idx;
    memset(&idx, 0, sizeof idx);
    int *map = malloc((size_t)f->L.n_params * sizeof *map);
    sv_status st = map ? sv_ckpt_index_load(&idx, step_dir) : SV_FAIL(SV_ERR_OOM, "tensor map");
    if (st == SV_OK && !idx.state.ema)
        st = SV_FAIL(SV_ERR_FORMAT,
                     "%s holds no weight EMA (it was saved by a run without --model-ema): drop --ema to use its "
                     "weights",
                     step_dir);
    if (st == SV_OK) st = sv_ckpt_check_compatible(&f->L, &idx, map);
    if (st == SV_OK) st = load_shards(f, &idx, map, 1);
    st = sv_fsdp_agree(f, st);
    if (st == SV_OK) *out = idx.state;
    free(map);
    sv_ckpt_index_free(&idx);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
