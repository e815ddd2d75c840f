#include "data/prep.h"

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
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/synth.h"

const char *const sv_fashion_mnist_classes[10] = {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle_boot"};
static const char *const mnist_classes[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
const char *const sv_cifar10_classes[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};
const char *const sv_cifar100_classes[100] = {
    "apple",      "aquarium_fish", "baby",         "bear",       "beaver",      "bed",         "bee",
    "beetle",     "bicycle",       "bottle",       "bowl",       "boy",         "bridge",      "bus",
    "butterfly",  "camel",         "can",          "castle",     "caterpillar", "cattle",      "chair",
    "chimpanzee", "clock",         "cloud",        "cockroach",  "couch",       "crab",        "crocodile",
    "cup",        "dinosaur",      "dolphin",      "elephant",   "flatfish",    "forest",      "fox",
    "girl",       "hamster",       "house",        "kangaroo",   "keyboard",    "lamp",        "lawn_mower",
    "leopard",    "lion",          "lizard",       "lobster",    "man",         "maple_tree",  "motorcycle",
    "mountain",   "mouse",         "mushroom",     "oak_tree",   "orange",      "orchid",      "otter",
    "palm_tree",  "pear",          "pickup_truck", "pine_tree",  "plain",       "plate",       "poppy",
    "porcupine",  "possum",        "rabbit",       "raccoon",    "ray",         "road",        "rocket",
    "rose",       "sea",           "seal",         "shark",      "shrew",       "skunk",       "skyscraper",
    "snail",      "snake",         "spider",       "squirrel",   "streetcar",   "sunflower",   "sweet_pepper",
    "table",      "tank",          "telephone",    "television", "tiger",       "tractor",     "train",
    "trout",      "tulip",         "turtle",       "wardrobe",   "whale",       "willow_tree", "wolf",
    "woman",      "worm"};

sv_prep_opts sv_prep_opts_default(void) {
    sv_prep_opts o;
    memset(&o, 0, sizeof o);
    o.quality = 95;
    o.shard_size = 10000;
    o.classes = 10;
    o.per_class = 100;
    o.test_per_class = 20;
    o.width = 500;
    o.height = 375;
    return o;
}

static sv_status mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return SV_FAIL(SV_ERR_IO, "mkdir %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return SV_FAIL(SV_ERR_IO, "mkdir %s: %s", buf, strerror(errno));
    return SV_OK;
}

/* ---- output sink: ImageFolder tree or WebDataset tar shards ----------------------------- */

typedef struct sink {
    const sv_prep_opts *o;
    const char *split;
    const char *const *names;
    int K;
    sv_jpeg_ctx jc;
    FILE *tar;
    int shard;
    uint64_t in_shard, count;
    int width; /* digits of the index */
} sink;

static sv_status sink_open(sink *s, const sv_prep_opts *o, const char *split, const char *const *names, int K,
                           uint64_t total) {
    memset(s, 0, sizeof *s);
    s->o = o;
    s->split = split;
    s->names = names;
    s->K = K;
    s->width = 5;
    for (uint64_t t = total; t >= 100000; t /= 10) s->width++;
    sv_jpeg_ctx_init(&s->jc);
    SV_TRY(mkdir_p(o->out));
    if (o->format == SV_PREP_FOLDER) {
        char p[4096];
        for (int k = 0; k < K; k++) {
            snprintf(p, sizeof p, "%s/%s/%s", o->out, split, names[k]);
            SV_TRY(mkdir_p(p));
        }
    }
    char cp[4096];
    snprintf(cp, sizeof cp, "%s/classes.txt", o->out);
    return sv_classes_write_names(cp, names, K);
}

static void tar_header(uint8_t h[512], const char *name, uint64_t size) {
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static sv_status tar_member(sink *s, const char *name, const void *data, size_t len) {
    uint8_t h[512];
    static const uint8_t zeros[512];
    tar_header(h, name, len);
    if (fwrite(h, 1, 512, s->tar) != 512 || fwrite(data, 1, len, s->tar) != len ||
        fwrite(zeros, 1, (512 - len % 512) % 512, s->tar) != (512 - len % 512) % 512)
        return SV_FAIL(SV_ERR_IO, "%s/%s-%06d.tar: write failed", s->o->out, s->split, s->shard);
    return SV_OK;
}

static sv_status tar_close(sink *s) {
    if (!s->tar) return SV_OK;
    static const uint8_t zeros[1024];
    int bad = fwrite(zeros, 1, 1024, s->tar) != 1024;
    bad |= fclose(s->tar) != 0;
    s->tar = NULL;
    if (bad) return SV_FAIL(SV_ERR_IO, "%s/%s-%06d.tar: write failed", s->o->out, s->split, s->shard);
    s->shard++;
    return SV_OK;
}

static sv_status sink_put(sink *s, const uint8_t *pix, int w, int h, int channels, int label) {
    if (label < 0 || label >= s->K)
        return SV_FAIL(SV_ERR_FORMAT, "%s sample %llu: label %d not in 0..%d", s->split, (unsigned long long)s->count,
                       label, s->K - 1);
    const uint8_t *jpg;
    size_t len;
    SV_TRY(sv_jpeg_encode(&s->jc, pix, w, h, channels, s->o->quality, 0, &jpg, &len));
    char p[4096];
    if (s->o->format == SV_PREP_FOLDER) {
        snprintf(p, sizeof p, "%s/%s/%s/%0*llu.jpg", s->o->out, s->split, s->names[label], s->width,
                 (unsigned long long)s->count);
        FILE *f = fopen(p, "wb");
        if (!f) return SV_FAIL(SV_ERR_IO, "%s: %s", p, strerror(errno));
        int bad = fwrite(jpg, 1, len, f) != len;
        bad |= fclose(f) != 0;
        if (bad) return SV_FAIL(SV_ERR_IO, "%s: write failed", p);
    } else {
        if (s->tar && s->in_shard >= (uint64_t)(s->o->shard_size > 0 ? s->o->shard_size : 10000)) SV_TRY(tar_close(s));
        if (!s->tar) {
            snprintf(p, sizeof p, "%s/%s-%06d.tar", s->o->out, s->split, s->shard);
            if (!(s->tar = fopen(p, "wb"))) return SV_FAIL(SV_ERR_IO, "%s: %s", p, strerror(errno));
            s->in_shard = 0;
        }
        char name[64], cls[16];
        snprintf(name, sizeof name, "%0*llu.jpg", s->width, (unsigned long long)s->count);
        SV_TRY(tar_member(s, name, jpg, len));
        int cl = snprintf(cls, sizeof cls, "%d", label);
        snprintf(name, sizeof name, "%0*llu.cls", s->width, (unsigned long long)s->count);
        SV_TRY(tar_member(s, name, cls, (size_t)cl));
        s->in_shard++;
    }
    s->count++;
    if (s->count % 10000 == 0) SV_INFO("prep %s: %llu images written", s->split, (unsigned long long)s->count);
    return SV_OK;
}

static sv_status sink_close(sink *s, sv_status st) {
    sv_status c = tar_close(s);
    sv_jpeg_ctx_free(&s->jc);
    return st != SV_OK ? st : c;
}

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

static sv_status gz_read(gzFile f, void *buf, size_t n, const char *path) {
    size_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int r = gzread(f, (uint8_t *)buf + got, chunk);
        if (r <= 0) return SV_FAIL(SV_ERR_CORRUPT, "%s: truncated (wanted %zu bytes, got %zu)", path, n, got);
        got += (size_t)r;
    }
    return SV_OK;
}

/* An uncompressed IDX file must hold what its header claims: header + n x rows x cols bytes
 * (cols == 0: a label file, 8-byte header + n bytes), computed with checked 64-bit arithmetic.
 * A gzip file's length is only known by decompressing it; its reads report truncation. */
static sv_status idx_check_sizes(const char *path, int plain, uint64_t size, uint32_t n, uint32_t rows, uint32_t cols) {
    uint64_t hdr = cols ? 16 : 8, body, need;
    if (!plain) return SV_OK;
    if (!sv_mul3_u64(n, rows, cols ? cols : 1, &body) || !sv_add_u64(hdr, body, &need))
        return SV_FAIL(SV_ERR_FORMAT, "%s: header claims %u x %u x %u bytes, more than 64 bits hold", path, n, rows,
                       cols);
    if (size < need)
        return SV_FAIL(SV_ERR_CORRUPT, "%s: header claims %u images (%llu bytes) but the file has %llu bytes", path, n,
                       (unsigned long long)need, (unsigned long long)size);
    return SV_OK;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static sv_status idx_split(sv_prep_opts *o, const char *src, const char *prefix, const char *split,
                           const char *const *names, uint64_t *count) {
    char ipath[4096], lpath[4096], base[128];
    gzFile fi = NULL, fl = NULL;
    uint8_t *img = NULL;
    sink s = {0};
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
    SV_TRY_GOTO(st, sink_open(&s, o, split, names, 10, take), done);
    for (uint64_t i = 0; i < take && st == SV_OK; i++) {
        uint8_t lab;
        SV_TRY_GOTO(st, gz_read(fi, img, (size_t)rows * cols, ipath), done);
        SV_TRY_GOTO(st, gz_read(fl, &lab, 1, lpath), done);
        st = sink_put(&s, img, (int)cols, (int)rows, 1, lab);
    }
    *count = s.count;
done:
    if (s.o) st = sink_close(&s, st);
    if (fi) gzclose(fi);
    if (fl) gzclose(fl);
    free(img);
    return st;
}

sv_status sv_prep_idx(sv_prep_opts *o, int fashion) {
    const char *src = o->src ? o->src : SV_FASHION_MNIST_DIR;
    const char *const *names = fashion ? sv_fashion_mnist_classes : mnist_classes;
    if (!o->out) return SV_FAIL(SV_ERR_INVALID, "prep: no output directory");
    SV_INFO("prep %s: %s -> %s (%s)", fashion ? "fashion-mnist" : "mnist", src, o->out,
            o->format == SV_PREP_TAR ? "tar shards" : "image folders");
    SV_TRY(idx_split(o, src, "train", "train", names, &o->n_train));
    SV_TRY(idx_split(o, src, "t10k", "test", names, &o->n_test));
    SV_INFO("prep: wrote %llu train + %llu test images", (unsigned long long)o->n_train, (unsigned long long)o->n_test);
    return SV_OK;
}

/* ---- CIFAR ------------------------------------------------------------------------------ */

static sv_status cifar_file(sv_prep_opts *o, sink *s, const char *path, int fine, uint64_t *left) {
    int fd;
    SV_TRY(sv_fileio_open_read(path, &fd, NULL)); /* guarded: a FIFO or device is refused */
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return SV_FAIL(SV_ERR_IO, "CIFAR batch %s: %s", path, strerror(errno));
    }
    size_t rec = (size_t)(fine ? 2 : 1) + 3072;
    uint8_t buf[3074], pix[3072];
    sv_status st = SV_OK;
    size_t got;
    while (*left > 0 && (got = fread(buf, 1, rec, f)) > 0) {
        if (got != rec) {
            st = SV_FAIL(SV_ERR_CORRUPT, "%s: truncated record (%zu of %zu bytes)", path, got, rec);
            break;
        }
        const uint8_t *planes = buf + (fine ? 2 : 1);
        for (int p = 0; p < 1024; p++) /* planar RGB -> interleaved */
            for (int c = 0; c < 3; c++) pix[3 * p + c] = planes[c * 1024 + p];
        if ((st = sink_put(s, pix, 32, 32, 3, fine ? buf[1] : buf[0])) != SV_OK) break;
        (*left)--;
    }
    fclose(f);
    (void)o;
    return st;
}

/* Names from a text list in src if present (one per line), else the standard list. */
static sv_status cifar_names(const char *src, int K, char ***owned, const char *const **names) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", src, K == 10 ? "batches.meta.txt" : "fine_label_names.txt");
    *owned = NULL;
    *names = K == 10 ? sv_cifar10_classes : sv_cifar100_classes;
    if (access(p, F_OK) != 0) return SV_OK; /* no list: the standard names (sv_classes_read is guarded) */
    int n;
    SV_TRY(sv_classes_read(p, owned, &n));
    if (n < K) {
        free(*owned);
        *owned = NULL;
        return SV_FAIL(SV_ERR_FORMAT, "%s: %d names, need %d", p, n, K);
    }
    /* the names become directory names under OUT: each must be one plain path component */
    for (int k = 0; k < K; k++) {
        const char *nm = (*owned)[k];
        if (strchr(nm, '/') || !strcmp(nm, ".") || !strcmp(nm, "..")) {
            sv_status st =
                SV_FAIL(SV_ERR_FORMAT, "%s: line %d: class name '%s' is not a plain directory name", p, k + 1, nm);
            free(*owned);
            *owned = NULL;
            return st;
        }
    }
    *names = (const char *const *)*owned;
    return SV_OK;
}

sv_status sv_prep_cifar(sv_prep_opts *o, int classes) {
    if (classes != 10 && classes != 100)
        return SV_FAIL(SV_ERR_INVALID, "prep cifar: classes %d not 10 or 100", classes);
    if (!o->src || !o->out) return SV_FAIL(SV_ERR_INVALID, "prep cifar%d: --src and --out are required", classes);
    char **owned;
    const char *const *names;
    SV_TRY(cifar_names(o->src, classes, &owned, &names));
    sv_status st = SV_OK;
    for (int split = 0; split < 2 && st == SV_OK; split++) {
        sink s;
        uint64_t left = o->limit ? o->limit : UINT64_MAX;
        if ((st = sink_open(&s, o, split ? "test" : "train", names, classes, 60000)) != SV_OK) break;
        char p[4096];
        if (classes == 10 && !split) {
            for (int b = 1; b <= 5 && st == SV_OK; b++) {
                snprintf(p, sizeof p, "%s/data_batch_%d.bin", o->src, b);
                st = cifar_file(o, &s, p, 0, &left);
            }
        } else {
            snprintf(p, sizeof p, "%s/%s", o->src, classes == 10 ? "test_batch.bin" : split ? "test.bin" : "train.bin");
            st = cifar_file(o, &s, p, classes == 100, &left);
        }
        *(split ? &o->n_test : &o->n_train) = s.count;
        st = sink_close(&s, st);
    }
    free(owned);
    if (st == SV_OK)
        SV_INFO("prep cifar%d: wrote %llu train + %llu test images", classes, (unsigned long long)o->n_train,
                (unsigned long long)o->n_test);
    return st;
}

/* ---- synthetic -------------------------------------------------------------------------- */

sv_status sv_prep_synthetic(sv_prep_opts *o) {
    if (!o->out) return SV_FAIL(SV_ERR_INVALID, "prep synthetic: no output directory");
    if (o->classes < 1 || o->classes > 100000 || o->per_class < 0 || o->test_per_class < 0 || o->width < 8 ||
        o->height < 8 || o->width > 8192 || o->height > 8192)
        return SV_FAIL(SV_ERR_INVALID, "prep synthetic: classes %d, per-class %d/%d, size %dx%d out of range",
                       o->classes, o->per_class, o->test_per_class, o->width, o->height);
    int K = o->classes;
    char **names = malloc((size_t)K * (sizeof(char *) + 24)); /* 24: room for any int, no truncation */
    uint8_t *pix = malloc((size_t)o->width * (size_t)o->height * 3);
    if (!names || !pix) {
        free(names);
        free(pix);
        return SV_FAIL(SV_ERR_OOM, "prep synthetic");
    }
    char *store = (char *)(names + K);
    for (int k = 0; k < K; k++) {
        names[k] = store + 24 * k;
        snprintf(names[k], 24, "class_%03d", k);
    }
    sv_status st = SV_OK;
    for (int split = 0; split < 2 && st == SV_OK; split++) {
        int per = split ? o->test_per_class : o->per_class;
        sink s;
        uint64_t total = (uint64_t)K * (uint64_t)per;
        if ((st = sink_open(&s, o, split ? "test" : "train", (const char *const *)names, K, total)) != SV_OK) break;
        /* test samples use indices after all train ones, so they are new images */
        uint64_t base = split ? (uint64_t)K * (uint64_t)o->per_class : 0;
        for (uint64_t i = 0; i < total && st == SV_OK; i++) {
            int label = (int)(i % (uint64_t)K);
            sv_synth_render(o->seed, base + i, label, o->width, o->height, 3, pix);
            st = sink_put(&s, pix, o->width, o->height, 3, label);
        }
        *(split ? &o->n_test : &o->n_train) = s.count;
        st = sink_close(&s, st);
    }
    free(names);
    free(pix);
    if (st == SV_OK)
        SV_INFO("prep synthetic: wrote %llu train + %llu test images of %dx%d", (unsigned long long)o->n_train,
                (unsigned long long)o->n_test, o->width, o->height);
    return st;
}
