/* Checkpoint path resolution, CRC-checked range reads, shard file writing and offline
 * resharding. index.json lives in ckpt_index.c, collective save/load in ckpt_fsdp.c, timm
 * export/import in ckpt_timm.c. */
#include "ckpt/checkpoint.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "ckpt/ckpt_out.h"

#define WRITE_BUF_BYTES (SV_CKPT_CHUNK_ELEMS * 4)

/* ---- paths ------------------------------------------------------------------------------ */

/* Anything at the name counts, a dangling or looping link included: reading it then reports
 * its real error, naming it, rather than "no checkpoint". */
static int exists(const char *p) {
    struct stat s;
    return lstat(p, &s) == 0;
}

sv_status sv_ckpt_latest(const char *root, char *out, size_t cap, int *found) {
    char p[SV_CKPT_PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/latest", root);
    *found = 0;
    struct stat ls;
    if (lstat(p, &ls) != 0) {
        if (errno == ENOENT) return SV_OK; /* no `latest` at all: nothing saved yet */
        return SV_FAIL(SV_ERR_IO, "%s: %s", p, strerror(errno));
    }
    /* `latest` exists (a dangling or looping link included): from here every failure to read
     * it is an error, never "no checkpoint" (which would start a run over its own) */
    char *text;
    size_t len;
    SV_TRY(sv_fileio_read_small(p, 4096, &text, &len));
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) text[--len] = 0;
    int ok = len > 0 && !strchr(text, '/') && strcmp(text, ".") && strcmp(text, "..");
    for (size_t i = 0; ok && i < len; i++) ok = (unsigned char)text[i] >= 0x20 && text[i] != 0x7f; /* one plain line */
    if (ok && (size_t)snprintf(out, cap, "%s/%s", root, text) >= cap) ok = 0;
    if (!ok) {
        char e[80];
        sv_status st =
            SV_FAIL(SV_ERR_FORMAT, "%s: does not name a step directory (\"%s\")", p, sv_log_esc(text, e, sizeof e));
        free(text);
        return st;
    }
    free(text);
    *found = 1;
    return SV_OK;
}

sv_status sv_ckpt_resolve(const char *path, char *out, size_t cap) {
    char p[SV_CKPT_PATH_MAX + 32];
    int found;
    snprintf(p, sizeof p, "%s/index.json", path);
    if (exists(p)) {
        if ((size_t)snprintf(out, cap, "%s", path) >= cap) return SV_FAIL(SV_ERR_INVALID, "path too long: %s", path);
        return SV_OK;
    }
    /* a checkpoint root and a run directory at once (another run's root used as --out, or a run
     * directory used as another run's --ckpt-dir): the two `latest` may name different runs'
     * models, so neither is chosen silently */
    char l1[SV_CKPT_PATH_MAX + 16], l2[SV_CKPT_PATH_MAX + 32];
    snprintf(l1, sizeof l1, "%s/latest", path);
    snprintf(l2, sizeof l2, "%s/checkpoints/latest", path);
    if (exists(l1) && exists(l2)) {
        char a[SV_CKPT_PATH_MAX + 300], b[SV_CKPT_PATH_MAX + 300];
        int fa = 0, fb = 0;
        snprintf(p, sizeof p, "%s/checkpoints", path);
        if (sv_ckpt_latest(path, a, sizeof a, &fa) != SV_OK || !fa) snprintf(a, sizeof a, "an unreadable name");
        if (sv_ckpt_latest(p, b, sizeof b, &fb) != SV_OK || !fb) snprintf(b, sizeof b, "an unreadable name");
        sv_err_clear();
        return SV_FAIL(SV_ERR_INVALID,
                       "%s is ambiguous: it holds both %s (naming %s) and %s (naming %s), a checkpoint root and a "
                       "run directory's checkpoints, possibly of two different runs; give the step directory meant "
                       "(or %s for the second)",
                       path, l1, a, l2, b, p);
    }
    SV_TRY(sv_ckpt_latest(path, out, cap, &found));
    if (!found) {
        snprintf(p, sizeof p, "%s/checkpoints", path);
        SV_TRY(sv_ckpt_latest(p, out, cap, &found));
    }
    if (!found)
        return SV_FAIL(SV_ERR_NOT_FOUND,
                       "%s: no checkpoint (neither index.json, latest, nor checkpoints/latest is there)", path);
    return SV_OK;
}

