/* shardvit data: `prep fashion-mnist` / `prep mnist`, the IDX importer (data/prep.h
 * sv_prep_idx): plain or gzip IDX files, their sizes checked against their headers and a gzip
 * stream read to its end (its CRC-32 and length checked, nothing but gzip members after it),
 * written through the shared job and sink of data/prep_impl.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/checked.h"
#include "core/fileio.h"
#include "core/log.h"
#include "data/prep.h"
#include "data/prep_impl.h"

static const char *const mnist_classes[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};

/* ---- IDX -------------------------------------------------------------------------------- */

/* One IDX file, plain or gzip (a file that does not start with gzip's magic is read as it is,
 * whatever its name). A gzip file is inflated here rather than through zlib's gzread, which
 * takes whatever follows the last gzip member for the file's end ("trailing garbage") and says
 * nothing: bytes after the end of the gzip stream that are not another member (gzip's
 * concatenated members are read on) are an error naming the file. */
#define IDX_IN_BYTES (256u << 10)
typedef struct {
    int fd;
    const char *path; /* the caller's buffer, for messages */
    int gz;           /* 1: gzip members, 0: plain */
    int zinit;        /* zs is initialised */
    int member_end;   /* the last member ended; the next input starts another or is the end */
    int in_eof;       /* the file is read to its end (the bytes in `in` are all that is left) */
    const char *why;  /* after a corrupt-stream error: zlib's reason ("incorrect data check", ...) */
    z_stream zs;
    uint8_t *in;
} idx_file;

static void idx_close(idx_file *f) {
    if (f->zinit) inflateEnd(&f->zs);
    if (f->fd >= 0) close(f->fd);
    free(f->in);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

/* More input into f->in after what inflate has not consumed yet. */
static sv_status idx_fill(idx_file *f) {
    if (f->in_eof) return SV_OK;
    if (f->zs.avail_in && f->zs.next_in != f->in) memmove(f->in, f->zs.next_in, f->zs.avail_in);
    f->zs.next_in = f->in;
    while (f->zs.avail_in < IDX_IN_BYTES) {
        ssize_t r = read(f->fd, f->in + f->zs.avail_in, IDX_IN_BYTES - f->zs.avail_in);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return SV_FAIL(SV_ERR_IO, "%s: read failed: %s", f->path, strerror(errno));
        if (r == 0) {
            f->in_eof = 1;
            break;
        }
        f->zs.avail_in += (uInt)r;
    }
    return SV_OK;
}

/* Open path through the guarded reader (a FIFO or device is refused without blocking); *size:
 * its size on disk. */
static sv_status idx_open_one(const char *path, idx_file *f, uint64_t *size) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    SV_TRY(sv_fileio_open_read(path, &f->fd, size));
    f->path = path;
    f->in = malloc(IDX_IN_BYTES);
    if (!f->in) {
        idx_close(f);
        return SV_FAIL(SV_ERR_OOM, "%s: input buffer", path);
    }
    sv_status st = idx_fill(f);
    if (st == SV_OK && f->zs.avail_in >= 2 && f->in[0] == 0x1f && f->in[1] == 0x8b) {
        f->gz = 1;
        if (inflateInit2(&f->zs, 16 + MAX_WBITS) != Z_OK) /* gzip wrapper: header, CRC-32, length */
            st = SV_FAIL(SV_ERR_OOM, "%s: zlib cannot start inflating it", path);
        else
            f->zinit = 1;
    }
    if (st != SV_OK) idx_close(f);
    return st;
}

/* SRC/BASE.gz, else SRC/BASE (a FIFO or unreadable .gz is an error, not a fall-through). */
static sv_status idx_open(const char *src, const char *base, idx_file *f, char *path, size_t cap, uint64_t *size) {
    snprintf(path, cap, "%s/%s.gz", src, base);
    sv_status s = idx_open_one(path, f, size);
    if (s != SV_ERR_NOT_FOUND) return s;
    sv_err_clear();
    snprintf(path, cap, "%s/%s", src, base);
    s = idx_open_one(path, f, size);
    if (s == SV_ERR_NOT_FOUND) return SV_FAIL(SV_ERR_NOT_FOUND, "IDX file %s/%s(.gz): %s", src, base, strerror(ENOENT));
    return s;
}

