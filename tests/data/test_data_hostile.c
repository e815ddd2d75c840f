/* Hostile inputs to the data readers, with real files, FIFOs and symlinks on disk. Every case
 * that once hung runs under an alarm, so a regression fails (SIGALRM) instead of hanging.
 *   1. JPEG decode cost: valid progressive JPEGs with exactly SV_JPEG_MAX_SCANS scans decode
 *      through every path (loader transform, region decode, TurboJPEG whole-image decode); one
 *      more scan is refused by each, also with restart markers in the entropy data; a 704-scan
 *      image is refused quickly; ordinary baseline/progressive files are unaffected.
 *   2. ImageFolder symlink loops: a `self -> .` link, a mutual loop a/to_b -> ../b,
 *      b/to_a -> ../a, and three self links index each image exactly once; a link to a
 *      directory outside the class is still followed; a JPEG 40 directories deep is indexed (no
 *      depth limit); a FIFO and a dangling link named .jpg, a JPEG at a path over 4095 bytes and
 *      a directory at such a path (too long to scan), fail the open naming them (never opened),
 *      or with leave_out_unusable are left out and recorded; a FIFO or dangling link without an
 *      image name is ignored.
 *   3. A FIFO as a tar shard, as classes.txt beside a shard or as --classes-file: refused with a
 *      message naming it, no hang. A folder image replaced by a FIFO after the scan, or grown
 *      past the per-image size limit (sparse file), is a read error, not a hang or a huge
 *      allocation.
 *   4. prep: a FIFO as an IDX file (.gz or plain), as a CIFAR batch or as its class-name list is
 *      refused without blocking; an uncompressed IDX file shorter than its header claims is
 *      refused before anything is written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/fileio.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/prep.h"
#include "data/synth.h"
#include "data/transform.h"
#include "scan_jpeg.h"

static char root[256];

static void put_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(d, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static void pathf(char *buf, size_t cap, const char *fmt, const char *a) {
    int n = snprintf(buf, cap, fmt, root, a);
    CHECK(n > 0 && (size_t)n < cap);
}

static void expect_fail(sv_status s, const char *want1, const char *want2) {
    if (s == SV_OK || !strstr(sv_err_msg(), want1) || (want2 && !strstr(sv_err_msg(), want2))) {
        fprintf(stderr, "expected a failure mentioning '%s'%s%s, got %s: %s\n", want1, want2 ? " and " : "",
                want2 ? want2 : "", sv_status_str(s), sv_err_msg());
        exit(1);
    }
    printf("  refused as expected: %s\n", sv_err_msg());
    sv_err_clear();
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- 1. scan limit ---------------------------------------------------------------------- */

/* 0 when every decode path accepts the image, else the status of the first that refuses
 * (all three must agree). */
static sv_status decode_all(sv_jpeg_ctx *jc, const uint8_t *j, size_t len, int w, int h) {
    static float out[1 * 32 * 32];
    float mean[1] = {0.5f}, std[1] = {0.5f};
    sv_resample_scratch rs = {0};
    sv_image_xform x = {.train = 1,
                        .key = 3,
                        .img = 32,
                        .channels = 1,
                        .scale_min = 0.08,
                        .scale_max = 1,
                        .ratio_min = 0.75,
                        .ratio_max = 4.0 / 3,
                        .hflip = 0.5,
                        .crop_pct = 0.875,
                        .max_pixels = 1u << 26,
                        .mean = mean,
                        .std = std};
    sv_status a = sv_load_image(jc, &rs, j, len, &x, out);
    sv_resample_scratch_free(&rs);
    sv_jpeg_region r;
    sv_status b = sv_jpeg_decode_region(jc, j, len, 1, 1, 0, h / 2, w, h, &r);
    int dw, dh;
    sv_status c = sv_jpeg_decode(jc, j, len, 1, 1, &dw, &dh);
    if ((a == SV_OK) != (b == SV_OK) || (a == SV_OK) != (c == SV_OK)) {
        fprintf(stderr, "decode paths disagree: transform %d, region %d, whole %d (%s)\n", a, b, c, sv_err_msg());
        exit(1);
    }
    if (c == SV_OK) CHECK(dw == w && dh == h);
    return a != SV_OK ? a : SV_OK;
}

