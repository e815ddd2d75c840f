/* shardvit data: `prep fashion-mnist` / `prep mnist`, the IDX importer (data/prep.h
 * sv_prep_idx): plain or gzip IDX files, their sizes checked against their headers and a gzip
 * stream read to its end (its CRC-32 and length checked), written through the shared job and sink
 * of data/prep_impl.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/checked.h"
#include "core/fileio.h"
#include "core/log.h"
#include "data/prep.h"
#include "data/prep_impl.h"

static const char *const mnist_classes[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};

/* ---- IDX -------------------------------------------------------------------------------- */

/* Open one (possibly gzip-compressed) file through the guarded reader: a FIFO or device is
 * refused without blocking. *size receives the size on disk. */
static sv_status gz_open_one(const char *path, gzFile *f, uint64_t *size) {
    int fd;
    SV_TRY(sv_fileio_open_read(path, &fd, size));
    if (!(*f = gzdopen(fd, "rb"))) {
        close(fd);
        return SV_FAIL(SV_ERR_IO, "%s: zlib cannot read it: %s", path, strerror(errno ? errno : ENOMEM));
    }
    return SV_OK;
}

/* SRC/BASE.gz, else SRC/BASE (a FIFO or unreadable .gz is an error, not a fall-through). */
static sv_status gz_open(const char *src, const char *base, gzFile *f, char *path, size_t cap, uint64_t *size) {
    snprintf(path, cap, "%s/%s.gz", src, base);
    sv_status s = gz_open_one(path, f, size);
    if (s != SV_ERR_NOT_FOUND) return s;
    sv_err_clear();
    snprintf(path, cap, "%s/%s", src, base);
    s = gz_open_one(path, f, size);
    if (s == SV_ERR_NOT_FOUND) return SV_FAIL(SV_ERR_NOT_FOUND, "IDX file %s/%s(.gz): %s", src, base, strerror(ENOENT));
    return s;
}

/* zlib's error on f as a message ("unexpected end of file", "incorrect data check", ...). */
static const char *gz_why(gzFile f, int *err) {
    const char *m = gzerror(f, err), *c = m && !strncmp(m, "<fd:", 4) ? strstr(m, ": ") : NULL;
    if (c) m = c + 2; /* zlib names the descriptor ("<fd:4>: "); the messages name the file */
    return m && m[0] ? m : "unexpected end of file";
}

static sv_status gz_read(gzFile f, void *buf, size_t n, const char *path) {
    size_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int r = gzread(f, (uint8_t *)buf + got, chunk), err;
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        const char *why = gz_why(f, &err);
        if (r < 0 || err != Z_OK) /* a gzip stream cut short or failing its checks */
            return SV_FAIL(SV_ERR_CORRUPT, "%s: corrupt or truncated gzip file (%s; wanted %zu bytes, got %zu)", path,
                           why, n, got);
        return SV_FAIL(SV_ERR_CORRUPT, "%s: truncated (wanted %zu bytes, got %zu)", path, n, got);
    }
    return SV_OK;
}

/* After the n records its header declares, f must end: a gzip stream's end is where zlib checks
 * its CRC-32 and length, so a flipped bit or a cut trailer is found only by reading to it.
 * gzclose's result is checked too. */
static sv_status gz_end(gzFile *f, const char *path, uint32_t n, const char *what) {
    uint8_t extra;
    int r = gzread(*f, &extra, 1), err;
    const char *why = gz_why(*f, &err);
    sv_status s = SV_OK;
    if (r < 0 || (r == 0 && (err != Z_OK || !gzeof(*f))))
        s = SV_FAIL(SV_ERR_CORRUPT, "%s: corrupt or truncated gzip file (%s) after the %u %s the header declares", path,
                    why, n, what);
    else if (r > 0)
        s = SV_FAIL(SV_ERR_CORRUPT,
                    "%s: data after the %u %s the header declares (a corrupt file, or a wrong count in the header)",
                    path, n, what);
    int c = gzclose(*f);
    *f = NULL;
    if (s == SV_OK && c != Z_OK)
        s = SV_FAIL(SV_ERR_CORRUPT, "%s: corrupt or truncated gzip file (closing it: zlib error %d)", path, c);
    return s;
}

/* An uncompressed IDX file must hold exactly what its header claims: header + n x rows x cols
 * bytes (cols == 0: a label file, 8-byte header + n bytes), computed with checked 64-bit
 * arithmetic; a header claiming smaller images than the file holds would cut every image at the
 * wrong place. A gzip file's length is only known by decompressing it: gz_read reports
 * truncation, gz_end data after the records; but deflate cannot expand S bytes to more than
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
    gzFile fi = NULL, fl = NULL;
    uint8_t *img = NULL;
    sv_prep_sink s = {0};
    sv_status st = SV_OK;
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    uint64_t isize, lsize;
    SV_TRY_GOTO(st, gz_open(src, base, &fi, ipath, sizeof ipath, &isize), done);
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    SV_TRY_GOTO(st, gz_open(src, base, &fl, lpath, sizeof lpath, &lsize), done);
    uint8_t hi[16], hl[8];
    SV_TRY_GOTO(st, gz_read(fi, hi, 16, ipath), done);
    SV_TRY_GOTO(st, gz_read(fl, hl, 8, lpath), done);
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
    SV_TRY_GOTO(st, idx_check_sizes(ipath, gzdirect(fi), isize, n, rows, cols), done);
    SV_TRY_GOTO(st, idx_check_sizes(lpath, gzdirect(fl), lsize, n, 1, 0), done);
    uint64_t take = o->limit && o->limit < n ? o->limit : n;
    img = malloc((size_t)rows * cols);
    if (!img) {
        st = SV_FAIL(SV_ERR_OOM, "prep");
        goto done;
    }
    SV_TRY_GOTO(st, sv_prep_sink_open(&s, j, split, names, 10, take), done);
    for (uint64_t i = 0; i < take && st == SV_OK; i++) {
        uint8_t lab;
        SV_TRY_GOTO(st, gz_read(fi, img, (size_t)rows * cols, ipath), done);
        SV_TRY_GOTO(st, gz_read(fl, &lab, 1, lpath), done);
        st = sv_prep_sink_put(&s, img, (int)cols, (int)rows, 1, lab);
    }
    if (st != SV_OK) goto done;
    /* past --limit the records are read too, to the files' ends (see gz_end) */
    for (uint64_t i = take; i < n; i++) SV_TRY_GOTO(st, gz_read(fi, img, (size_t)rows * cols, ipath), done);
    for (uint64_t i = take; i < n; i += rows * cols) {
        size_t chunk = n - i < (uint64_t)rows * cols ? (size_t)(n - i) : (size_t)rows * cols;
        SV_TRY_GOTO(st, gz_read(fl, img, chunk, lpath), done);
    }
    SV_TRY_GOTO(st, gz_end(&fi, ipath, n, "images"), done);
    SV_TRY_GOTO(st, gz_end(&fl, lpath, n, "labels"), done);
    *count = s.count;
done:
    if (s.o) st = sv_prep_sink_close(&s, st);
    if (fi) gzclose(fi);
    if (fl) gzclose(fl);
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