/* Up to n bytes into buf; *got: how many (fewer only at the end of the data). A gzip stream that
 * is cut short or fails its checks, or is followed by bytes that are not another member, is
 * SV_ERR_CORRUPT naming the file. */
static sv_status idx_read_some(idx_file *f, uint8_t *buf, size_t n, size_t *got) {
    *got = 0;
    if (!f->gz) { /* plain: what is in the buffer first, then the file */
        while (*got < n) {
            if (!f->zs.avail_in) {
                if (f->in_eof) break;
                f->zs.next_in = f->in;
                SV_TRY(idx_fill(f));
                continue;
            }
            size_t k = n - *got < f->zs.avail_in ? n - *got : f->zs.avail_in;
            memcpy(buf + *got, f->zs.next_in, k);
            f->zs.next_in += k, f->zs.avail_in -= (uInt)k, *got += k;
        }
        return SV_OK;
    }
    while (*got < n) {
        if (f->zs.avail_in < 2 && !f->in_eof) SV_TRY(idx_fill(f));
        if (f->member_end) {
            if (!f->zs.avail_in) return SV_OK; /* the end of the stream, and of the file */
            if (f->zs.avail_in < 2 || f->zs.next_in[0] != 0x1f || f->zs.next_in[1] != 0x8b) {
                uint64_t left = f->zs.avail_in;
                struct stat sb;
                off_t pos = lseek(f->fd, 0, SEEK_CUR);
                if (!f->in_eof && pos >= 0 && fstat(f->fd, &sb) == 0 && sb.st_size > pos)
                    left += (uint64_t)(sb.st_size - pos);
                return SV_FAIL(SV_ERR_CORRUPT,
                               "%s: %llu byte%s after the end of its gzip stream that %s not another gzip member: a "
                               "corrupt file, or one with data appended",
                               f->path, (unsigned long long)left, left == 1 ? "" : "s", left == 1 ? "is" : "are");
            }
            if (inflateReset(&f->zs) != Z_OK) return SV_FAIL(SV_ERR_CORRUPT, "%s: zlib cannot restart", f->path);
            f->member_end = 0;
        }
        const size_t want = n - *got > (1u << 30) ? (1u << 30) : n - *got;
        f->zs.next_out = buf + *got;
        f->zs.avail_out = (uInt)want;
        const uInt in_before = f->zs.avail_in;
        int r = inflate(&f->zs, Z_NO_FLUSH);
        const size_t made = want - f->zs.avail_out;
        *got += made;
        if (r == Z_STREAM_END) {
            f->member_end = 1;
            continue;
        }
        if (r == Z_MEM_ERROR) return SV_FAIL(SV_ERR_OOM, "%s: zlib", f->path);
        if (r != Z_OK && r != Z_BUF_ERROR)
            f->why = f->zs.msg ? f->zs.msg : "invalid data";
        else if (!made && f->zs.avail_in == in_before && f->in_eof) /* no progress and no more input */
            f->why = "unexpected end of file";
        if (f->why) return SV_FAIL(SV_ERR_CORRUPT, "%s: corrupt or truncated gzip file (%s)", f->path, f->why);
    }
    return SV_OK;
}

static sv_status idx_read(idx_file *f, void *buf, size_t n) {
    size_t got;
    sv_status st = idx_read_some(f, buf, n, &got);
    if (st == SV_ERR_CORRUPT && f->why)
        return SV_FAIL(SV_ERR_CORRUPT, "%s: corrupt or truncated gzip file (%s; wanted %zu bytes, got %zu)", f->path,
                       f->why, n, got);
    if (st != SV_OK) return st;
    if (got < n) return SV_FAIL(SV_ERR_CORRUPT, "%s: truncated (wanted %zu bytes, got %zu)", f->path, n, got);
    return SV_OK;
}