static void test_scan_limit(void) {
    printf("scan limit (%d)\n", SV_JPEG_MAX_SCANS);
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    const int W = 96, H = 80;
    for (int restart = 0; restart <= 1; restart++) {
        int counts[] = {1, 6, SV_JPEG_MAX_SCANS - 1, SV_JPEG_MAX_SCANS, SV_JPEG_MAX_SCANS + 1, 300, SCAN_JPEG_MAX};
        for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
            uint8_t *j;
            size_t len;
            CHECK(scan_jpeg_make(W, H, counts[i], restart, &j, &len) == 0);
            CHECK(scan_jpeg_count_sos(j, len) == counts[i]);
            sv_err_clear();
            sv_status s = decode_all(&jc, j, len, W, H);
            printf("  %3d scans%s: %s\n", counts[i], restart ? " (restart markers)" : "",
                   s == SV_OK ? "decoded" : sv_err_msg());
            if (counts[i] <= SV_JPEG_MAX_SCANS)
                CHECK_OK(s);
            else
                expect_fail(s, "more than 100 scans", NULL);
            /* the context is still good for an ordinary image afterwards */
            uint8_t *ok;
            size_t okl;
            CHECK(scan_jpeg_make(W, H, 10, 0, &ok, &okl) == 0);
            CHECK_OK(decode_all(&jc, ok, okl, W, H));
            free(ok);
            free(j);
        }
    }
    /* TurboJPEG's own progressive encoder and a colour baseline file are unaffected */
    uint8_t pix[64 * 48 * 3];
    sv_synth_render(1, 2, 0, 64, 48, 3, pix);
    for (int prog = 0; prog <= 1; prog++) {
        const uint8_t *e;
        size_t len;
        CHECK_OK(sv_jpeg_encode(&jc, pix, 64, 48, 3, 90, prog, &e, &len));
        uint8_t *copy = malloc(len);
        memcpy(copy, e, len);
        int w, h;
        CHECK_OK(sv_jpeg_decode(&jc, copy, len, 3, 1, &w, &h));
        sv_jpeg_region r;
        CHECK_OK(sv_jpeg_decode_region(&jc, copy, len, 3, 1, 0, 0, 64, 48, &r));
        free(copy);
    }
    /* the cost bound: a larger 704-scan image is refused within a fraction of its full decode */
    uint8_t *big;
    size_t bl;
    CHECK(scan_jpeg_make(1024, 1024, SCAN_JPEG_MAX, 0, &big, &bl) == 0);
    alarm(60);
    double t0 = now_s();
    sv_status s = decode_all(&jc, big, bl, 1024, 1024);
    double dt = now_s() - t0;
    alarm(0);
    printf("  1024x1024, %d scans, %zu bytes: refused by all three paths in %.3f s\n", SCAN_JPEG_MAX, bl, dt);
    expect_fail(s, "more than 100 scans", NULL);
    free(big);
    sv_jpeg_ctx_free(&jc);
}

/* ---- 2. ImageFolder symlinks and special files ------------------------------------------ */

static size_t count_in(const char *spec) {
    sv_dataset *d;
    CHECK_OK(sv_dataset_open(spec, NULL, &d));
    size_t n = sv_dataset_len(d);
    for (size_t i = 0; i < n; i++) {
        char name[4096];
        sv_dataset_sample_name(d, i, name, sizeof name);
        for (size_t k = 0; k < i; k++) { /* no path indexed twice */
            char other[4096];
            sv_dataset_sample_name(d, k, other, sizeof other);
            CHECK(strcmp(name, other) != 0);
        }
    }
    sv_dataset_close(d);
    return n;
}

static void mkdirf(const char *fmt, const char *a) {
    char p[1024];
    pathf(p, sizeof p, fmt, a);
    CHECK(mkdir(p, 0755) == 0);
}

static void jpeg_at(const char *fmt, const char *a, const uint8_t *j, size_t len) {
    char p[1024];
    pathf(p, sizeof p, fmt, a);
    put_file(p, j, len);
}

static void link_at(const char *target, const char *fmt, const char *a) {
    char p[1024];
    pathf(p, sizeof p, fmt, a);
    CHECK(symlink(target, p) == 0);
}

