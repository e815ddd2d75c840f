/* formats/safetensors: write -> read round trip (buffers and streamed callbacks, F32/BF16/F16/
 * F64/U8, scalar and empty tensors, metadata, 8-byte header padding, chunked conversion),
 * every malformed-file rejection with its message, writer argument errors, a simulated full
 * disk, lookup by name among thousands of tensors, and a mutation loop over a valid file image. */
#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/elementwise.h"
#include "core/fileio.h"
#include "fmt_util.h"
#include "formats/safetensors.h"

#define BIG_N 1200000 /* > 4 MiB of F32: the fill callback is called in several chunks */

static float big_val(uint64_t i) { return (float)((double)(i % 1000) * 0.25 - 7.0); }

static sv_status fill_cb(void *ctx, size_t index, uint64_t byte_off, void *buf, size_t n) {
    int *calls = ctx;
    (*calls)++;
    if (index == 2) { /* F16 head.bias: hand-encoded bit patterns */
        static const uint16_t h[7] = {0x3800, 0xC000, 0x7BFF, 0x0400, 0x0001, 0x7C00, 0x8000};
        CHECK(byte_off + n <= sizeof h);
        memcpy(buf, (const uint8_t *)h + byte_off, n);
        return SV_OK;
    }
    CHECK(index == 5 && byte_off % 4 == 0 && n % 4 == 0);
    float *f = buf;
    for (size_t k = 0; k < n / 4; k++) f[k] = big_val(byte_off / 4 + k);
    return SV_OK;
}

static void write_raw(const char *path, const char *header, uint64_t hlen_override, size_t data_len) {
    FILE *fp = fopen(path, "wb");
    CHECK(fp);
    uint64_t n = hlen_override ? hlen_override : strlen(header);
    uint8_t lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (uint8_t)(n >> (8 * i));
    CHECK(fwrite(lb, 1, 8, fp) == 8);
    CHECK(fwrite(header, 1, strlen(header), fp) == strlen(header));
    for (size_t i = 0; i < data_len; i++) fputc((int)(i & 0xff), fp);
    fclose(fp);
}

#define BAD(dir, header, hlen, data_len, code, ...) \
    do { \
        char bp_[600]; \
        snprintf(bp_, sizeof bp_, "%s/bad.safetensors", dir); \
        write_raw(bp_, header, hlen, data_len); \
        sv_st_file bf_; \
        CHECK_FAILS(sv_safetensors_open(&bf_, bp_), code, "bad.safetensors", __VA_ARGS__); \
        CHECK(bf_.fd == -1 && bf_.tensors == NULL); \
    } while (0)

