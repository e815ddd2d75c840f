/* Importers: small IDX (gzipped and plain) and CIFAR-10/100 files written here are imported
 * into ImageFolder trees and tar shards; counts, labels (per source index) and pixels (PSNR)
 * must match the source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/prep.h"

static void put32(uint8_t *p, uint32_t v) {
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

static void write_file(const char *path, const void *data, size_t n, int gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        CHECK(f && gzwrite(f, data, (unsigned)n) == (int)n);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(data, 1, n, f) == n);
        fclose(f);
    }
}

/* the bytes of the file at path (*n of them), malloc'd */
static uint8_t *load(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f && fseek(f, 0, SEEK_END) == 0);
    long L = ftell(f);
    CHECK(L >= 0 && fseek(f, 0, SEEK_SET) == 0);
    uint8_t *b = malloc((size_t)L + 1);
    CHECK(b && fread(b, 1, (size_t)L, f) == (size_t)L);
    fclose(f);
    *n = (size_t)L;
    return b;
}

/* dir/<split>-{images,labels}-ubyte: n images of side x side, labels i % 10; train gzipped at
 * zlib level `level` ('0' stored: a changed byte stays valid deflate data), labels_extra labels
 * past the n the header declares; test plain, extra_rows more rows per image than its header
 * declares. */
static void idx_source(const char *dir, uint32_t n, uint32_t side, char level, uint32_t labels_extra,
                       uint32_t extra_rows) {
    char p[4500], mode[4] = {'w', 'b', level, 0};
    uint8_t *im = calloc(16 + (size_t)n * (side + extra_rows) * side, 1), *lb = malloc(8 + n + labels_extra);
    for (int split = 0; split < 2; split++) {
        uint32_t rows = split ? side + extra_rows : side;
        put32(im, 0x803);
        put32(im + 4, n);
        put32(im + 8, side);
        put32(im + 12, side);
        put32(lb, 0x801);
        put32(lb + 4, n);
        for (uint32_t i = 0; i < n + labels_extra; i++) lb[8 + i] = (uint8_t)(i % 10);
        for (size_t b = 0; b < (size_t)n * rows * side; b++) im[16 + b] = (uint8_t)(b * 3);
        size_t isz = 16 + (size_t)n * rows * side, lsz = 8 + n + (split ? 0 : labels_extra);
        if (split) {
            snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
            write_file(p, im, isz, 0);
            snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
            write_file(p, lb, lsz, 0);
        } else {
            snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
            gzFile f = gzopen(p, mode);
            CHECK(f && gzwrite(f, im, (unsigned)isz) == (int)isz && gzclose(f) == Z_OK);
            snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", dir);
            f = gzopen(p, mode);
            CHECK(f && gzwrite(f, lb, (unsigned)lsz) == (int)lsz && gzclose(f) == Z_OK);
        }
    }
    free(im);
    free(lb);
}

/* A gzip file written byte by byte: a header with an FEXTRA field of xlen bytes, the data as one
 * stored deflate block, the CRC-32 and length of `crc_of` (the data, or what it was before a
 * change). With 16384 bytes of data and xlen 8175 the data ends at byte 24576 of the file: zlib
 * reads 8192 bytes at a time into 16384 bytes of output, so a reader that stops at the data's
 * end never has the trailer checked. */
static void gz_stored(const char *path, const uint8_t *data, const uint8_t *crc_of, size_t n, size_t xlen) {
    size_t len = 12 + xlen + 5 + n + 8;
    uint8_t *g = calloc(len, 1), *q = g;
    CHECK(g && n <= 65535 && xlen <= 65535);
    memcpy(q, "\x1f\x8b\x08\x04\0\0\0\0\0\xff", 10); /* FEXTRA; no time; Unix */
    q += 10;
    *q++ = (uint8_t)xlen, *q++ = (uint8_t)(xlen >> 8);
    q += xlen; /* zlib skips the extra field's bytes */
    *q++ = 1;  /* the final block, stored */
    *q++ = (uint8_t)n, *q++ = (uint8_t)(n >> 8);
    *q++ = (uint8_t)~n, *q++ = (uint8_t)(~n >> 8);
    memcpy(q, data, n);
    q += n;
    uint32_t crc = (uint32_t)crc32(0, crc_of, (uInt)n);
    for (int i = 0; i < 4; i++) *q++ = (uint8_t)(crc >> 8 * i);
    for (int i = 0; i < 4; i++) *q++ = (uint8_t)(n >> 8 * i);
    write_file(path, g, len, 0);
    free(g);
}

