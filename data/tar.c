/* WebDataset tar shard indexing: ustar/pax/GNU long names, key grouping, .cls labels. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/repeat.h"
#include "data/dataset_impl.h"

static uint64_t parse_num(const uint8_t *f, int n, int *ok) {
    if (f[0] & 0x80) { /* GNU base-256 */
        uint64_t v = f[0] & 0x7f;
        for (int i = 1; i < n; i++) v = (v << 8) | f[i];
        return v;
    }
    uint64_t v = 0;
    int i = 0, digits = 0;
    while (i < n && (f[i] == ' ' || f[i] == 0) && digits == 0) i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) v = v * 8 + (uint64_t)(f[i] - '0');
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != 0) *ok = 0;
    return v;
}

/* A member name is unsafe if absolute or if any component is "..". */
static int unsafe_name(const char *n) {
    if (n[0] == '/') return 1;
    for (const char *p = n; *p;) {
        const char *e = strchr(p, '/');
        size_t L = e ? (size_t)(e - p) : strlen(p);
        if (L == 2 && p[0] == '.' && p[1] == '.') return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

typedef struct {
    char key[4096];
    int have_key, has_img, has_cls;
    uint64_t img_off, img_size;
    long cls;
} group;

static sv_status push_sample(sv_dataset *d, const char *shard, uint32_t sh, group *g, size_t *cap) {
    if (!g->have_key || (!g->has_img && !g->has_cls)) return SV_OK;
    if (!g->has_cls) return SV_FAIL(SV_ERR_FORMAT, "%s: key '%s' has a .jpg but no .cls label", shard, g->key);
    if (!g->has_img) return SV_FAIL(SV_ERR_FORMAT, "%s: key '%s' has a .cls but no .jpg/.jpeg image", shard, g->key);
    if (d->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4096;
        int32_t *l = realloc(d->labels, nc * sizeof *l);
        if (l) d->labels = l;
        uint32_t *s = realloc(d->shard_of, nc * sizeof *s);
        if (s) d->shard_of = s;
        uint64_t *o = realloc(d->offset, nc * sizeof *o);
        if (o) d->offset = o;
        uint64_t *z = realloc(d->size, nc * sizeof *z);
        if (z) d->size = z;
        if (!l || !s || !o || !z) return SV_FAIL(SV_ERR_OOM, "tar index");
        *cap = nc;
    }
    SV_TRY(sv_strlist_push(&d->keys, g->key, strlen(g->key)));
    d->labels[d->n] = (int32_t)g->cls;
    d->shard_of[d->n] = sh;
    d->offset[d->n] = g->img_off;
    d->size[d->n] = g->img_size;
    d->n++;
    if (g->cls + 1 > d->K) d->K = (int)g->cls + 1;
    return SV_OK;
}

static sv_status read_at(int fd, void *buf, size_t n, uint64_t off, const char *shard, const char *what) {
    ssize_t r = pread(fd, buf, n, (off_t)off);
    if (r != (ssize_t)n)
        return SV_FAIL(SV_ERR_CORRUPT, "%s: truncated archive (%s at byte %llu)", shard, what, (unsigned long long)off);
    return SV_OK;
}

static sv_status scan_shard(sv_dataset *d, const char *shard, uint32_t sh, int fd, size_t *cap) {
    struct stat st;
    if (fstat(fd, &st) != 0) return SV_FAIL(SV_ERR_IO, "%s: %s", shard, strerror(errno));
    uint64_t fsize = (uint64_t)st.st_size, off = 0;
    uint8_t h[512];
    char *longname = NULL;
    group g = {0};
    sv_status s = SV_OK;
    for (;;) {
        if (off + 512 > fsize) {
            s = SV_FAIL(SV_ERR_CORRUPT, "%s: truncated archive (no end-of-archive marker after byte %llu)", shard,
                        (unsigned long long)off);
            break;
        }
        if ((s = read_at(fd, h, 512, off, shard, "header")) != SV_OK) break;
        int zero = 1;
        for (int i = 0; i < 512 && zero; i++) zero = h[i] == 0;
        if (zero) break; /* end of archive (the second zero block is optional for readers) */
        unsigned sum = 0;
        for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
        int ok = 1;
        uint64_t chk = parse_num(h + 148, 8, &ok), size = parse_num(h + 124, 12, &ok);
        if (!ok || chk != sum) {
            s = SV_FAIL(SV_ERR_FORMAT, "%s: bad tar header checksum at byte %llu", shard, (unsigned long long)off);
            break;
        }
        /* size <= fsize first: a base-256 size near 2^64 would wrap the sums below */
        uint64_t data = off + 512, next = data + ((size + 511) & ~(uint64_t)511);
        if (size > fsize || next > fsize || data + size > fsize) {
            s = SV_FAIL(SV_ERR_CORRUPT, "%s: truncated archive (member at byte %llu needs %llu bytes, file has %llu)",
                        shard, (unsigned long long)off, (unsigned long long)(data + size), (unsigned long long)fsize);
            break;
        }
        char type = (char)h[156];
        if (type == 'x' || type == 'L') {
            if (size > (1u << 20)) {
                s = SV_FAIL(SV_ERR_FORMAT, "%s: extended header too large", shard);
                break;
            }
            char *buf = malloc(size + 1);
            if (!buf) {
                s = SV_FAIL(SV_ERR_OOM, "tar");
                break;
            }
            if ((s = read_at(fd, buf, size, data, shard, "extended header")) != SV_OK) {
                free(buf);
                break;
            }
            buf[size] = 0;
            if (type == 'L') {
                free(longname);
                longname = buf;
            } else { /* pax records: "<len> key=value\n" */
                for (size_t p = 0; p < size;) {
                    char *end;
                    unsigned long rl = strtoul(buf + p, &end, 10);
                    /* the length must cover "<len> " and end on the record's '\n', so every
                     * pointer below stays inside this record */
                    int bad = rl == 0 || rl > size - p; /* checked before any pointer is formed */
                    char *rec_end = bad ? buf + p : buf + p + rl - 1;
                    if (bad || *end != ' ' || end >= rec_end || *rec_end != '\n') {
                        s = SV_FAIL(SV_ERR_FORMAT, "%s: malformed pax record at byte %llu", shard,
                                    (unsigned long long)data);
                        break;
                    }
                    char *kv = end + 1;
                    if (rec_end - kv >= 5 && strncmp(kv, "path=", 5) == 0) {
                        size_t L = (size_t)(rec_end - (kv + 5));
                        free(longname);
                        longname = malloc(L + 1);
                        if (!longname) {
                            s = SV_FAIL(SV_ERR_OOM, "tar");
                            break;
                        }
                        memcpy(longname, kv + 5, L);
                        longname[L] = 0;
                    }
                    p += rl;
                }
                free(buf);
                if (s != SV_OK) break;
            }
            off = next;
            continue;
        }
        char name[4096];
        if (longname) {
            snprintf(name, sizeof name, "%s", longname);
            free(longname);
            longname = NULL;
        } else if (memcmp(h + 257, "ustar", 5) == 0 && h[345]) {
            snprintf(name, sizeof name, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
        } else {
            snprintf(name, sizeof name, "%.100s", (const char *)h);
        }
        off = next;
        if (type != '0' && type != 0 && type != '7') continue; /* dirs, links, global headers */
        if (unsafe_name(name)) {
            s = SV_FAIL(SV_ERR_FORMAT, "%s: member name '%s' is absolute or contains '..'", shard, name);
            break;
        }
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        const char *dot = strchr(base, '.');
        if (!dot) continue;
        size_t klen = (size_t)(dot - name);
        const char *ext = dot + 1;
        if (!g.have_key || strlen(g.key) != klen || strncmp(g.key, name, klen) != 0) {
            if ((s = push_sample(d, shard, sh, &g, cap)) != SV_OK) break;
            memset(&g, 0, sizeof g);
            memcpy(g.key, name, klen);
            g.key[klen] = 0;
            g.have_key = 1;
        }
        if (strcasecmp(ext, "jpg") == 0 || strcasecmp(ext, "jpeg") == 0) {
            g.has_img = 1;
            g.img_off = data;
            g.img_size = size;
        } else if (strcasecmp(ext, "cls") == 0) {
            char num[32] = {0};
            size_t L = size < sizeof num - 1 ? (size_t)size : sizeof num - 1;
            if ((s = read_at(fd, num, L, data, shard, "label")) != SV_OK) break;
            char *end;
            long v = strtol(num, &end, 10);
            while (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t') end++;
            if (end == num || *end || v < 0 || v > 10000000) {
                s = SV_FAIL(SV_ERR_FORMAT, "%s: key '%s': .cls is not a non-negative integer", shard, g.key);
                break;
            }
            g.has_cls = 1;
            g.cls = v;
        }
    }
    if (s == SV_OK) s = push_sample(d, shard, sh, &g, cap);
    free(longname);
    return s;
}

/* A shard file, identified by (st_dev, st_ino) of its open descriptor. */
typedef struct shard_id {
    dev_t dev;
    ino_t ino;
} shard_id;

static int by_file(const void *a, const void *b) {
    const shard_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return (x->ino > y->ino) - (x->ino < y->ino);
}

/* Every shard of the pattern must be a different file: a repeated brace item ("{a,a}"), two
 * items naming one file ("{a,./a}.tar"), or a link to another shard would read the same samples
 * more than once per epoch: a silently wrong epoch, and a wrong accuracy in evaluation. The
 * error names the earliest repeat (in expansion order), the shard it repeats, and the pattern. */
static sv_status check_distinct(const char *pattern, char *const *files, const int *fds, size_t nf) {
    if (nf < 2) return SV_OK;
    shard_id *id = malloc(nf * sizeof *id);
    if (!id) return SV_FAIL(SV_ERR_OOM, "tar shards");
    for (size_t i = 0; i < nf; i++) {
        struct stat st;
        if (fstat(fds[i], &st) != 0) {
            sv_status s = SV_FAIL(SV_ERR_IO, "%s: %s", files[i], strerror(errno));
            free(id);
            return s;
        }
        id[i] = (shard_id){st.st_dev, st.st_ino};
    }
    size_t first, again;
    int found = sv_first_repeat(id, nf, sizeof *id, by_file, &first, &again);
    free(id);
    if (found < 0) return SV_FAIL(SV_ERR_OOM, "tar shards");
    if (!found) return SV_OK;
    return SV_FAIL(SV_ERR_INVALID,
                   "tar shards %s: shard %zu (%s) is the same file as shard %zu (%s): its samples would be read "
                   "more than once per epoch (name each shard once)",
                   pattern, again + 1, files[again], first + 1, files[first]);
}

sv_status sv_tar_scan(sv_dataset *d, const char *pattern, const char *classes_file) {
    char **files;
    size_t nf;
    SV_TRY(sv_expand_braces(pattern, &files, &nf));
    sv_status s = SV_OK;
    d->fds = malloc(nf * sizeof *d->fds);
    if (!d->fds) {
        free(files);
        return SV_FAIL(SV_ERR_OOM, "tar shards");
    }
    for (size_t i = 0; i < nf; i++) d->fds[i] = -1; /* sv_dataset_close closes those that were opened */
    for (size_t i = 0; i < nf && s == SV_OK; i++) {
        if ((s = sv_strlist_push(&d->shards, files[i], strlen(files[i]))) != SV_OK) break;
        /* guarded open: a FIFO, device or directory given as a shard is refused without blocking */
        if ((s = sv_fileio_open_read(files[i], &d->fds[i], NULL)) != SV_OK) sv_err_frame(__FILE__, __LINE__);
    }
    if (s == SV_OK) s = check_distinct(pattern, files, d->fds, nf);
    size_t cap = 0;
    for (size_t i = 0; i < nf && s == SV_OK; i++) s = scan_shard(d, files[i], (uint32_t)i, d->fds[i], &cap);
    if (s == SV_OK && d->n == 0) s = SV_FAIL(SV_ERR_NOT_FOUND, "tar shards %s hold no .jpg samples", pattern);
    /* class names: explicit file, else classes.txt beside the first shard, else numbers */
    char auto_path[4096];
    if (s == SV_OK && !classes_file) {
        const char *sl = strrchr(files[0], '/');
        snprintf(auto_path, sizeof auto_path, "%.*s%sclasses.txt", sl ? (int)(sl - files[0]) : 0, files[0],
                 sl ? "/" : "");
        if (access(auto_path, R_OK) == 0) classes_file = auto_path;
    }
    if (s == SV_OK && classes_file) {
        char **names;
        int nn;
        if ((s = sv_classes_read(classes_file, &names, &nn)) == SV_OK) {
            if (nn < d->K)
                s = SV_FAIL(SV_ERR_FORMAT, "class list %s has %d names but labels go up to %d", classes_file, nn,
                            d->K - 1);
            else {
                d->K = nn;
                for (int k = 0; k < nn && s == SV_OK; k++) s = sv_strlist_push(&d->classes, names[k], strlen(names[k]));
            }
            free(names);
        }
    } else if (s == SV_OK) {
        char num[24];
        for (int k = 0; k < d->K && s == SV_OK; k++) {
            int L = snprintf(num, sizeof num, "%d", k);
            s = sv_strlist_push(&d->classes, num, (size_t)L);
        }
    }
    free(files);
    return s;
}