static void test_roundtrip(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    float w[12], cls_f[2] = {0.15625f, -3.5f}; /* bf16-representable */
    for (int i = 0; i < 12; i++) w[i] = (float)i * 0.5f - 1.0f;
    uint16_t cls[2] = {sv_f32_to_bf16(cls_f[0]), sv_f32_to_bf16(cls_f[1])};
    double scalar = 3.141592653589793;
    uint8_t u8[5] = {1, 2, 3, 250, 255};
    int64_t s_w[2] = {3, 4}, s_cls[3] = {1, 1, 2}, s_hb[1] = {7}, s_empty[2] = {0, 5}, s_u8[1] = {5},
            s_big[2] = {BIG_N / 4, 4};
    sv_st_entry e[] = {
        {"blocks.0.attn.qkv.weight", SV_ST_F32, 2, s_w, w},
        {"cls_token", SV_ST_BF16, 3, s_cls, cls},
        {"head.bias", SV_ST_F16, 1, s_hb, NULL},
        {"scale", SV_ST_F64, 0, NULL, &scalar},
        {"empty", SV_ST_F32, 2, s_empty, w},
        {"big", SV_ST_F32, 2, s_big, NULL},
        {"mask", SV_ST_U8, 1, s_u8, u8},
    };
    const char *meta[] = {"format", "pt", "note", "a \"quoted\" value \xc3\xa9"};
    int calls = 0;
    CHECK_OK(sv_safetensors_write(path, e, 7, meta, 2, fill_cb, &calls));
    CHECK(calls >= 3); /* head.bias once, big in >= 2 chunks */

    sv_st_file f;
    CHECK_OK(sv_safetensors_open(&f, path));
    CHECK(f.n_tensors == 7 && f.n_meta == 2);
    CHECK((f.data_start - 8) % 8 == 0); /* header padded to a multiple of 8 */
    uint64_t expect_off = f.data_start;
    for (int i = 0; i < 7; i++) {
        const sv_st_tensor *t = &f.tensors[i];
        CHECK(!strcmp(t->name, e[i].name) && t->dtype == e[i].dtype && t->ndim == e[i].ndim);
        for (int d = 0; d < t->ndim; d++) CHECK(t->shape[d] == e[i].shape[d]);
        CHECK(t->offset == expect_off); /* packed in the order given */
        expect_off += t->nbytes;
    }
    CHECK(expect_off == f.file_size);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == f.file_size);
    CHECK(!strcmp(sv_safetensors_meta(&f, "format"), "pt"));
    CHECK(!strcmp(sv_safetensors_meta(&f, "note"), meta[3]));
    CHECK(sv_safetensors_meta(&f, "nope") == NULL);
    CHECK(sv_safetensors_find(&f, "nope") == NULL);

    float out[16];
    const sv_st_tensor *t = sv_safetensors_find(&f, "blocks.0.attn.qkv.weight");
    CHECK(t && t->numel == 12 && t->nbytes == 48);
    CHECK_OK(sv_safetensors_read_f32(&f, t, 0, 12, out));
    CHECK(!memcmp(out, w, sizeof w));
    CHECK_OK(sv_safetensors_read_f32(&f, t, 5, 3, out)); /* partial element range */
    CHECK(out[0] == w[5] && out[2] == w[7]);
    CHECK_OK(sv_safetensors_read_raw(&f, t, 4, 8, out));
    CHECK(out[0] == w[1] && out[1] == w[2]);
    CHECK_FAILS(sv_safetensors_read_raw(&f, t, 44, 8, out), SV_ERR_INVALID, "outside tensor");
    CHECK_FAILS(sv_safetensors_read_f32(&f, t, 10, 3, out), SV_ERR_INVALID, "outside tensor");
    t = sv_safetensors_find(&f, "cls_token");
    CHECK_OK(sv_safetensors_read_f32(&f, t, 0, 2, out));
    CHECK(out[0] == cls_f[0] && out[1] == cls_f[1]);
    t = sv_safetensors_find(&f, "head.bias");
    CHECK_OK(sv_safetensors_read_f32(&f, t, 0, 7, out));
    CHECK(out[0] == 0.5f && out[1] == -2.0f && out[2] == 65504.0f);
    CHECK(out[3] == 0x1p-14f && out[4] == 0x1p-24f && isinf(out[5]) && out[5] > 0);
    CHECK(out[6] == 0 && signbit(out[6]));
    t = sv_safetensors_find(&f, "scale");
    CHECK(t->ndim == 0 && t->numel == 1 && t->nbytes == 8);
    double sc;
    CHECK_OK(sv_safetensors_read_raw(&f, t, 0, 8, &sc));
    CHECK(sc == scalar);
    CHECK_FAILS(sv_safetensors_read_f32(&f, t, 0, 1, out), SV_ERR_UNSUPPORTED, "F64");
    t = sv_safetensors_find(&f, "empty");
    CHECK(t->numel == 0 && t->nbytes == 0);
    t = sv_safetensors_find(&f, "mask");
    uint8_t m8[5];
    CHECK_OK(sv_safetensors_read_raw(&f, t, 0, 5, m8));
    CHECK(!memcmp(m8, u8, 5));
    t = sv_safetensors_find(&f, "big");
    float *big = malloc(sizeof(float) * BIG_N);
    CHECK(big);
    CHECK_OK(sv_safetensors_read_f32(&f, t, 0, BIG_N, big));
    for (uint64_t i = 0; i < BIG_N; i++) CHECK(big[i] == big_val(i));
    free(big);
    sv_safetensors_close(&f);
    sv_safetensors_close(&f); /* idempotent */

    /* the same bytes validated from memory give the same table */
    char *img;
    size_t len;
    CHECK_OK(sv_fileio_read_small(path, 64 << 20, &img, &len));
    CHECK_OK(sv_safetensors_open_mem(&f, img, len, "image"));
    CHECK(f.n_tensors == 7 && f.tensors[6].offset + 5 == len);
    t = sv_safetensors_find(&f, "cls_token");
    CHECK_OK(sv_safetensors_read_f32(&f, t, 0, 2, out));
    CHECK(out[0] == cls_f[0]);
    sv_safetensors_close(&f);

    /* truncated copies of a valid file */
    char tp[600];
    snprintf(tp, sizeof tp, "%s/trunc.safetensors", dir);
    FILE *fp = fopen(tp, "wb");
    CHECK(fp && fwrite(img, 1, len - 3, fp) == len - 3);
    fclose(fp);
    CHECK_FAILS(sv_safetensors_open(&f, tp), SV_ERR_CORRUPT, "trunc.safetensors", "\"mask\"",
                "past the end of the file", "truncated");
    fp = fopen(tp, "wb");
    CHECK(fp && fwrite(img, 1, 100, fp) == 100);
    fclose(fp);
    CHECK_FAILS(sv_safetensors_open(&f, tp), SV_ERR_CORRUPT, "header length", "truncated");
    fp = fopen(tp, "wb");
    CHECK(fp && fwrite(img, 1, 5, fp) == 5);
    fclose(fp);
    CHECK_FAILS(sv_safetensors_open(&f, tp), SV_ERR_CORRUPT, "too short", "truncated");
    free(img);
}

