/* WebDataset tar shard indexing: ustar/pax/GNU long names, key grouping, .cls labels. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/log.h"
#include "core/repeat.h"
#include "data/dataset_impl.h"

/* A numeric header field: octal digits, or GNU base-256 (first byte's top bit set, big-endian
 * two's complement in the rest). *ok = 0: not a number; *ok = -1: base-256 out of range, a
 * negative value (bit 0x40 of the first byte) or one over 63 bits (a non-zero byte before the
 * last 8, or the top bit of the 8), which a uint64 would read as another size. */
static uint64_t parse_num(const uint8_t *f, int n, int *ok) {
    if (f[0] & 0x80) { /* GNU base-256 */
        uint64_t v = 0;
        for (int i = 0; i < n; i++) {
            uint8_t b = i ? f[i] : f[0] & 0x7f;
            if ((i == 0 && (b & 0x40)) || (n - i > 8 && b) || (n - i == 8 && (b & 0x80))) *ok = -1;
            v = (v << 8) | b;
        }
        return *ok < 0 ? 0 : v;
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

/* Largest .cls member: one decimal label with some whitespace around it. */
#define SV_TAR_CLS_MAX 64
/* Largest label a .cls may give. */
#define SV_TAR_LABEL_MAX 10000000

/* The members of one key: at most one image (.jpg / .jpeg, any case) and one label (.cls). */
typedef struct {
    char key[4096];
    int have_key, has_img, has_cls;
    char img_ext[8], cls_ext[8]; /* as written, for the message about a second one */
    uint64_t img_off, img_size;
    long cls;
    char exts[256]; /* ".ext, .ext" of every member, cut with "...": named when none is usable */
} group;

static void note_ext(group *g, const char *ext) {
    size_t n = strlen(g->exts);
    int w = snprintf(g->exts + n, sizeof g->exts - n, "%s.%s", n ? ", " : "", ext);
    if (w < 0 || (size_t)w >= sizeof g->exts - n) memcpy(g->exts + sizeof g->exts - 4, "...", 4);
}

static sv_status push_sample(sv_dataset *d, const char *shard, uint32_t sh, group *g, size_t *cap) {
    if (!g->have_key) return SV_OK;
    char e[SV_ESC_CAP], x[SV_ESC_CAP];
    if (!g->has_img && !g->has_cls)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: key '%s' has neither a .jpg/.jpeg image nor a .cls label (its members end in %s): a "
                       "key ends at the first dot of the file name, as in webdataset, so 'a.b.jpg' is key 'a' "
                       "with extension 'b.jpg'; keep dots out of keys (a_b.jpg, a_b.cls)",
                       shard, sv_log_esc(g->key, e, sizeof e), sv_log_esc(g->exts, x, sizeof x));
    if (!g->has_cls)
        return SV_FAIL(SV_ERR_FORMAT, "%s: key '%s' has a .jpg but no .cls label", shard,
                       sv_log_esc(g->key, e, sizeof e));
    if (!g->has_img)
        return SV_FAIL(SV_ERR_FORMAT, "%s: key '%s' has a .cls but no .jpg/.jpeg image", shard,
                       sv_log_esc(g->key, e, sizeof e));
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

static int ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* A .cls member's n bytes: ASCII whitespace, decimal digits (no sign), ASCII whitespace, and
 * nothing else (a NUL byte included), at most SV_TAR_LABEL_MAX. 0 when it is anything else. */
static int parse_label(const char *t, size_t n, long *out) {
    size_t i = 0;
    while (i < n && ascii_space(t[i])) i++;
    size_t digits = i;
    long v = 0;
    for (; i < n && t[i] >= '0' && t[i] <= '9'; i++) {
        v = v * 10 + (t[i] - '0');
        if (v > SV_TAR_LABEL_MAX) return 0;
    }
    if (i == digits) return 0;
    while (i < n && ascii_space(t[i])) i++;
    if (i != n) return 0;
    *out = v;
    return 1;
}

/* A pax size= value, [v, end): decimal digits only, at least one, below 2^64. 0 otherwise. */
static int pax_size(const char *v, const char *end, uint64_t *out) {
    if (v == end) return 0;
    uint64_t x = 0;
    for (; v < end; v++) {
        if (*v < '0' || *v > '9' || x > (UINT64_MAX - 9) / 10) return 0;
        x = x * 10 + (uint64_t)(*v - '0');
    }
    *out = x;
    return 1;
}

/* What a member type that cannot be a sample's member is, for the error naming it. */
static const char *type_name(char t) {
    switch (t) {
    case '1': return "a hard link";
    case '2': return "a symbolic link";
    case '3': return "a character device";
    case '4': return "a block device";
    case '6': return "a FIFO";
    case 'S': return "a GNU sparse file";
    case 'M': return "a GNU multi-volume continuation";
    case 'N': return "an old GNU long-name record";
    default: return "of an unknown type";
    }
}

/* After the end-of-archive block, from byte `from`: the rest of a tar record's padding is zeros;
 * anything else (a second archive joined with cat) is not read, as GNU tar without -i does, and
 * the first non-zero byte is named in one warning for the shard. */
static sv_status check_tail(int fd, const char *shard, uint64_t from, uint64_t fsize) {
    uint8_t buf[16384];
    for (uint64_t at = from; at < fsize;) {
        size_t n = fsize - at < sizeof buf ? (size_t)(fsize - at) : sizeof buf;
        SV_TRY(read_at(fd, buf, n, at, shard, "data after the end-of-archive marker"));
        for (size_t i = 0; i < n; i++)
            if (buf[i]) {
                SV_WARN_ALIKE("%s: the data after the end-of-archive marker at byte %llu is ignored (non-zero "
                              "bytes from byte %llu: two archives joined with cat?); as GNU tar without -i, only "
                              "the first archive is read: rebuild the shard as one archive",
                              shard, (unsigned long long)(from - 512), (unsigned long long)(at + i));
                return SV_OK;
            }
        at += n;
    }
    return SV_OK;
}

/* Two keys (elements of a key array) compared as text. */
static int by_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The samples [first, d->n) of one shard must have different keys: a key whose members come
 * again after other keys would be a second sample (webdataset groups only adjacent members). */
static sv_status check_keys_once(const sv_dataset *d, const char *shard, size_t first) {
    size_t n = d->n - first;
    if (n < 2) return SV_OK;
    const char **k = malloc(n * sizeof *k);
    if (!k) return SV_FAIL(SV_ERR_OOM, "%s: %zu keys", shard, n);
    for (size_t i = 0; i < n; i++) k[i] = sv_strlist_at(&d->keys, first + i);
    size_t a, b;
    int found = sv_first_repeat(k, n, sizeof *k, by_key, &a, &b);
    char e[SV_ESC_CAP];
    sv_status s = found == 0 ? SV_OK
        : found < 0
        ? SV_FAIL(SV_ERR_OOM, "%s: %zu keys", shard, n)
        : SV_FAIL(SV_ERR_FORMAT,
                  "%s: key '%s' occurs twice in the shard, as sample %zu and again as sample %zu with other keys "
                  "between: it would be two samples; the members of a key must be adjacent, each key once per "
                  "shard",
                  shard, sv_log_esc(k[a], e, sizeof e), a + 1, b + 1);
    free(k);
    return s;
}

/* Member types (the ustar typeflag with its GNU and pax additions):
 *   '0', '\0', '7'  a regular file: a member of its key's sample
 *   '5', 'D', 'V'   a directory, a GNU incremental dump directory, a GNU volume label: ignored
 *   'x'             a pax header: its path= and size= records are the next member's
 *   'L'             a GNU long name: the next member's name
 *   'g', 'K'        a pax global header, a GNU long link name: ignored, and they do not take the
 *                   next member's pending name or size
 *   anything else   an error naming the member and its type: a hard link ('1') or symbolic link
 *                   ('2') has no data of its own, so its sample would vanish; a device, FIFO,
 *                   sparse file, multi-volume part or unknown type is no image either.
 * Names: a pending pax path= or GNU long name, else prefix "/" name for POSIX ustar headers
 * (magic "ustar\0", version "00"), else the name field alone (GNU headers, magic "ustar  \0",
 * keep atime and ctime where POSIX has the prefix). A key is the name up to the first dot of its
 * file name (webdataset's rule); a file name without a dot or starting with one (README,
 * .DS_Store, ._x.jpg) is no key and is ignored, as webdataset does. */
static sv_status scan_shard(sv_dataset *d, const char *shard, uint32_t sh, int fd, size_t *cap) {
    struct stat st;
    if (fstat(fd, &st) != 0) return SV_FAIL(SV_ERR_IO, "%s: %s", shard, strerror(errno));
    uint64_t fsize = (uint64_t)st.st_size, off = 0, next_size = 0;
    uint8_t h[512];
    char *longname = NULL;
    int have_next_size = 0; /* a pax size= for the next member */
    size_t first = d->n;
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
        if (zero) { /* end of archive (the second zero block is optional for readers) */
            s = check_tail(fd, shard, off + 512, fsize);
            break;
        }
        unsigned sum = 0;
        for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
        int ok = 1, size_ok = 1;
        uint64_t chk = parse_num(h + 148, 8, &ok), size = parse_num(h + 124, 12, &size_ok);
        if (ok != 1 || chk != sum || !size_ok) {
            s = SV_FAIL(SV_ERR_FORMAT, "%s: bad tar header checksum at byte %llu", shard, (unsigned long long)off);
            break;
        }
        char type = (char)h[156];
        int extended = type == 'x' || type == 'L' || type == 'g' || type == 'K';
        if (size_ok < 0) { /* the member: its pending long name, else the header's name field */
            char nm[101], e[SV_ESC_CAP];
            snprintf(nm, sizeof nm, "%.100s", (const char *)h);
            s = SV_FAIL(SV_ERR_FORMAT,
                        "%s: member '%s' at byte %llu: size out of range (a base-256 size field that is negative "
                        "or over 63 bits)",
                        shard, sv_log_esc(longname && !extended ? longname : nm, e, sizeof e), (unsigned long long)off);
            break;
        }
        if (!extended && have_next_size) { /* the size of a member over 8 GiB (0 in its header) */
            size = next_size;
            have_next_size = 0;
        }
        /* size <= fsize first: a base-256 size near 2^64 would wrap the sums below */
        uint64_t data = off + 512, next = data + ((size + 511) & ~(uint64_t)511);
        if (size > fsize || next > fsize || data + size > fsize) {
            s = SV_FAIL(SV_ERR_CORRUPT, "%s: truncated archive (member at byte %llu needs %llu bytes, file has %llu)",
                        shard, (unsigned long long)off, (unsigned long long)(data + size), (unsigned long long)fsize);
            break;
        }
        if (type == 'g' || type == 'K') {
            off = next;
            continue;
        }
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
                    } else if (rec_end - kv >= 5 && strncmp(kv, "size=", 5) == 0) {
                        if (!pax_size(kv + 5, rec_end, &next_size)) {
                            char v[64], e[SV_ESC_CAP];
                            snprintf(v, sizeof v, "%.*s", (int)(rec_end - kv < 63 ? rec_end - kv : 63), kv);
                            s = SV_FAIL(SV_ERR_FORMAT,
                                        "%s: pax header at byte %llu: size record '%s' is not a decimal byte count",
                                        shard, (unsigned long long)off, sv_log_esc(v, e, sizeof e));
                            break;
                        }
                        have_next_size = 1;
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
        if (longname && strlen(longname) >= sizeof name) { /* cut short it would lose its key */
            char e[80];
            s = SV_FAIL(SV_ERR_FORMAT, "%s: member name of %zu bytes starting '%s' is longer than %zu bytes", shard,
                        strlen(longname), sv_log_esc(longname, e, sizeof e), sizeof name - 1);
            break;
        }
        if (longname) {
            snprintf(name, sizeof name, "%s", longname);
            free(longname);
            longname = NULL;
        } else if (memcmp(h + 257, "ustar", 6) == 0 && h[263] == '0' && h[264] == '0' && h[345]) {
            snprintf(name, sizeof name, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
        } else {
            snprintf(name, sizeof name, "%.100s", (const char *)h);
        }
        off = next;
        if (type == '5' || type == 'D' || type == 'V') continue;
        if (type != '0' && type != 0 && type != '7') {
            char e[SV_ESC_CAP], t[8];
            if (type > ' ' && type < 0x7f)
                snprintf(t, sizeof t, "%c", type);
            else
                snprintf(t, sizeof t, "\\x%02x", (unsigned char)type);
            s = SV_FAIL(SV_ERR_FORMAT,
                        "%s: member '%s' is %s (tar type '%s'), not a regular file: a sample's image and label "
                        "must be stored as files in the shard (GNU tar: --hard-dereference, -h)",
                        shard, sv_log_esc(name, e, sizeof e), type_name(type), t);
            break;
        }
        if (unsafe_name(name)) {
            char e[SV_ESC_CAP];
            s = SV_FAIL(SV_ERR_FORMAT, "%s: member name '%s' is absolute or contains '..'", shard,
                        sv_log_esc(name, e, sizeof e));
            break;
        }
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        const char *dot = strchr(base, '.');
        if (!dot || dot == base) continue;
        size_t klen = (size_t)(dot - name);
        const char *ext = dot + 1;
        if (!g.have_key || strlen(g.key) != klen || strncmp(g.key, name, klen) != 0) {
            if ((s = push_sample(d, shard, sh, &g, cap)) != SV_OK) break;
            memset(&g, 0, sizeof g);
            memcpy(g.key, name, klen);
            g.key[klen] = 0;
            g.have_key = 1;
        }
        note_ext(&g, ext);
        int img = strcasecmp(ext, "jpg") == 0 || strcasecmp(ext, "jpeg") == 0, cls = strcasecmp(ext, "cls") == 0;
        if ((img && g.has_img) || (cls && g.has_cls)) {
            char e[SV_ESC_CAP];
            s = SV_FAIL(SV_ERR_FORMAT,
                        "%s: key '%s' has a second %s (.%s after .%s): a key holds one image and one label, and "
                        "webdataset refuses repeated names too; remove the extra member",
                        shard, sv_log_esc(g.key, e, sizeof e), img ? "image" : "label", ext,
                        img ? g.img_ext : g.cls_ext);
            break;
        }
        if (img) {
            g.has_img = 1;
            g.img_off = data;
            g.img_size = size;
            snprintf(g.img_ext, sizeof g.img_ext, "%s", ext);
        } else if (cls) {
            char e[SV_ESC_CAP], num[SV_TAR_CLS_MAX];
            if (size > SV_TAR_CLS_MAX) {
                s = SV_FAIL(SV_ERR_FORMAT,
                            "%s: key '%s': its .cls member is %llu bytes; a label is one decimal integer of at "
                            "most %d bytes with its whitespace",
                            shard, sv_log_esc(g.key, e, sizeof e), (unsigned long long)size, SV_TAR_CLS_MAX);
                break;
            }
            if ((s = read_at(fd, num, (size_t)size, data, shard, "label")) != SV_OK) break;
            if (!parse_label(num, (size_t)size, &g.cls)) {
                s = SV_FAIL(SV_ERR_FORMAT,
                            "%s: key '%s': .cls is not a non-negative decimal integer (digits, at most %d, with "
                            "only ASCII whitespace around them)",
                            shard, sv_log_esc(g.key, e, sizeof e), SV_TAR_LABEL_MAX);
                break;
            }
            g.has_cls = 1;
            snprintf(g.cls_ext, sizeof g.cls_ext, "%s", ext);
        }
    }
    if (s == SV_OK) s = push_sample(d, shard, sh, &g, cap);
    if (s == SV_OK) s = check_keys_once(d, shard, first);
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

sv_status sv_tar_scan(sv_dataset *d, const char *pattern, int literal, const char *classes_file, int fallback) {
    char **files;
    size_t nf = 1;
    if (literal) { /* one allocation like sv_expand_braces' */
        size_t L = strlen(pattern) + 1;
        if (!(files = malloc(sizeof *files + L))) return SV_FAIL(SV_ERR_OOM, "tar shards");
        files[0] = memcpy(files + 1, pattern, L);
    } else {
        SV_TRY(sv_expand_braces(pattern, &files, &nf));
    }
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
    /* class names: explicit file, else classes.txt beside the first shard, else numbers (with
     * fallback: classes.txt first). Anything at that name is read, so a dangling link, a FIFO or
     * an unreadable file is an error, never a silent fall back to numbers. */
    char auto_path[4096];
    if (s == SV_OK && (!classes_file || fallback)) {
        const char *sl = strrchr(files[0], '/');
        snprintf(auto_path, sizeof auto_path, "%.*s%sclasses.txt", sl ? (int)(sl - files[0]) : 0, files[0],
                 sl ? "/" : "");
        struct stat lst;
        if (lstat(auto_path, &lst) == 0) classes_file = auto_path;
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