/* After the n records its header declares, f must end: a gzip stream's end is where its CRC-32
 * and length are checked, so a flipped bit or a cut trailer is found only by reading to it. */
static sv_status idx_end(idx_file *f, uint32_t n, const char *what) {
    uint8_t extra;
    size_t got;
    sv_status s = idx_read_some(f, &extra, 1, &got);
    if (s == SV_ERR_CORRUPT && f->why)
        s = SV_FAIL(SV_ERR_CORRUPT, "%s: corrupt or truncated gzip file (%s) after the %u %s the header declares",
                    f->path, f->why, n, what);
    else if (s == SV_OK && got)
        s = SV_FAIL(SV_ERR_CORRUPT,
                    "%s: data after the %u %s the header declares (a corrupt file, or a wrong count in the header)",
                    f->path, n, what);
    idx_close(f);
    return s;
}

/* An uncompressed IDX file must hold exactly what its header claims: header + n x rows x cols
 * bytes (cols == 0: a label file, 8-byte header + n bytes), computed with checked 64-bit
 * arithmetic; a header claiming smaller images than the file holds would cut every image at the
 * wrong place. A gzip file's length is only known by decompressing it: idx_read reports
 * truncation, idx_end data after the records; but deflate cannot expand S bytes to more than
 * about 1032 S (a 258-byte match per two bits at best), so a header claiming more than that is
 * refused before anything is written (a 2 MB gzip of zeros whose header claimed 2^32 - 1 images
 * had prep write images for minutes, gigabytes of them, before it found the file short). */