static void test_malformed(const char *dir) {
    const char *ok1 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    BAD(dir, ok1, 1, 16, SV_ERR_FORMAT, "header length 1 is too small");
    BAD(dir, ok1, (uint64_t)1 << 40, 16, SV_ERR_FORMAT, "header length 1099511627776", "exceeds the limit");
    BAD(dir, ok1, 5000, 16, SV_ERR_CORRUPT, "header length 5000 exceeds", "truncated");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",}}", 0, 0, SV_ERR_FORMAT, "JSON error at byte 20");
    BAD(dir, "[1,2]", 0, 0, SV_ERR_FORMAT, "top level is not a JSON object");
    BAD(dir, "{\"a\":{\"dtype\":\"F33\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "unknown dtype \"F33\"");
    BAD(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 0, 12, SV_ERR_FORMAT, "\"w\"",
        "shape/size mismatch", "16 bytes", "span 12 bytes");
    BAD(dir,
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
        0, 24, SV_ERR_FORMAT, "\"b\"", "overlap the previous tensor \"a\"");
    BAD(dir,
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[20,36]}}",
        0, 36, SV_ERR_FORMAT, "\"b\"", "hole of 4 bytes");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[4,20]}}", 0, 20, SV_ERR_FORMAT, "\"a\"",
        "hole of 4 bytes");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[100],\"data_offsets\":[0,400]}}", 0, 16, SV_ERR_CORRUPT, "\"a\"",
        "[0, 400]", "past the end of the file");
    BAD(dir, ok1, 0, 20, SV_ERR_FORMAT, "4 bytes after the last tensor \"a\"", "not covered");
    BAD(dir,
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}",
        0, 32, SV_ERR_FORMAT, "duplicate key \"a\"");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "non-negative integers");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4.5],\"data_offsets\":[0,16]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "non-negative integers");
    /* integral values written with a fraction or an exponent: refused, as the reference reader does */
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4.0],\"data_offsets\":[0,16]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "non-negative integers");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,1.6e1]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "non-negative integers");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "begin > end");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "[begin, end]");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", 0, 16, SV_ERR_FORMAT, "\"a\"",
        "\"shape\"");
    BAD(dir, "{\"a\":{\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 16, SV_ERR_FORMAT, "\"a\"", "\"dtype\"");
    BAD(dir, "{\"a\":[1]}", 0, 0, SV_ERR_FORMAT, "\"a\"", "not a JSON object");
    BAD(dir, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 0, 1, SV_ERR_FORMAT,
        "\"a\"", "9 dimensions");
    BAD(dir, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", 0, 16,
        SV_ERR_FORMAT, "\"a\"", "overflows");
    BAD(dir, "{\"__metadata__\":{\"k\":1},\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 16,
        SV_ERR_FORMAT, "__metadata__", "\"k\"", "expected a string");
    BAD(dir, "{}", 0, 8, SV_ERR_FORMAT, "8 data bytes but no tensors");
    /* valid corner cases: empty header object, header with trailing spaces */
    char p[600];
    sv_st_file f;
    snprintf(p, sizeof p, "%s/ok.safetensors", dir);
    write_raw(p, "{}      ", 0, 0);
    CHECK_OK(sv_safetensors_open(&f, p));
    CHECK(f.n_tensors == 0);
    sv_safetensors_close(&f);
    write_raw(p,
              "{\"z\":{\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":[0,0]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],\"extra\":1}}  ",
              0, 16);
    CHECK_OK(sv_safetensors_open(&f, p));
    CHECK(f.n_tensors == 2 && f.tensors[0].nbytes == 0);
    sv_safetensors_close(&f);
}

