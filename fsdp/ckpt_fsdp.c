/* Collective checkpoint save and load on a live FSDP state (fsdp/checkpoint.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* renameat2 */
#endif
#include <dirent.h>
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
#include "fsdp/checkpoint.h"

/* ---- host values through collectives (staged in device memory: NCCL needs device buffers) */

static sv_status coll_i64(sv_fsdp *f, int op /* 0 all_reduce MIN, 1 all_gather */, int64_t *recv,
                          const int64_t *send, size_t n) {
    size_t out_n = op ? n * (size_t)f->world_size : n;
    void *d = NULL;
    SV_TRY(sv_be_alloc(f->be, (out_n + n) * 8, &d));
    int64_t *dr = d, *ds = dr + out_n;
    sv_comm_req req;
    sv_status st = sv_be_upload(f->be, op ? (void *)ds : (void *)dr, send, n * 8);
    if (st == SV_OK && op == 0) st = sv_comm_all_reduce(f->world, dr, n, SV_COMM_I64, SV_COMM_MIN, &req);
    if (st == SV_OK && op == 1) st = sv_comm_all_gather(f->world, dr, ds, n, SV_COMM_I64, &req);
    if (st == SV_OK) st = sv_comm_wait(f->world, &req);
    if (st == SV_OK) st = sv_be_download(f->be, recv, dr, out_n * 8);
    sv_be_free(f->be, d);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

static sv_status agree_f(sv_fsdp *f, sv_status st) {
    int64_t v = st != SV_OK ? f->rank : f->world_size, lowest;
    SV_TRY(coll_i64(f, 0, &lowest, &v, 1));
    if (lowest == f->world_size) return SV_OK;
    /* The failing rank's status and message, so every rank reports the same cause. */
    enum { N = 1024 / 8 };
    int64_t msg[N] = {0};
    if (f->rank == lowest) {
        msg[0] = st;
        snprintf((char *)&msg[1], sizeof msg - 8, "%s", sv_err_msg());
    }
    void *d = NULL;
    SV_TRY(sv_be_alloc(f->be, sizeof msg, &d));
    sv_status cs = sv_be_upload(f->be, d, msg, sizeof msg);
    if (cs == SV_OK) cs = sv_comm_broadcast_sync(f->world, d, N, SV_COMM_I64, (int)lowest);
    if (cs == SV_OK) cs = sv_be_download(f->be, msg, d, sizeof msg);
    sv_be_free(f->be, d);
    SV_TRY(cs);
    if (f->rank == lowest) return st;
    ((char *)msg)[sizeof msg - 1] = 0;
    return SV_FAIL((sv_status)msg[0], "%s (reported by rank %lld)", (char *)&msg[1], (long long)lowest);
}

sv_status sv_ckpt_agree(sv_fsdp *f, sv_status st) { return agree_f(f, st); }

/* Test hook (docs/checkpoints.md): SHARDVIT_TEST_CRASH_AT=POINT or POINT@STEP kills this
 * process with SIGKILL at that point of a save, to prove a crash never damages the previous
 * checkpoint. */
static void crash_point(const char *point, int64_t step) {
    const char *e = getenv(SV_CKPT_CRASH_ENV);
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
static long long step_of(const char *name) {
    if (strncmp(name, "step_", 5)) return -1;
    const char *p = name + 5;
    if (!*p) return -1;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9') return -1;
    return atoll(p);
}

static int is_tmp(const char *name) {
    size_t n = strlen(name);
    return !strncmp(name, "step_", 5) && n > 9 && !strcmp(name + n - 4, ".tmp");
}

static int cmp_desc(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Remove stale *.tmp directories; with keep > 0 also complete checkpoints beyond the newest
 * `keep` (never `current`). Only names this module writes are touched. */
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
        if (is_tmp(de->d_name)) {
            SV_INFO("checkpoint: removing incomplete %s", p);
            st = sv_fileio_remove_tree(p);
            continue;
        }
        long long s = step_of(de->d_name);
        if (s < 0 || n == 4096) continue;
        snprintf(p, sizeof p, "%s/%s/index.json", root, de->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0) steps[n++] = s;
    }
    closedir(d);
    SV_TRY(st);
    if (keep <= 0) return SV_OK;
    qsort(steps, (size_t)n, sizeof steps[0], cmp_desc);
    for (int i = keep; i < n; i++) {
        if (steps[i] == current) continue;
        snprintf(p, sizeof p, "%s/step_%08lld", root, steps[i]);
        SV_INFO("checkpoint: --keep %d: removing %s", keep, p);
        SV_TRY(sv_fileio_remove_tree(p));
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
    const float *base = kind == SV_CKPT_MASTER ? f->us[u].master : kind == SV_CKPT_M ? f->us[u].m : f->us[u].v;
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
        SV_TRY(sv_fileio_remove_tree(tmp));
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

sv_status sv_ckpt_save(sv_fsdp *f, const char *root, const sv_ckpt_train_state *st_in, const sv_ckpt_meta *meta,
                       int keep, char *saved, size_t cap) {
    char name[32], final[SV_CKPT_PATH_MAX + 40], tmp[SV_CKPT_PATH_MAX + 48];
    snprintf(name, sizeof name, "step_%08lld", (long long)st_in->step);
    if (strlen(root) >= SV_CKPT_PATH_MAX) return SV_FAIL(SV_ERR_INVALID, "--ckpt-dir too long: %.200s", root);
    snprintf(final, sizeof final, "%s/%s", root, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", final);
    int writer = sv_comm_rank(f->repl) == 0; /* the first replica group: world ranks 0..W-1 */
    double t0 = sv_now_s();
    sv_status st = SV_OK;
    if (f->rank == 0) {
        st = sv_fileio_mkdirs(root, 0755);
        if (st == SV_OK) st = clean_root(root, 0, -1); /* a .tmp left by a crash */
        if (st == SV_OK) st = sv_fileio_mkdirs(tmp, 0755);
    }
    SV_TRY(agree_f(f, st));

    sv_ckpt_index idx;
    SV_TRY(sv_ckpt_index_from_layout(&idx, &f->L, f->world_size, sv_strategy_name(f->cfg.strategy), st_in));
    if (f->rank == 0) st = sv_ckpt_meta_copy(&idx.meta, meta); /* only rank 0 writes index.json */
    int W = idx.shard_world;
    size_t maxc = 1;
    for (int r = 0; r < W && st == SV_OK; r++) {
        st = sv_ckpt_plan_chunks(&idx, r);
        if (idx.files[r].n_chunks > maxc) maxc = idx.files[r].n_chunks;
    }
    if (st == SV_OK && writer) {
        dev_src ds = {f};
        st = sv_ckpt_write_shard(&idx, tmp, f->shard_rank, device_src, &ds);
    }
    if (st == SV_OK && f->rank == 0) crash_point("after_shards", st_in->step);
    st = agree_f(f, st);

    /* CRCs of every writer to rank 0 (chunk positions are known to all from the layout). */
    int64_t *send = NULL, *recv = NULL;
    if (st == SV_OK) {
        send = calloc(maxc, 8);
        recv = calloc(maxc * (size_t)f->world_size, 8);
        if (!send || !recv) st = SV_FAIL(SV_ERR_OOM, "checkpoint CRC tables");
    }
    if (st == SV_OK && writer)
        for (size_t i = 0; i < idx.files[f->shard_rank].n_chunks; i++) send[i] = idx.files[f->shard_rank].chunks[i].crc;
    if (st == SV_OK) st = coll_i64(f, 1, recv, send, maxc);
    if (st == SV_OK && f->rank == 0) {
        for (int r = 0; r < W; r++)
            for (size_t i = 0; i < idx.files[r].n_chunks; i++)
                idx.files[r].chunks[i].crc = (uint32_t)recv[(size_t)r * maxc + i];
        st = publish(&idx, root, tmp, final, name, keep);
    }
    free(send);
    free(recv);
    sv_ckpt_index_free(&idx);
    SV_TRY(agree_f(f, st));
    if (saved) snprintf(saved, cap, "%s", final);
    SV_INFO("checkpoint: saved %s (%d shard files, step %lld, %.2f s)", final, W, (long long)st_in->step,
            sv_now_s() - t0);
    return SV_OK;
}

static void shape_str(char *out, size_t cap, const int64_t *shape, int ndim) {
    size_t n = (size_t)snprintf(out, cap, "(");
    for (int d = 0; d < ndim && n < cap; d++) n += (size_t)snprintf(out + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < cap) snprintf(out + n, cap - n, ")");
}

/* Every model tensor must be in the checkpoint with the same shape, and nothing else. */
static sv_status check_compatible(const sv_fsdp *f, const sv_ckpt_index *idx, int *map) {
    for (int k = 0; k < f->L.n_params; k++) {
        const sv_param_info *p = &f->L.params[f->L.entries[k].param];
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
        map[k] = t;
    }
    if (idx->n_tensors != f->L.n_params)
        return SV_FAIL(SV_ERR_FORMAT, "%s: checkpoint has %d tensors, this model %d (different --depth?)", idx->dir,
                       idx->n_tensors, f->L.n_params);
    return SV_OK;
}

static sv_status load_shards(sv_fsdp *f, const sv_ckpt_index *idx, const int *map) {
    size_t max_shard = 0;
    for (int u = 0; u < f->L.n_units; u++)
        if (f->L.units[u].shard > max_shard) max_shard = f->L.units[u].shard;
    float *host = malloc(max_shard * 4);
    if (!host) return SV_FAIL(SV_ERR_OOM, "checkpoint load staging of %zu floats", max_shard);
    sv_ckpt_reader rd;
    sv_status st = sv_ckpt_reader_open(&rd, idx);
    for (int u = 0; u < f->L.n_units && st == SV_OK; u++) {
        const sv_unit *un = &f->L.units[u];
        for (int kind = 0; kind < SV_CKPT_KINDS && st == SV_OK; kind++) {
            memset(host, 0, un->shard * 4);
            for (int k = 0; k < un->n_entries && st == SV_OK; k++) {
                const sv_flat_entry *e = &f->L.entries[un->first_entry + k];
                sv_shard_piece p = sv_layout_piece(un, e, f->shard_rank);
                if (p.count) st = sv_ckpt_read(&rd, kind, map[un->first_entry + k], p.tensor_begin, p.count, host + p.shard_offset);
            }
            float *dst = kind == SV_CKPT_MASTER ? f->us[u].master : kind == SV_CKPT_M ? f->us[u].m : f->us[u].v;
            if (st == SV_OK) st = sv_be_upload(f->be, dst, host, un->shard * 4);
        }
        if (st == SV_OK) st = sv_be_zero(f->be, f->us[u].grad, un->shard * 4);
    }
    if (rd.fds) sv_ckpt_reader_close(&rd);
    free(host);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_ckpt_load(sv_fsdp *f, const char *step_dir, sv_ckpt_train_state *out) {
    double t0 = sv_now_s();
    sv_ckpt_index idx;
    memset(&idx, 0, sizeof idx);
    int *map = malloc((size_t)f->L.n_params * sizeof *map);
    sv_status st = map ? sv_ckpt_index_load(&idx, step_dir) : SV_FAIL(SV_ERR_OOM, "tensor map");
    if (st == SV_OK) st = check_compatible(f, &idx, map);
    if (st == SV_OK) st = load_shards(f, &idx, map);
    st = agree_f(f, st);
    if (st == SV_OK) {
        *out = idx.state;
        f->step = (long)idx.state.step;
        f->ctr.skipped_steps = (uint64_t)idx.state.skipped_steps;
        SV_INFO("checkpoint: resumed from %s (step %lld, saved by %d ranks as %s over %d shards; now %d ranks, %d "
                "shards; %.2f s)",
                step_dir, (long long)idx.state.step, idx.world_size, idx.strategy, idx.shard_world, f->world_size,
                f->shard_size, sv_now_s() - t0);
    }
    free(map);
    sv_ckpt_index_free(&idx);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