/* the source index a sample came from: its file name / key is the zero-padded index */
static long src_index(const sv_dataset *d, size_t i) {
    char name[4096];
    sv_dataset_sample_name(d, i, name, sizeof name);
    const char *b = strrchr(name, '/');
    const char *c = strrchr(name, ':');
    b = c && c > b ? c : b;
    return strtol(b + 1, NULL, 10);
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n) {
    double se = 0;
    for (size_t i = 0; i < n; i++) se += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return se == 0 ? 99 : 10 * log10(255.0 * 255.0 / (se / n));
}

/* Labels compare by class NAME: an ImageFolder tree re-sorts classes by name, tar shards keep
 * the source order through classes.txt. */
static void check_import(const char *spec, const char *const *names, const uint8_t *labels, size_t n, int K,
                         const uint8_t *pix, int side, int ch, size_t rec, size_t pix_off, int planar) {
    sv_dataset *d;
    CHECK_OK(sv_dataset_open(spec, NULL, &d));
    CHECK(sv_dataset_len(d) == n);
    CHECK(sv_dataset_num_classes(d) == K);
    uint8_t *seen = calloc(n, 1);
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    uint8_t *buf = NULL, *ref = malloc((size_t)side * side * ch);
    size_t cap = 0, len;
    for (size_t i = 0; i < n; i++) {
        long s = src_index(d, i);
        CHECK(s >= 0 && (size_t)s < n && !seen[s]);
        seen[s] = 1;
        CHECK(strcmp(sv_dataset_class_name(d, sv_dataset_label(d, i)), names[labels[s]]) == 0);
        CHECK_OK(sv_dataset_read(d, i, &buf, &cap, &len));
        int w, h, comps;
        CHECK_OK(sv_jpeg_header(&jc, buf, len, &w, &h, &comps));
        CHECK(w == side && h == side && comps == ch); /* grayscale stays 1-channel */
        CHECK_OK(sv_jpeg_decode(&jc, buf, len, ch, 1, &w, &h));
        const uint8_t *src = pix + (size_t)s * rec + pix_off;
        for (int p = 0; p < side * side; p++)
            for (int c = 0; c < ch; c++) ref[p * ch + c] = planar ? src[c * side * side + p] : src[p * ch + c];
        CHECK(psnr(jc.pix, ref, (size_t)side * side * ch) > 30);
    }
    free(buf);
    free(ref);
    free(seen);
    sv_jpeg_ctx_free(&jc);
    sv_dataset_close(d);
}