static void test_writer_errors(const char *dir) {
    char p[600];
    snprintf(p, sizeof p, "%s/w.safetensors", dir);
    float x[4] = {1, 2, 3, 4};
    int64_t s4[1] = {4}, sneg[1] = {-1};
    sv_st_entry dup[2] = {{"a", SV_ST_F32, 1, s4, x}, {"a", SV_ST_F32, 1, s4, x}};
    CHECK_FAILS(sv_safetensors_write(p, dup, 2, NULL, 0, NULL, NULL), SV_ERR_INVALID, "duplicate tensor name \"a\"");
    sv_st_entry neg = {"n", SV_ST_F32, 1, sneg, x};
    CHECK_FAILS(sv_safetensors_write(p, &neg, 1, NULL, 0, NULL, NULL), SV_ERR_INVALID, "\"n\"", "shape");
    sv_st_entry md = {"__metadata__", SV_ST_F32, 1, s4, x};
    CHECK_FAILS(sv_safetensors_write(p, &md, 1, NULL, 0, NULL, NULL), SV_ERR_INVALID, "invalid tensor name");
    sv_st_entry nodata = {"c", SV_ST_F32, 1, s4, NULL};
    CHECK_FAILS(sv_safetensors_write(p, &nodata, 1, NULL, 0, NULL, NULL), SV_ERR_INVALID,
                "no data and no fill callback");
    CHECK(access(p, F_OK) != 0);
    /* full disk: the existing file is untouched and no temp file remains */
    sv_st_entry one = {"a", SV_ST_F32, 1, s4, x};
    CHECK_OK(sv_safetensors_write(p, &one, 1, NULL, 0, NULL, NULL));
    sv_st_entry two[2] = {{"a", SV_ST_F32, 1, s4, x}, {"b", SV_ST_F32, 1, s4, x}};
    sv_fileio_inject_write_fault(100);
    CHECK_FAILS(sv_safetensors_write(p, two, 2, NULL, 0, NULL, NULL), SV_ERR_IO, "No space left on device");
    sv_fileio_inject_write_fault(-1);
    DIR *d = opendir(dir); /* no temporary of w.safetensors (w.safetensors.tmp-*) remains */
    CHECK(d);
    for (struct dirent *e; (e = readdir(d));) CHECK(strncmp(e->d_name, "w.safetensors.tmp", 17));
    closedir(d);
    sv_st_file f;
    CHECK_OK(sv_safetensors_open(&f, p));
    CHECK(f.n_tensors == 1);
    sv_safetensors_close(&f);
}

/* Lookup by name (a binary search over the names sorted once at open): every one of 5000
 * tensors, listed in scrambled order with names that are prefixes of each other, is found as
 * itself; names that are not there (a prefix, an extension, around the ends of the order) are not. */