/* ---- reading ------------------------------------------------------------------------------ */

sv_status sv_ckpt_reader_open(sv_ckpt_reader *r, const sv_ckpt_index *idx) {
    memset(r, 0, sizeof *r);
    r->idx = idx;
    r->fds = malloc((size_t)idx->shard_world * sizeof *r->fds);
    uint64_t mx = 4;
    for (int f = 0; f < idx->shard_world; f++)
        for (size_t i = 0; i < idx->files[f].n_chunks; i++)
            if (idx->files[f].chunks[i].nbytes > mx) mx = idx->files[f].chunks[i].nbytes;
    r->cap = (size_t)mx;
    r->buf = malloc(r->cap);
    if (!r->fds || !r->buf) {
        sv_ckpt_reader_close(r);
        return SV_FAIL(SV_ERR_OOM, "checkpoint reader buffer of %zu bytes", (size_t)mx);
    }
    for (int f = 0; f < idx->shard_world; f++) r->fds[f] = -1;
    return SV_OK;
}

void sv_ckpt_reader_close(sv_ckpt_reader *r) {
    if (r->fds && r->idx)
        for (int f = 0; f < r->idx->shard_world; f++)
            if (r->fds[f] >= 0) close(r->fds[f]);
    free(r->fds);
    free(r->buf);
    r->fds = NULL;
    r->buf = NULL;
}

long long sv_ckpt_step_of_name(const char *name) {
    if (strncmp(name, "step_", 5) || !name[5] || strlen(name + 5) > 18) return -1;
    for (const char *q = name + 5; *q; q++)
        if (*q < '0' || *q > '9') return -1;
    return atoll(name + 5);
}

int sv_ckpt_is_tmp_name(const char *name) {
    size_t n = strlen(name);
    return !strncmp(name, "step_", 5) && n > 9 && !strcmp(name + n - 4, ".tmp");
}

sv_status sv_ckpt_shard_open(const sv_ckpt_index *idx, int f, int *fd, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", idx->dir, idx->files[f].name);
    uint64_t size;
    sv_status st = sv_fileio_open_read(path, fd, &size);
    if (st != SV_OK) {
        char m[600];
        snprintf(m, sizeof m, "%s", sv_err_msg());
        return SV_FAIL(st, "missing or unreadable checkpoint shard (%s)", m);
    }
    uint64_t want = idx->files[f].bytes;
    if (size != want) {
        close(*fd);
        *fd = -1;
        if (size < want)
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%s is truncated: bytes [%llu, %llu) are missing (index.json says %llu bytes)", path,
                           (unsigned long long)size, (unsigned long long)want, (unsigned long long)want);
        return SV_FAIL(SV_ERR_CORRUPT, "%s has %llu bytes, index.json says %llu (bytes [%llu, %llu) unexpected)", path,
                       (unsigned long long)size, (unsigned long long)want, (unsigned long long)want,
                       (unsigned long long)size);
    }
    return SV_OK;
}

static sv_status open_file(sv_ckpt_reader *r, int f, char *path, size_t cap) {
    if (r->fds[f] >= 0) {
        snprintf(path, cap, "%s/%s", r->idx->dir, r->idx->files[f].name);
        return SV_OK;
    }
    return sv_ckpt_shard_open(r->idx, f, &r->fds[f], path, cap);
}