static void test_folder_links(void) {
    printf("ImageFolder links\n");
    uint8_t *j;
    size_t len;
    CHECK(scan_jpeg_make(16, 16, 1, 0, &j, &len) == 0);
    alarm(60); /* three self links used to recurse 3^32 times */
    /* self loop */
    mkdirf("%s/%s", "self");
    mkdirf("%s/%s", "self/c0");
    jpeg_at("%s/%s/0.jpg", "self/c0", j, len);
    jpeg_at("%s/%s/1.jpg", "self/c0", j, len);
    link_at(".", "%s/%s/self", "self/c0");
    char spec[1024];
    pathf(spec, sizeof spec, "%s/%s", "self");
    size_t n = count_in(spec);
    printf("  self -> . : %zu images (2 on disk)\n", n);
    CHECK(n == 2);
    /* three self links */
    link_at(".", "%s/%s/again", "self/c0");
    link_at("..", "%s/%s/up", "self/c0"); /* the class root: another class directory set */
    n = count_in(spec);
    printf("  self, again -> ., up -> .. : %zu images\n", n);
    CHECK(n == 2); /* up -> .. reaches the dataset root, whose c0 is the class itself: scanned once */
    /* mutual loop a/to_b -> ../b, b/to_a -> ../a inside one class */
    mkdirf("%s/%s", "mutual");
    mkdirf("%s/%s", "mutual/c0");
    mkdirf("%s/%s", "mutual/c0/a");
    mkdirf("%s/%s", "mutual/c0/b");
    jpeg_at("%s/%s/x.jpg", "mutual/c0/a", j, len);
    jpeg_at("%s/%s/y.jpg", "mutual/c0/b", j, len);
    jpeg_at("%s/%s/z.JPEG", "mutual/c0", j, len);
    link_at("../b", "%s/%s/to_b", "mutual/c0/a");
    link_at("../a", "%s/%s/to_a", "mutual/c0/b");
    pathf(spec, sizeof spec, "%s/%s", "mutual");
    n = count_in(spec);
    printf("  a/to_b -> ../b, b/to_a -> ../a : %zu images (3 on disk)\n", n);
    CHECK(n == 3);
    /* a link to a directory elsewhere is followed (and scanned once) */
    mkdirf("%s/%s", "elsewhere");
    jpeg_at("%s/%s/e1.jpg", "elsewhere", j, len);
    jpeg_at("%s/%s/e2.jpg", "elsewhere", j, len);
    char target[1024];
    pathf(target, sizeof target, "%s/%s", "elsewhere");
    link_at(target, "%s/%s/ext1", "mutual/c0");
    link_at(target, "%s/%s/ext2", "mutual/c0/a");
    n = count_in(spec);
    printf("  + two links to one outside directory of 2 images: %zu images\n", n);
    CHECK(n == 5);
    /* no depth limit (as os.walk): a JPEG 40 directories below the class is indexed */
    char p[8192];
    size_t at = (size_t)snprintf(p, sizeof p, "%s/mutual/c0", root);
    for (int k = 0; k < 40; k++) {
        at += (size_t)snprintf(p + at, sizeof p - at, "/d");
        CHECK(mkdir(p, 0755) == 0);
    }
    snprintf(p + at, sizeof p - at, "/deep.jpg");
    put_file(p, j, len);
    n = count_in(spec);
    printf("  + a JPEG 40 directories deep: %zu images\n", n);
    CHECK(n == 6);
    /* special files named .jpg fail the scan naming them (never opened), or are left out and
     * recorded (leave_out_unusable); other names are ignored */
    sv_dataset *d = NULL;
    sv_dataset_opts lo = sv_dataset_opts_default();
    lo.leave_out_unusable = 1;
    pathf(p, sizeof p, "%s/%s/README", "mutual/c0");
    CHECK(mkfifo(p, 0600) == 0);
    link_at("/nonexistent/dangling", "%s/%s/notes.txt", "mutual/c0");
    CHECK(count_in(spec) == 6);
    pathf(p, sizeof p, "%s/%s/fifo.jpg", "mutual/c0");
    CHECK(mkfifo(p, 0600) == 0);
    expect_fail(sv_dataset_open(spec, NULL, &d), "mutual/c0/fifo.jpg", "a FIFO");
    CHECK(unlink(p) == 0);
    link_at("/nonexistent/dangling", "%s/%s/dangling.jpg", "mutual/c0");
    expect_fail(sv_dataset_open(spec, NULL, &d), "mutual/c0/dangling.jpg", "dangling symbolic link");
    CHECK(mkfifo(p, 0600) == 0);
    pathf(p, sizeof p, "%s/%s/fifo2.jpeg", "elsewhere");
    CHECK(mkfifo(p, 0600) == 0);
    CHECK_OK(sv_dataset_open(spec, &lo, &d));
    printf("  + a FIFO and a dangling link named .jpg, a FIFO in the linked directory: %zu images, %zu left out\n",
           sv_dataset_len(d), sv_dataset_left_out(d));
    CHECK(sv_dataset_len(d) == 6 && sv_dataset_left_out(d) == 3);
    CHECK(strstr(sv_dataset_left_out_name(d, 0), "/mutual/c0/a/ext2/fifo2.jpeg") ||
          strstr(sv_dataset_left_out_name(d, 0), "/mutual/c0/ext1/fifo2.jpeg"));
    CHECK(strstr(sv_dataset_left_out_name(d, 1), "/mutual/c0/dangling.jpg"));
    CHECK(strstr(sv_dataset_left_out_name(d, 2), "/mutual/c0/fifo.jpg"));
    sv_dataset_close(d);
    /* a path too long to open (4096+ bytes): an image there, or a directory there, is named */
    mkdirf("%s/%s", "long");
    mkdirf("%s/%s", "long/c0");
    jpeg_at("%s/%s/ok.jpg", "long/c0", j, len);
    char seg[201];
    memset(seg, 's', 200), seg[200] = 0;
    at = (size_t)snprintf(p, sizeof p, "%s/long/c0", root);
    CHECK(chdir(p) == 0); /* mkdir relative, one component at a time: no path limit */
    while (at + 201 < 3900) {
        CHECK(mkdir(seg, 0755) == 0 && chdir(seg) == 0);
        at += 201;
    }
    seg[3900 - at - 1] = 0; /* the last directory ends the path at 3900 bytes */
    CHECK(mkdir(seg, 0755) == 0 && chdir(seg) == 0);
    at = 3900;
    size_t pad = 4096 - at - 1 + 10; /* root/.../NAME over 4095 bytes */
    char name[300];
    memset(name, 'n', pad - 4), memcpy(name + pad - 4, ".jpg", 5);
    FILE *f = fopen(name, "wb");
    CHECK(f && fwrite(j, 1, len, f) == len && fclose(f) == 0);
    CHECK(chdir("/") == 0);
    pathf(spec, sizeof spec, "%s/%s", "long");
    expect_fail(sv_dataset_open(spec, NULL, &d), "/nnnnnnnnnn", "nnn.jpg is an image whose path is longer than 4095");
    CHECK_OK(sv_dataset_open(spec, &lo, &d));
    printf("  a JPEG at a %zu-byte path: %zu images, %zu left out\n", at + 1 + strlen(name), sv_dataset_len(d),
           sv_dataset_left_out(d));
    CHECK(sv_dataset_len(d) == 1 && sv_dataset_left_out(d) == 1);
    CHECK(strlen(sv_dataset_left_out_name(d, 0)) >= 4096);
    sv_dataset_close(d);
    pathf(p, sizeof p, "rm -rf %s/%s", "long"); /* deeper than the path limit: rm walks with openat */
    CHECK(system(p) == 0);
    /* a directory whose own path is over 4095 bytes cannot be scanned: the scan fails naming it
     * (an image inside it would otherwise be left out silently), or leave_out records it */
    mkdirf("%s/%s", "longdir");
    mkdirf("%s/%s", "longdir/c0");
    jpeg_at("%s/%s/ok.jpg", "longdir/c0", j, len);
    memset(seg, 's', 200), seg[200] = 0;
    at = (size_t)snprintf(p, sizeof p, "%s/longdir/c0", root);
    CHECK(chdir(p) == 0);
    while (at + 201 < 3900) {
        CHECK(mkdir(seg, 0755) == 0 && chdir(seg) == 0);
        at += 201;
    }
    seg[3900 - at - 1] = 0;
    CHECK(mkdir(seg, 0755) == 0 && chdir(seg) == 0);
    at = 3900;
    memset(name, 'D', pad), name[pad] = 0; /* root/.../DDD over 4095 bytes: a directory */
    CHECK(mkdir(name, 0755) == 0 && chdir(name) == 0);
    f = fopen("inside.jpg", "wb");
    CHECK(f && fwrite(j, 1, len, f) == len && fclose(f) == 0);
    CHECK(chdir("/") == 0);
    pathf(spec, sizeof spec, "%s/%s", "longdir");
    expect_fail(sv_dataset_open(spec, NULL, &d), "/DDDDDDDDDD",
                "DDD is a directory whose path is longer than 4095 bytes: it cannot be scanned");
    CHECK_OK(sv_dataset_open(spec, &lo, &d));
    printf("  a directory at a %zu-byte path holding a JPEG: %zu images, %zu left out\n", at + 1 + pad,
           sv_dataset_len(d), sv_dataset_left_out(d));
    CHECK(sv_dataset_len(d) == 1 && sv_dataset_left_out(d) == 1);
    const char *lo_name = sv_dataset_left_out_name(d, 0);
    CHECK(strlen(lo_name) == at + 1 + pad && lo_name[strlen(lo_name) - 1] == 'D');
    sv_dataset_close(d);
    pathf(p, sizeof p, "rm -rf %s/%s", "longdir");
    CHECK(system(p) == 0);
    alarm(0);
    free(j);
}