static void test_lookup(const char *dir) {
    enum { N = 5000 };
    size_t cap = (size_t)N * 96 + 64, len = 0;
    char *h = malloc(cap);
    CHECK(h);
    len += (size_t)snprintf(h + len, cap - len, "{");
    for (int i = 0; i < N; i++) {
        int k = (int)(((uint64_t)i * 2971u) % N); /* 2971 is prime to 5000: a permutation */
        char name[48];
        if (k % 3 == 0)
            snprintf(name, sizeof name, "blocks.%d", k);
        else if (k % 3 == 1)
            snprintf(name, sizeof name, "blocks.%d.norm1.weight", k);
        else
            snprintf(name, sizeof name, "b%d", k);
        len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}",
                                i ? "," : "", name);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    CHECK(len < cap);
    char p[600];
    snprintf(p, sizeof p, "%s/many.safetensors", dir);
    write_raw(p, h, 0, 0);
    free(h);
    sv_st_file f;
    CHECK_OK(sv_safetensors_open(&f, p));
    CHECK(f.n_tensors == N);
    for (size_t i = 0; i < f.n_tensors; i++) CHECK(sv_safetensors_find(&f, f.tensors[i].name) == &f.tensors[i]);
    static const char *const absent[] = {"",
                                         "b",
                                         "blocks",
                                         "blocks.",
                                         "blocks.1",
                                         "blocks.0.norm1",
                                         "b4999",
                                         "blocks.4998.norm1.weightx",
                                         "a",
                                         "zzz",
                                         "blocks.1.norm1.weight "};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) CHECK(sv_safetensors_find(&f, absent[i]) == NULL);
    CHECK(sv_safetensors_find(&f, "blocks.0") && sv_safetensors_find(&f, "blocks.4998") &&
          sv_safetensors_find(&f, "b4997") && sv_safetensors_find(&f, "blocks.4999.norm1.weight"));
    sv_safetensors_close(&f);
    CHECK(sv_safetensors_find(&f, "blocks.0") == NULL); /* closed: nothing */
}

/* Mutated images must either be rejected or yield a table whose every tensor reads in bounds. */
static void test_mutations(const char *dir) {
    char p[600];
    snprintf(p, sizeof p, "%s/fz.safetensors", dir);
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3}, s2[1] = {2};
    uint16_t h[2] = {0x3c00, 0x4000};
    sv_st_entry e[3] = {{"w", SV_ST_F32, 2, s23, x}, {"b", SV_ST_BF16, 1, s2, h}, {"h", SV_ST_F16, 1, s2, h}};
    const char *meta[] = {"k", "v"};
    CHECK_OK(sv_safetensors_write(p, e, 3, meta, 1, NULL, NULL));
    char *img;
    size_t len;
    CHECK_OK(sv_fileio_read_small(p, 1 << 20, &img, &len));
    uint8_t *buf = malloc(len + 64);
    CHECK(buf);
    uint64_t rs = 99;
    int accepted = 0;
    for (int it = 0; it < 20000; it++) {
        size_t n = len;
        memcpy(buf, img, len);
        int edits = 1 + (int)(fmt_rand(&rs) % 3);
        for (int k = 0; k < edits; k++) {
            uint64_t r = fmt_rand(&rs);
            size_t pos = (size_t)(r % n);
            if ((r >> 60) == 0)
                n = pos; /* truncate */
            else if ((r >> 58) & 1)
                buf[pos] = "0123456789[]{},:\" "[(r >> 32) % 19];
            else
                buf[pos] ^= (uint8_t)(1u << ((r >> 40) & 7));
            if (!n) break;
        }
        sv_st_file f;
        if (sv_safetensors_open_mem(&f, buf, n, "fuzz") != SV_OK) continue;
        accepted++;
        for (size_t t = 0; t < f.n_tensors; t++) {
            const sv_st_tensor *tt = &f.tensors[t];
            CHECK(tt->offset >= f.data_start && tt->offset + tt->nbytes <= n);
            uint8_t tmp[64];
            if (tt->nbytes <= sizeof tmp) CHECK_OK(sv_safetensors_read_raw(&f, tt, 0, tt->nbytes, tmp));
        }
        sv_safetensors_close(&f);
    }
    CHECK(accepted > 0);
    free(buf);
    free(img);
}

int main(void) {
    char dir[256];
    fmt_tmpdir(dir, sizeof dir, "safetensors");
    test_roundtrip(dir);
    test_malformed(dir);
    test_writer_errors(dir);
    test_lookup(dir);
    test_mutations(dir);
    fmt_rmdir(dir);
    printf("test_safetensors: ok\n");
    return 0;
}