/* Bytes [off, off + len) of shard file f into dst, through whole CRC-checked chunks. */
static sv_status read_verified(sv_ckpt_reader *r, int f, uint64_t off, uint64_t len, uint8_t *dst) {
    char path[SV_CKPT_PATH_MAX + 80];
    SV_TRY(open_file(r, f, path, sizeof path));
    const sv_ckpt_file *F = &r->idx->files[f];
    size_t lo = 0, hi = F->n_chunks; /* first chunk ending after off */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (F->chunks[mid].offset + F->chunks[mid].nbytes <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t cur = off, end = off + len;
    for (size_t i = lo; cur < end; i++) {
        if (i >= F->n_chunks || F->chunks[i].offset > cur)
            return SV_FAIL(SV_ERR_FORMAT, "%s bytes [%llu, %llu): index.json has no checksum covering them", path,
                           (unsigned long long)cur, (unsigned long long)end);
        const sv_ckpt_chunk *c = &F->chunks[i];
        SV_TRY(sv_fileio_pread_exact(r->fds[f], r->buf, (size_t)c->nbytes, c->offset, path));
        uint32_t crc = sv_crc32c(r->buf, (size_t)c->nbytes);
        if (crc != c->crc)
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%s bytes [%llu, %llu): CRC32C mismatch (index.json says 0x%08x, data has 0x%08x)", path,
                           (unsigned long long)c->offset, (unsigned long long)(c->offset + c->nbytes), c->crc, crc);
        uint64_t ce = c->offset + c->nbytes, take = (ce < end ? ce : end) - cur;
        memcpy(dst + (cur - off), r->buf + (cur - c->offset), (size_t)take);
        cur += take;
    }
    return SV_OK;
}