/* ---- 3. FIFOs and oversized files among dataset inputs ---------------------------------- */

static void tar_member(FILE *f, const char *name, const void *d, size_t n) {
    uint8_t h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 124, 12, "%011zo", n);
    h[156] = '0';
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    unsigned s = 0;
    for (int i = 0; i < 512; i++) s += h[i];
    snprintf((char *)h + 148, 8, "%06o", s);
    static const uint8_t z[1024];
    CHECK(fwrite(h, 1, 512, f) == 512 && fwrite(d, 1, n, f) == n);
    CHECK(fwrite(z, 1, (512 - n % 512) % 512, f) == (512 - n % 512) % 512);
}

static void test_dataset_fifos(void) {
    printf("dataset inputs that are FIFOs or too large\n");
    uint8_t *j;
    size_t len;
    CHECK(scan_jpeg_make(16, 16, 1, 0, &j, &len) == 0);
    mkdirf("%s/%s", "tars");
    char p[1024], q[1024];
    pathf(p, sizeof p, "%s/%s/pipe.tar", "tars");
    CHECK(mkfifo(p, 0600) == 0);
    sv_dataset *d = NULL;
    alarm(30);
    expect_fail(sv_dataset_open(p, NULL, &d), "pipe.tar", "not a regular file");
    /* a good shard with a FIFO named classes.txt beside it, or given as the class file */
    pathf(p, sizeof p, "%s/%s/good.tar", "tars");
    FILE *f = fopen(p, "wb");
    CHECK(f);
    tar_member(f, "k0.jpg", j, len);
    tar_member(f, "k0.cls", "0", 1);
    static const uint8_t z[1024];
    CHECK(fwrite(z, 1, 1024, f) == 1024 && fclose(f) == 0);
    pathf(q, sizeof q, "%s/%s/classes.txt", "tars");
    CHECK(mkfifo(q, 0600) == 0);
    expect_fail(sv_dataset_open(p, NULL, &d), "classes.txt", "not a regular file");
    CHECK(unlink(q) == 0);
    CHECK_OK(sv_dataset_open(p, NULL, &d));
    sv_dataset_close(d);
    sv_dataset_opts o = sv_dataset_opts_default();
    pathf(q, sizeof q, "%s/%s/names.fifo", "tars");
    CHECK(mkfifo(q, 0600) == 0);
    o.classes_file = q;
    expect_fail(sv_dataset_open(p, &o, &d), "names.fifo", "not a regular file");
    /* a folder image that becomes a FIFO after the scan, then a sparse file over the limit */
    mkdirf("%s/%s", "swap");
    mkdirf("%s/%s", "swap/c0");
    jpeg_at("%s/%s/a.jpg", "swap/c0", j, len);
    pathf(q, sizeof q, "%s/%s", "swap");
    CHECK_OK(sv_dataset_open(q, NULL, &d));
    CHECK(sv_dataset_len(d) == 1);
    uint8_t *buf = NULL;
    size_t cap = 0, got;
    CHECK_OK(sv_dataset_read(d, 0, &buf, &cap, &got));
    CHECK(got == len);
    pathf(p, sizeof p, "%s/%s/a.jpg", "swap/c0");
    CHECK(unlink(p) == 0 && mkfifo(p, 0600) == 0);
    expect_fail(sv_dataset_read(d, 0, &buf, &cap, &got), "a.jpg", "not a regular file");
    CHECK(unlink(p) == 0);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)300 << 20) == 0 && close(fd) == 0);
    expect_fail(sv_dataset_read(d, 0, &buf, &cap, &got), "a.jpg", "limit");
    CHECK(cap < ((size_t)1 << 20)); /* nothing of that size was allocated */
    alarm(0);
    free(buf);
    sv_dataset_close(d);
    free(j);
}