#define GZ_MAX_RATIO 1032u
static sv_status idx_check_sizes(const char *path, int plain, uint64_t size, uint32_t n, uint32_t rows, uint32_t cols) {
    uint64_t hdr = cols ? 16 : 8, body, need;
    if (!sv_mul3_u64(n, rows, cols ? cols : 1, &body) || !sv_add_u64(hdr, body, &need))
        return SV_FAIL(SV_ERR_FORMAT, "%s: header claims %u x %u x %u bytes, more than 64 bits hold", path, n, rows,
                       cols);
    if (!plain) {
        if (size < (UINT64_MAX - 1024) / GZ_MAX_RATIO && need > size * GZ_MAX_RATIO + 1024)
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%s: header claims %llu bytes of records, but a gzip file of %llu bytes holds at most "
                           "about %llu (deflate expands at most ~%ux): a corrupt or hostile header",
                           path, (unsigned long long)need, (unsigned long long)size,
                           (unsigned long long)(size * GZ_MAX_RATIO + 1024), GZ_MAX_RATIO);
        return SV_OK;
    }
    if (size != need) {
        char items[64];
        if (cols)
            snprintf(items, sizeof items, "%u images of %ux%u", n, rows, cols);
        else
            snprintf(items, sizeof items, "%u labels", n);
        return SV_FAIL(SV_ERR_CORRUPT, "%s: header claims %s (%llu bytes with the header) but the file has %llu bytes",
                       path, items, (unsigned long long)need, (unsigned long long)size);
    }
    return SV_OK;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static sv_status idx_split(sv_prep_job *j, const char *src, const char *prefix, int split, const char *const *names,
                           uint64_t *count) {
    const sv_prep_opts *o = j->o;
    char ipath[4096], lpath[4096], base[128];
    idx_file fi = {.fd = -1}, fl = {.fd = -1};
    uint8_t *img = NULL;
    sv_prep_sink s = {0};
    sv_status st = SV_OK;
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    uint64_t isize, lsize;
    SV_TRY_GOTO(st, idx_open(src, base, &fi, ipath, sizeof ipath, &isize), done);
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    SV_TRY_GOTO(st, idx_open(src, base, &fl, lpath, sizeof lpath, &lsize), done);
    uint8_t hi[16], hl[8];
    SV_TRY_GOTO(st, idx_read(&fi, hi, 16), done);
    SV_TRY_GOTO(st, idx_read(&fl, hl, 8), done);
    if (be32(hi) != 0x803) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: bad IDX image magic 0x%x (want 0x803)", ipath, be32(hi));
        goto done;
    }
    if (be32(hl) != 0x801) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: bad IDX label magic 0x%x (want 0x801)", lpath, be32(hl));
        goto done;
    }
    uint32_t n = be32(hi + 4), rows = be32(hi + 8), cols = be32(hi + 12);
    if (be32(hl + 4) != n) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s has %u labels but %s has %u images", lpath, be32(hl + 4), ipath, n);
        goto done;
    }
    if (n == 0) { /* would be imported as an empty split, with success */
        st = SV_FAIL(SV_ERR_FORMAT, "%s and %s hold no image (the IDX headers declare 0 items)", ipath, lpath);
        goto done;
    }
    if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: bad image size %ux%u", ipath, rows, cols);
        goto done;
    }
    SV_TRY_GOTO(st, idx_check_sizes(ipath, !fi.gz, isize, n, rows, cols), done);
    SV_TRY_GOTO(st, idx_check_sizes(lpath, !fl.gz, lsize, n, 1, 0), done);
    uint64_t take = o->limit && o->limit < n ? o->limit : n;
    img = malloc((size_t)rows * cols);
    if (!img) {
        st = SV_FAIL(SV_ERR_OOM, "prep");
        goto done;
    }
    SV_TRY_GOTO(st, sv_prep_sink_open(&s, j, split, names, 10, take), done);
    for (uint64_t i = 0; i < take && st == SV_OK; i++) {
        uint8_t lab;
        SV_TRY_GOTO(st, idx_read(&fi, img, (size_t)rows * cols), done);
        SV_TRY_GOTO(st, idx_read(&fl, &lab, 1), done);
        st = sv_prep_sink_put(&s, img, (int)cols, (int)rows, 1, lab);
    }
    if (st != SV_OK) goto done;
    /* past --limit the records are read too, to the files' ends (see idx_end) */
    for (uint64_t i = take; i < n; i++) SV_TRY_GOTO(st, idx_read(&fi, img, (size_t)rows * cols), done);
    for (uint64_t i = take; i < n; i += rows * cols) {
        size_t chunk = n - i < (uint64_t)rows * cols ? (size_t)(n - i) : (size_t)rows * cols;
        SV_TRY_GOTO(st, idx_read(&fl, img, chunk), done);
    }
    SV_TRY_GOTO(st, idx_end(&fi, n, "images"), done);
    SV_TRY_GOTO(st, idx_end(&fl, n, "labels"), done);
    *count = s.count;
done:
    if (s.o) st = sv_prep_sink_close(&s, st);
    idx_close(&fi);
    idx_close(&fl);
    free(img);
    return st;
}

sv_status sv_prep_idx(sv_prep_opts *o, int fashion) {
    const char *src = o->src ? o->src : SV_FASHION_MNIST_DIR;
    const char *const *names = fashion ? sv_fashion_mnist_classes : mnist_classes;
    const char *what = fashion ? "fashion-mnist" : "mnist";
    sv_prep_job j;
    int done;
    SV_TRY(sv_prep_begin(&j, o, what, &done));
    if (done) return SV_OK;
    SV_INFO("prep %s: %s -> %s (%s)", what, src, o->out, o->format == SV_PREP_TAR ? "tar shards" : "image folders");
    sv_status st = idx_split(&j, src, "train", 0, names, &o->n_train);
    if (st == SV_OK) st = idx_split(&j, src, "t10k", 1, names, &o->n_test);
    if (st == SV_OK) st = sv_prep_finish(&j, names, 10);
    if (st != SV_OK) return sv_prep_abort(&j, st);
    SV_INFO("prep: wrote %llu train + %llu test images", (unsigned long long)o->n_train, (unsigned long long)o->n_test);
    return SV_OK;
}