sv_status sv_ckpt_read(sv_ckpt_reader *r, int kind, int t, uint64_t begin, uint64_t count, float *dst) {
    const sv_ckpt_index *idx = r->idx;
    const sv_ckpt_tensor *T = &idx->tensors[t];
    const sv_ckpt_unit *U = &idx->units[T->unit];
    char e[SV_ESC_CAP];
    if (begin + count > T->numel)
        return SV_FAIL(SV_ERR_INVALID, "%s: elements [%llu, %llu) outside %llu", sv_log_esc(T->name, e, sizeof e),
                       (unsigned long long)begin, (unsigned long long)(begin + count), (unsigned long long)T->numel);
    uint64_t a = T->offset + begin, b = a + count, S = U->shard;
    for (uint64_t rk = a / S; rk * S < b && count; rk++) {
        uint64_t x0 = a > rk * S ? a : rk * S, x1 = b < (rk + 1) * S ? b : (rk + 1) * S;
        uint64_t byte = U->file_offset + (uint64_t)kind * S * 4 + (x0 - rk * S) * 4;
        SV_TRY(read_verified(r, (int)rk, byte, (x1 - x0) * 4, (uint8_t *)(dst + (x0 - a))));
    }
    /* the CRCs prove the bytes are the ones saved, not that they are numbers: a NaN or Inf in
     * memory when a run saved (or written by another tool) is refused on every path that reads
     * a checkpoint's values (resume, eval, predict, export, reshard) */
    for (uint64_t i = 0; i < count; i++)
        if (!isfinite(dst[i])) {
            static const char *const kinds[] = {"weights", "optimizer state m", "optimizer state v", "weight EMA"};
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%s: tensor %s (%s) holds a non-finite value: element %llu is %s (the run that saved it "
                           "had diverged, or another tool wrote it; refusing NaN/Inf)",
                           idx->dir, sv_log_esc(T->name, e, sizeof e),
                           kind >= 0 && kind < (int)(sizeof kinds / sizeof *kinds) ? kinds[kind] : "state",
                           (unsigned long long)(begin + i),
                           isnan(dst[i])    ? "NaN"
                               : dst[i] > 0 ? "+Inf"
                                            : "-Inf");
        }
    return SV_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Walk the contents of shard file `rank` in order. With out == NULL only the chunk table is
 * built; otherwise data is produced by src and written, padding as zeros. */
static sv_status emit_file(sv_ckpt_index *idx, int rank, sv_fileio_out *out, float *buf, sv_ckpt_source_fn src,
                           void *ctx) {
    sv_ckpt_file *F = &idx->files[rank];
    size_t n = 0, cap = 0;
    sv_ckpt_chunk *ch = NULL;
    sv_status st = SV_OK;
    for (int u = 0; u < idx->n_units && st == SV_OK; u++) {
        const sv_ckpt_unit *U = &idx->units[u];
        uint64_t s0 = (uint64_t)rank * U->shard, s1 = s0 + U->shard;
        for (int kind = 0; kind < SV_CKPT_FILE_KINDS(idx) && st == SV_OK; kind++) {
            uint64_t seg = U->file_offset + (uint64_t)kind * U->shard * 4, cursor = 0; /* shard element */
            for (int k = 0; k <= U->n_tensors && st == SV_OK; k++) {
                uint64_t x0 = s1, x1 = s1; /* k == n_tensors: trailing padding */
                int t = U->first_tensor + k;
                if (k < U->n_tensors) {
                    const sv_ckpt_tensor *T = &idx->tensors[t];
                    x0 = T->offset > s0 ? T->offset : s0;
                    x1 = T->offset + T->numel < s1 ? T->offset + T->numel : s1;
                    if (x0 >= x1) continue;
                }
                uint64_t so = x0 - s0;
                if (out && so > cursor) { /* zero padding before this piece */
                    memset(buf, 0, WRITE_BUF_BYTES);
                    for (uint64_t z = cursor; z < so && st == SV_OK;) {
                        uint64_t c = so - z < SV_CKPT_CHUNK_ELEMS ? so - z : SV_CKPT_CHUNK_ELEMS;
                        st = sv_fileio_out_write(out, buf, (size_t)c * 4);
                        z += c;
                    }
                }
                for (uint64_t j = x0; j < x1 && st == SV_OK;) {
                    uint64_t c = x1 - j < SV_CKPT_CHUNK_ELEMS ? x1 - j : SV_CKPT_CHUNK_ELEMS;
                    if (n == cap) {
                        cap = cap ? 2 * cap : 64;
                        sv_ckpt_chunk *nc = realloc(ch, cap * sizeof *ch);
                        if (!nc) {
                            st = SV_FAIL(SV_ERR_OOM, "chunk table");
                            break;
                        }
                        ch = nc;
                    }
                    ch[n] = (sv_ckpt_chunk){seg + (j - s0) * 4, c * 4, 0};
                    if (out) {
                        const sv_ckpt_tensor *T = &idx->tensors[t];
                        st = src(ctx, u, kind, t, j - T->offset, j - s0, c, buf);
                        if (st == SV_OK) {
                            ch[n].crc = sv_crc32c(buf, (size_t)c * 4);
                            st = sv_fileio_out_write(out, buf, (size_t)c * 4);
                        }
                    }
                    n++;
                    j += c;
                }
                cursor = x1 - s0;
            }
        }
    }
    if (st != SV_OK) {
        free(ch);
        sv_err_frame(__FILE__, __LINE__);
        return st;
    }
    free(F->chunks);
    F->chunks = ch;
    F->n_chunks = n;
    return SV_OK;
}

sv_status sv_ckpt_plan_chunks(sv_ckpt_index *idx, int rank) { return emit_file(idx, rank, NULL, NULL, NULL, NULL); }

sv_status sv_ckpt_write_shard(sv_ckpt_index *idx, const char *dir, int rank, sv_ckpt_source_fn src, void *ctx) {
    char path[SV_CKPT_PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/%s", dir, idx->files[rank].name);
    float *buf = malloc(WRITE_BUF_BYTES);
    if (!buf) return SV_FAIL(SV_ERR_OOM, "shard write buffer");
    sv_fileio_out out;
    sv_status st = sv_fileio_out_open(&out, path, 0);
    if (st == SV_OK) st = emit_file(idx, rank, &out, buf, src, ctx);
    if (st == SV_OK && out.written != idx->files[rank].bytes)
        st = SV_FAIL(SV_ERR_INVALID, "%s: wrote %llu bytes, expected %llu", path, (unsigned long long)out.written,
                     (unsigned long long)idx->files[rank].bytes);
    if (st == SV_OK) st = sv_fileio_out_sync(&out);
    if (st == SV_OK)
        st = sv_fileio_out_close(&out);
    else
        sv_fileio_out_abort(&out);
    free(buf);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

/* ---- offline reshard ------------------------------------------------------------------------ */

static sv_status reshard_src(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                             uint64_t count, float *dst) {
    (void)u, (void)shard_offset;
    return sv_ckpt_read(ctx, kind, t, tensor_begin, count, dst); /* same tensor order in both indices */
}

sv_status sv_ckpt_reshard(const char *in, const char *out_arg, int world) {
    char dir[SV_CKPT_PATH_MAX], tmp[SV_CKPT_PATH_MAX + 32], out[SV_CKPT_PATH_MAX], parent[SV_CKPT_PATH_MAX];
    SV_TRY(sv_ckpt_resolve(in, dir, sizeof dir));
    size_t n = strlen(out_arg);
    if (n == 0 || n >= sizeof out) return SV_FAIL(SV_ERR_INVALID, "reshard output: empty or too long: %.200s", out_arg);
    memcpy(out, out_arg, n + 1);
    while (n > 1 && out[n - 1] == '/') out[--n] = 0; /* "OUT/" names OUT */
    /* OUT must be new and outside IN; it is built in a fresh temporary directory of our own
     * (an existing OUT.tmp or OUT.tmp-* is never touched) and renamed without replacing. */
    SV_TRY(sv_ckpt_out_check(out, dir, 1, "reshard output"));
    /* IN as given may be a run directory or a checkpoint root around that step directory */
    if (strcmp(in, dir)) SV_TRY(sv_ckpt_out_check(out, in, 1, "reshard output"));
    sv_ckpt_index a, b;
    SV_TRY(sv_ckpt_index_load(&a, dir));
    sv_status st = sv_ckpt_index_relayout(&b, &a, world);
    if (st != SV_OK) {
        sv_ckpt_index_free(&a);
        return st;
    }
    /* OUT's missing parents are made now and, if the reshard fails or is stopped by a signal,
     * removed again: exactly the directories made, each only while empty */
    sv_fileio_made_dirs dirs;
    dirs.n = 0;
    memcpy(parent, out, n + 1);
    char *slash = strrchr(parent, '/');
    if (slash && slash > parent) {
        *slash = 0;
        st = sv_fileio_mkdirs_made(parent, 0755, &dirs);
        if (st != SV_OK) {
            sv_ckpt_index_free(&a);
            sv_ckpt_index_free(&b);
            return st;
        }
    }
    sv_ckpt_reader rd;
    memset(&rd, 0, sizeof rd);
    int made = 0;
    st = sv_fileio_tmp_dir(out, tmp, sizeof tmp);
    if (st == SV_OK) made = 1;
    if (st == SV_OK) st = sv_ckpt_reader_open(&rd, &a);
    for (int r = 0; r < world && st == SV_OK; r++) st = sv_ckpt_write_shard(&b, tmp, r, reshard_src, &rd);
    if (st == SV_OK) st = sv_ckpt_index_store(&b, tmp);
    if (st == SV_OK) st = sv_fileio_rename(tmp, out, 1);
    if (st == SV_OK) made = 0;
    if (made) { /* only the directory this call created */
        char m[1200];
        snprintf(m, sizeof m, "%s", sv_err_msg());
        if (sv_fileio_remove_tree(tmp) != SV_OK) { /* keep the first error, mention the second */
            SV_WARN("reshard: could not remove %s: %s", tmp, sv_err_msg());
            st = SV_FAIL(st, "%s", m);
        }
    }
    if (st != SV_OK)
        sv_fileio_made_dirs_remove(&dirs);
    else
        sv_fileio_made_dirs_keep(&dirs);
    sv_ckpt_reader_close(&rd);
    sv_ckpt_index_free(&a);
    sv_ckpt_index_free(&b);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