/* ---- 4. prep inputs --------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = (uint8_t)v; }

static void test_prep_inputs(void) {
    printf("prep inputs\n");
    char src[1024], out[1024], p[1400];
    pathf(src, sizeof src, "%s/%s", "idx");
    pathf(out, sizeof out, "%s/%s", "idx_out");
    CHECK(mkdir(src, 0755) == 0);
    alarm(30);
    /* a FIFO where the .gz image file is looked for */
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", src);
    CHECK(mkfifo(p, 0600) == 0);
    sv_prep_opts o = sv_prep_opts_default();
    o.src = src;
    o.out = out;
    expect_fail(sv_prep_idx(&o, 1), "train-images-idx3-ubyte.gz", "not a regular file");
    CHECK(unlink(p) == 0);
    /* plain files: labels fine, images header claims 1000 images of 28x28 but holds 2 */
    uint8_t im[16 + 2 * 28 * 28] = {0}, lb[8 + 1000] = {0};
    put32(im, 0x803), put32(im + 4, 1000), put32(im + 8, 28), put32(im + 12, 28);
    put32(lb, 0x801), put32(lb + 4, 1000);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", src);
    put_file(p, im, sizeof im);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", src);
    put_file(p, lb, sizeof lb);
    expect_fail(sv_prep_idx(&o, 1), "train-images-idx3-ubyte", "header claims 1000 images");
    struct stat st;
    char train_dir[1400];
    snprintf(train_dir, sizeof train_dir, "%s/train", out);
    CHECK(stat(train_dir, &st) != 0); /* refused before any output */
    /* a FIFO as the plain label file */
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", src);
    CHECK(unlink(p) == 0 && mkfifo(p, 0600) == 0);
    expect_fail(sv_prep_idx(&o, 1), "train-labels-idx1-ubyte", "not a regular file");
    /* CIFAR: a FIFO as a batch file, then as the class-name list */
    pathf(src, sizeof src, "%s/%s", "cifar");
    CHECK(mkdir(src, 0755) == 0);
    pathf(out, sizeof out, "%s/%s", "cifar_out");
    static uint8_t rec[3073];
    for (int b = 1; b <= 5; b++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", src, b);
        if (b == 3)
            CHECK(mkfifo(p, 0600) == 0);
        else
            put_file(p, rec, sizeof rec);
    }
    snprintf(p, sizeof p, "%s/test_batch.bin", src);
    put_file(p, rec, sizeof rec);
    o = sv_prep_opts_default();
    o.src = src;
    o.out = out;
    expect_fail(sv_prep_cifar(&o, 10), "data_batch_3.bin", "not a regular file");
    snprintf(p, sizeof p, "%s/data_batch_3.bin", src);
    CHECK(unlink(p) == 0);
    put_file(p, rec, sizeof rec);
    snprintf(p, sizeof p, "%s/batches.meta.txt", src);
    CHECK(mkfifo(p, 0600) == 0);
    expect_fail(sv_prep_cifar(&o, 10), "batches.meta.txt", "not a regular file");
    CHECK(unlink(p) == 0);
    CHECK_OK(sv_prep_cifar(&o, 10)); /* and the set itself is fine */
    CHECK(o.n_train == 5 && o.n_test == 1);
    alarm(0);
}

/* Optional argument: run only the named part (scans, links, fifos, prep). */
int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    const char *base = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/sv_hostile_XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(root) != NULL);
    if (!only || !strcmp(only, "scans")) test_scan_limit();
    if (!only || !strcmp(only, "links")) test_folder_links();
    if (!only || !strcmp(only, "fifos")) test_dataset_fifos();
    if (!only || !strcmp(only, "prep")) test_prep_inputs();
    CHECK_OK(sv_fileio_remove_tree(root));
    printf("PASS\n");
    return 0;
}