int main(void) {
    char root[] = "/tmp/sv_test_prep_XXXXXX";
    CHECK(mkdtemp(root));
    char src[4200], out[4200], spec[4400];
    snprintf(src, sizeof src, "%s/src", root);
    CHECK(mkdir(src, 0755) == 0);

    /* IDX: 37 train + 13 test 6x6 images, smooth content so JPEG keeps a high PSNR */
    for (int split = 0; split < 2; split++) {
        uint32_t n = split ? 13 : 37, rows = 6, cols = 6;
        size_t isz = 16 + (size_t)n * rows * cols;
        uint8_t *im = malloc(isz), *lb = malloc(8 + n);
        put32(im, 0x803);
        put32(im + 4, n);
        put32(im + 8, rows);
        put32(im + 12, cols);
        put32(lb, 0x801);
        put32(lb + 4, n);
        for (uint32_t i = 0; i < n; i++) {
            lb[8 + i] = (uint8_t)((i * 7 + split) % 10);
            for (uint32_t p = 0; p < rows * cols; p++) im[16 + i * rows * cols + p] = (uint8_t)(40 + 5 * i + 3 * p);
        }
        char p[4400];
        snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte%s", src, split ? "t10k" : "train", split ? "" : ".gz");
        write_file(p, im, isz, !split); /* train gzipped, test plain */
        snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte%s", src, split ? "t10k" : "train", split ? "" : ".gz");
        write_file(p, lb, 8 + n, !split);
        for (int fmt = 0; fmt < 2; fmt++) {
            sv_prep_opts o = sv_prep_opts_default();
            snprintf(out, sizeof out, "%s/idx%d", root, fmt);
            o.src = src;
            o.out = out;
            o.format = fmt ? SV_PREP_TAR : SV_PREP_FOLDER;
            o.shard_size = 10;
            if (split == 1) { /* both splits exist now */
                CHECK_OK(sv_prep_idx(&o, 1));
                CHECK(o.n_train == 37 && o.n_test == 13);
            }
        }
        if (split == 1) {
            for (int fmt = 0; fmt < 2; fmt++) {
                if (fmt)
                    snprintf(spec, sizeof spec, "%s/idx1/test-{000000..000001}.tar", root);
                else
                    snprintf(spec, sizeof spec, "%s/idx0/test", root);
                check_import(spec, sv_fashion_mnist_classes, lb + 8, n, 10, im + 16, 6, 1, rows * cols, 0, 0);
            }
            /* Fashion-MNIST class names, sorted order on disk differs from label order */
            sv_dataset *d;
            snprintf(spec, sizeof spec, "%s/idx0/test", root);
            CHECK_OK(sv_dataset_open(spec, NULL, &d));
            int found = 0;
            for (int k = 0; k < 10; k++) found += strcmp(sv_dataset_class_name(d, k), "Ankle_boot") == 0;
            CHECK(found == 1);
            sv_dataset_close(d);
        }
        free(im);
        free(lb);
    }
    /* CIFAR-10: 5 train batches of 7 records + a test batch of 9; CIFAR-100 train 11, test 4 */
    for (int K = 10; K <= 100; K *= 10) {
        char csrc[4400];
        snprintf(csrc, sizeof csrc, "%s/cifar%d", root, K);
        CHECK(mkdir(csrc, 0755) == 0);
        size_t rec = (K == 10 ? 1 : 2) + 3072;
        size_t ntr = K == 10 ? 35 : 11, nte = K == 10 ? 9 : 4;
        for (int split = 0; split < 2; split++) {
            size_t n = split ? nte : ntr;
            uint8_t *all = malloc(n * rec), *labels = malloc(n);
            for (size_t i = 0; i < n; i++) {
                uint8_t *r = all + i * rec;
                labels[i] = (uint8_t)((i * 13 + (size_t)split * 5) % (size_t)K);
                if (K == 10)
                    r[0] = labels[i];
                else {
                    r[0] = (uint8_t)(labels[i] / 5);
                    r[1] = labels[i];
                }
                for (int c = 0; c < 3; c++)
                    for (int p = 0; p < 1024; p++)
                        r[rec - 3072 + (size_t)c * 1024 + (size_t)p] = (uint8_t)(30 + 60 * c + (p % 32) * 2 + i);
            }
            char p[4500];
            if (K == 10 && !split)
                for (int b = 0; b < 5; b++) {
                    snprintf(p, sizeof p, "%s/data_batch_%d.bin", csrc, b + 1);
                    write_file(p, all + (size_t)b * 7 * rec, 7 * rec, 0);
                }
            else {
                snprintf(p, sizeof p, "%s/%s", csrc, K == 10 ? "test_batch.bin" : split ? "test.bin" : "train.bin");
                write_file(p, all, n * rec, 0);
            }
            if (split) {
                for (int fmt = 0; fmt < 2; fmt++) {
                    sv_prep_opts o = sv_prep_opts_default();
                    snprintf(out, sizeof out, "%s/c%d_%d", root, K, fmt);
                    o.src = csrc;
                    o.out = out;
                    o.format = fmt ? SV_PREP_TAR : SV_PREP_FOLDER;
                    CHECK_OK(sv_prep_cifar(&o, K));
                    CHECK(o.n_train == ntr && o.n_test == nte);
                    /* the same import again: recognised by its marker, nothing written; other options
                     * are refused naming OUT (tests/data/prep_out.sh covers the CLI) */
                    o.n_train = o.n_test = 0;
                    CHECK_OK(sv_prep_cifar(&o, K));
                    CHECK(o.reused == 1 && o.n_train == ntr && o.n_test == nte);
                    o.quality = 80;
                    CHECK(sv_prep_cifar(&o, K) == SV_ERR_INVALID);
                    CHECK(strstr(sv_err_msg(), out) && strstr(sv_err_msg(), "quality 95"));
                    int done = 1;
                    CHECK(sv_prep_check_out(&o, K == 10 ? "cifar10" : "cifar100", &done) == SV_ERR_INVALID);
                    o.quality = 95;
                    CHECK_OK(sv_prep_check_out(&o, K == 10 ? "cifar10" : "cifar100", &done));
                    CHECK(done == 1);
                    if (fmt)
                        snprintf(spec, sizeof spec, "%s/test-000000.tar", out);
                    else
                        snprintf(spec, sizeof spec, "%s/test", out);
                    /* folder classes are only those listed on disk: all K exist as dirs */
                    check_import(spec, K == 10 ? sv_cifar10_classes : sv_cifar100_classes, labels, n, K, all, 32, 3,
                                 rec, rec - 3072, 1);
                }
            }
            free(all);
            free(labels);
        }
    }
    /* CIFAR-10 name lists laid out as the release's batches.meta.txt: the 10 names, each with its
     * '\n', then one '\n' more (61 bytes); the empty lines at the end are no names, one between
     * names is an error; another count than 10 (a header line) would shift every name */
    {
        static const char *const lists[4][2] = {
            {"", "\n"},              /* the release's layout: imported with these names */
            {"", "\r\n\n\r\n"},      /* more empty lines at the end, CR LF: the same */
            {"label_names\n", "\n"}, /* a header line: 11 names */
            {"", "x\n\ny\n"},        /* an empty line between names: line 12 */
        };
        static const char *const shuffled[10] = {"truck", "ship", "horse", "frog",       "dog",
                                                 "deer",  "cat",  "bird",  "automobile", "airplane"};
        for (int c = 0; c < 4; c++) {
            char p[4500];
            snprintf(p, sizeof p, "%s/cifar10/batches.meta.txt", root);
            FILE *f = fopen(p, "w");
            CHECK(f != NULL);
            fputs(lists[c][0], f);
            for (int k = 0; k < 10; k++) fprintf(f, "%s%s", shuffled[k], c == 1 ? "\r\n" : "\n");
            fputs(lists[c][1], f);
            long size = ftell(f);
            CHECK(fclose(f) == 0);
            if (c == 0) CHECK(size == 61);
            sv_prep_opts o = sv_prep_opts_default();
            snprintf(out, sizeof out, "%s/c10_names%d", root, c);
            snprintf(p, sizeof p, "%s/cifar10", root);
            o.src = p;
            o.out = out;
            o.limit = 1;
            sv_status st = sv_prep_cifar(&o, 10);
            if (c < 2) {
                CHECK_OK(st);
                char **names = NULL;
                int n = 0;
                snprintf(p, sizeof p, "%s/classes.txt", out);
                CHECK_OK(sv_classes_read(p, &names, &n));
                CHECK(n == 10);
                for (int k = 0; k < n && k < 10; k++) CHECK(!strcmp(names[k], shuffled[k]));
                free(names);
            } else {
                CHECK(st == SV_ERR_FORMAT);
                CHECK(strstr(sv_err_msg(),
                             c == 2 ? "batches.meta.txt: 11 names, but CIFAR-10 has 10 classes"
                                    : "batches.meta.txt: line 12 is empty") != NULL);
            }
        }
        char p[4500];
        snprintf(p, sizeof p, "%s/cifar10/batches.meta.txt", root);
        CHECK(unlink(p) == 0);
    }
    /* IDX headers declaring 0 items: an error, not an empty split imported with success */
    {
        char esrc[4400], p[4500];
        snprintf(esrc, sizeof esrc, "%s/idx_empty", root);
        CHECK(mkdir(esrc, 0755) == 0);
        uint8_t ih[16], lh[8];
        put32(ih, 0x803), put32(ih + 4, 0), put32(ih + 8, 28), put32(ih + 12, 28);
        put32(lh, 0x801), put32(lh + 4, 0);
        for (int split = 0; split < 2; split++) {
            snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte", esrc, split ? "t10k" : "train");
            write_file(p, ih, sizeof ih, 0);
            snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte", esrc, split ? "t10k" : "train");
            write_file(p, lh, sizeof lh, 0);
        }
        sv_prep_opts o = sv_prep_opts_default();
        snprintf(out, sizeof out, "%s/idx_empty_out", root);
        o.src = esrc;
        o.out = out;
        CHECK(sv_prep_idx(&o, 1) == SV_ERR_FORMAT);
        CHECK(strstr(sv_err_msg(), "hold no image") != NULL);
    }
    /* a missing --out is free, a non-empty one is refused before anything is written */
    {
        sv_prep_opts o = sv_prep_opts_default();
        int done = 1;
        snprintf(out, sizeof out, "%s/fresh", root);
        o.out = out;
        CHECK_OK(sv_prep_check_out(&o, "synthetic", &done));
        CHECK(done == 0);
        o.out = src; /* holds the IDX files */
        CHECK(sv_prep_check_out(&o, "synthetic", &done) == SV_ERR_INVALID);
        CHECK(strstr(sv_err_msg(), "is not empty") && strstr(sv_err_msg(), src));
        o.per_class = 1;
        o.test_per_class = 1;
        o.width = o.height = 8;
        CHECK(sv_prep_synthetic(&o) == SV_ERR_INVALID);
    }
    /* a truncated IDX file is a clear error */
    {
        char p[4400];
        snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", src);
        CHECK(truncate(p, 100) == 0);
        sv_prep_opts o = sv_prep_opts_default();
        snprintf(out, sizeof out, "%s/idx_bad", root);
        o.src = src;
        o.out = out;
        CHECK(sv_prep_idx(&o, 0) == SV_ERR_CORRUPT);
        CHECK(strstr(sv_err_msg(), "t10k-images-idx3-ubyte") != NULL);
    }
    char cmd[4600];
    /* a gzip IDX file is read to its end, where zlib checks its CRC-32 and length: a changed
     * byte, a cut or changed trailer, or data past the declared records is an error naming the
     * file, also with --limit below the count, and the import leaves nothing behind */
    {
        struct {
            char level;
            uint32_t extra;
            int cut, flip; /* bytes cut from the end; byte from the end to flip bit 0 of */
            const char *want;
        } cases[] = {{'0', 0, 0, 9, "incorrect data check"},    {'6', 0, 8, 0, "unexpected end of file"},
                     {'6', 0, 0, 8, "incorrect data check"},    {'6', 0, 0, 4, "incorrect length check"},
                     {'6', 1, 0, 0, "data after the 9 labels"}, {'6', 0, 0, 0, NULL}};
        char gsrc[4400], p[4500];
        snprintf(gsrc, sizeof gsrc, "%s/idx_gz", root);
        CHECK(mkdir(gsrc, 0755) == 0);
        snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", gsrc);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            idx_source(gsrc, 9, 4, cases[c].level, cases[c].extra, 0);
            size_t len;
            uint8_t *b = load(p, &len);
            if (cases[c].flip) b[len - (size_t)cases[c].flip] ^= 1; /* stored: the last label, 8 -> 9 */
            write_file(p, b, len - (size_t)cases[c].cut, 0);
            free(b);
            for (uint64_t limit = 0; limit <= 3; limit += 3) {
                sv_prep_opts o = sv_prep_opts_default();
                snprintf(out, sizeof out, "%s/idx_gz_out%zu_%llu", root, c, (unsigned long long)limit);
                o.src = gsrc;
                o.out = out;
                o.limit = limit;
                sv_status st = sv_prep_idx(&o, 0);
                fprintf(stderr, "gzip case %zu, limit %llu: %s\n", c, (unsigned long long)limit,
                        st == SV_OK ? "imported" : sv_err_msg());
                if (!cases[c].want) {
                    CHECK_OK(st);
                    CHECK(o.n_train == (limit ? 3 : 9) && o.n_test == (limit ? 3 : 9));
                    snprintf(cmd, sizeof cmd, "rm -rf %s", out);
                    CHECK(system(cmd) == 0);
                    continue;
                }
                CHECK(st == SV_ERR_CORRUPT);
                CHECK(strstr(sv_err_msg(), p) && strstr(sv_err_msg(), cases[c].want));
                CHECK(access(out, F_OK) != 0); /* the failed import removed what it wrote */
            }
        }
    }
    /* after the gzip stream: another gzip member is read on (gzip's concatenated members), any
     * other bytes (text appended, zero padding) are an error naming the file and the count; zlib's
     * gzread took them for the file's end and said nothing */
    {
        char gsrc[4400], p[4500], part[4600];
        snprintf(gsrc, sizeof gsrc, "%s/idx_tail", root);
        CHECK(mkdir(gsrc, 0755) == 0);
        idx_source(gsrc, 9, 4, '6', 0, 0);
        snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", gsrc);
        size_t len;
        uint8_t *whole = load(p, &len), lb[17];
        put32(lb, 0x801);
        put32(lb + 4, 9);
        for (int i = 0; i < 9; i++) lb[8 + i] = (uint8_t)(i % 10);
        struct {
            const char *what;
            const char *want; /* NULL: imported */
        } cases[] = {{"two members", NULL},
                     {"text", "5 bytes after the end of its gzip stream"},
                     {"zeros", "512 bytes after the end of its gzip stream"}};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            FILE *f = fopen(p, "wb");
            CHECK(f != NULL);
            if (c == 0) { /* the labels as two gzip members, split inside the header */
                for (int m = 0; m < 2; m++) {
                    snprintf(part, sizeof part, "%s/part.gz", gsrc);
                    write_file(part, m ? lb + 6 : lb, m ? 11 : 6, 1);
                    size_t plen;
                    uint8_t *pb = load(part, &plen);
                    CHECK(fwrite(pb, 1, plen, f) == plen);
                    free(pb);
                    CHECK(unlink(part) == 0);
                }
            } else {
                uint8_t tail[512] = {0};
                if (c == 1) memcpy(tail, "junk\n", 5);
                CHECK(fwrite(whole, 1, len, f) == len && fwrite(tail, 1, c == 1 ? 5 : 512, f) == (c == 1 ? 5u : 512u));
            }
            CHECK(fclose(f) == 0);
            sv_prep_opts o = sv_prep_opts_default();
            snprintf(out, sizeof out, "%s/idx_tail_out%zu", root, c);
            o.src = gsrc;
            o.out = out;
            sv_status st = sv_prep_idx(&o, 0);
            fprintf(stderr, "gzip %s: %s\n", cases[c].what, st == SV_OK ? "imported" : sv_err_msg());
            if (!cases[c].want) {
                CHECK_OK(st);
                CHECK(o.n_train == 9 && o.n_test == 9);
                continue;
            }
            CHECK(st == SV_ERR_CORRUPT && strstr(sv_err_msg(), p) && strstr(sv_err_msg(), cases[c].want));
            CHECK(access(out, F_OK) != 0);
        }
        free(whole);
    }
    /* a changed label byte that the reads of the records never have checked (see gz_stored): its
     * CRC-32 mismatch is found past --limit, reading to the end */
    {
        char gsrc[4400], p[4500];
        snprintf(gsrc, sizeof gsrc, "%s/idx_crc", root);
        CHECK(mkdir(gsrc, 0755) == 0);
        idx_source(gsrc, 16376, 4, '6', 0, 0); /* 8 + 16376 = 16384 label bytes */
        uint8_t lb[16384], changed[16384];
        put32(lb, 0x801);
        put32(lb + 4, 16376);
        for (uint32_t i = 0; i < 16376; i++) lb[8 + i] = (uint8_t)(i % 10);
        memcpy(changed, lb, sizeof lb);
        changed[16383] ^= 1;
        snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", gsrc);
        for (int bad = 0; bad < 2; bad++) {
            gz_stored(p, bad ? changed : lb, lb, sizeof lb, 8175);
            sv_prep_opts o = sv_prep_opts_default();
            snprintf(out, sizeof out, "%s/idx_crc_out%d", root, bad);
            o.src = gsrc;
            o.out = out;
            o.limit = 3;
            o.format = SV_PREP_TAR;
            sv_status st = sv_prep_idx(&o, 0);
            fprintf(stderr, "stored gzip, %s: %s\n", bad ? "changed" : "intact",
                    st == SV_OK ? "imported" : sv_err_msg());
            if (!bad) {
                CHECK_OK(st);
                snprintf(cmd, sizeof cmd, "rm -rf %s", out);
                CHECK(system(cmd) == 0);
                continue;
            }
            CHECK(st == SV_ERR_CORRUPT && strstr(sv_err_msg(), p) && strstr(sv_err_msg(), "incorrect data check"));
            CHECK(access(out, F_OK) != 0);
        }
    }
    /* a plain IDX file must be exactly as long as its header says: images of more rows than the
     * header's would be cut at the wrong places */
    {
        char dsrc[4400], p[4500];
        snprintf(dsrc, sizeof dsrc, "%s/idx_dim", root);
        CHECK(mkdir(dsrc, 0755) == 0);
        idx_source(dsrc, 9, 4, '6', 0, 1);
        sv_prep_opts o = sv_prep_opts_default();
        snprintf(out, sizeof out, "%s/idx_dim_out", root);
        o.src = dsrc;
        o.out = out;
        CHECK(sv_prep_idx(&o, 0) == SV_ERR_CORRUPT);
        fprintf(stderr, "expected error: %s\n", sv_err_msg());
        snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte:", dsrc);
        CHECK(strstr(sv_err_msg(), p) && strstr(sv_err_msg(), "9 images of 4x4 (160 bytes") &&
              strstr(sv_err_msg(), "has 196 bytes"));
        CHECK(access(out, F_OK) != 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    return 0;
}
