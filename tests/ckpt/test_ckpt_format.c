/* Checkpoint format without MPI: shard files written for a 3-rank layout through
 * sv_ckpt_write_shard, index.json round trip, range reads across shard boundaries, offline
 * reshard 3 -> 2 -> 3 (byte-identical files), CRC detection of a flipped byte, the bicubic
 * pos_embed resampling against an independent double-precision implementation, the weight-EMA
 * range (index "model_ema": 16 bytes per element, read back, resharded 3 -> 2 -> 3 byte-identical,
 * a malformed model_ema refused), the training data set's identity (index "train_data": read back,
 * carried over by reshard, hostile values refused), the escaping of
 * file-provided names for messages (core/log.h sv_log_esc), and the output rules of
 * ckpt/ckpt_out.h (inside-the-checkpoint, non-regular targets, fresh temporaries). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "check.h"
#include "formats/fmt_util.h"
#include "core/fileio.h"
#include "core/log.h"
#include "ckpt/checkpoint.h"
#include "model/resample.h"
#include "ckpt/ckpt_out.h"

/* A value every (tensor, element, kind) can be recomputed from. */
static float value(int t, uint64_t i, int kind) { return (float)(t * 1000003 + (int)i) * 0.5f + (float)kind * 0.25f; }

static sv_status src(void *ctx, int u, int kind, int t, uint64_t b, uint64_t so, uint64_t n, float *dst) {
    (void)ctx, (void)u, (void)so;
    for (uint64_t i = 0; i < n; i++) dst[i] = value(t, b + i, kind);
    return SV_OK;
}

/* src with one non-finite value: element 5 of tensor g_bad_t, kind g_bad_kind, is g_bad_value */
static int g_bad_t, g_bad_kind;
static float g_bad_value;
static sv_status src_bad(void *ctx, int u, int kind, int t, uint64_t b, uint64_t so, uint64_t n, float *dst) {
    SV_TRY(src(ctx, u, kind, t, b, so, n, dst));
    if (t == g_bad_t && kind == g_bad_kind && b <= 5 && 5 < b + n) dst[5 - b] = g_bad_value;
    return SV_OK;
}

/* A checkpoint holding a NaN or Inf (its CRCs right: a run that saved diverged values, or another
 * tool) is refused by every read of the range that holds it, naming the tensor, the kind, the
 * element and the value; reshard refuses it and leaves no output. */
static void test_nonfinite(const char *root, const sv_layout *L, const sv_ckpt_train_state *st0) {
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    const char *said[3] = {"is NaN", "is +Inf", "is -Inf"};
    const char *kinds[3] = {"(weights)", "(optimizer state m)", "(optimizer state v)"};
    for (int i = 0; i < 3; i++) {
        char d[256], out[256];
        snprintf(d, sizeof d, "%s/nonfinite%d", root, i);
        snprintf(out, sizeof out, "%s/nonfinite%d_r2", root, i);
        sv_ckpt_index idx;
        CHECK_OK(sv_ckpt_index_from_layout(&idx, L, 3, "full_shard", st0));
        g_bad_t = 2 + i, g_bad_kind = i, g_bad_value = bad[i];
        CHECK_OK(sv_fileio_mkdirs(d, 0755));
        for (int r = 0; r < 3; r++) CHECK_OK(sv_ckpt_write_shard(&idx, d, r, src_bad, NULL));
        CHECK_OK(sv_ckpt_index_store(&idx, d));
        sv_ckpt_index back;
        CHECK_OK(sv_ckpt_index_load(&back, d));
        sv_ckpt_reader rd;
        CHECK_OK(sv_ckpt_reader_open(&rd, &back));
        float buf[16];
        CHECK_OK(sv_ckpt_read(&rd, i, g_bad_t, 0, 5, buf)); /* the elements before it read */
        CHECK_FAILS(sv_ckpt_read(&rd, i, g_bad_t, 0, 8, buf), SV_ERR_CORRUPT, back.tensors[g_bad_t].name, kinds[i],
                    "element 5", said[i], "refusing NaN/Inf");
        CHECK_FAILS(sv_ckpt_read(&rd, i, g_bad_t, 5, 1, buf), SV_ERR_CORRUPT, "element 5", said[i]);
        sv_ckpt_reader_close(&rd);
        CHECK(sv_ckpt_reshard(d, out, 2) == SV_ERR_CORRUPT && strstr(sv_err_msg(), said[i]));
        CHECK(access(out, F_OK) != 0);
        sv_ckpt_index_free(&back);
        sv_ckpt_index_free(&idx);
    }
}

static void check_all(const sv_ckpt_index *idx) {
    sv_ckpt_reader rd;
    CHECK_OK(sv_ckpt_reader_open(&rd, idx));
    for (int t = 0; t < idx->n_tensors; t++) {
        uint64_t n = idx->tensors[t].numel;
        float *buf = malloc(n * 4);
        for (int kind = 0; kind < SV_CKPT_FILE_KINDS(idx); kind++) {
            CHECK_OK(sv_ckpt_read(&rd, kind, t, 0, n, buf));
            for (uint64_t i = 0; i < n; i++) CHECK(buf[i] == value(t, i, kind));
        }
        if (n > 10) { /* an interior range */
            CHECK_OK(sv_ckpt_read(&rd, SV_CKPT_V, t, 3, n - 7, buf));
            for (uint64_t i = 0; i < n - 7; i++) CHECK(buf[i] == value(t, i + 3, SV_CKPT_V));
        }
        free(buf);
    }
    sv_ckpt_reader_close(&rd);
}

static int same_file(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    CHECK_OK(sv_fileio_read_small(a, 1 << 26, &x, &nx));
    CHECK_OK(sv_fileio_read_small(b, 1 << 26, &y, &ny));
    int same = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

/* PyTorch's cubic convolution kernel (A = -0.75), evaluated in double from its definition. */
static double keys(double x) {
    const double A = -0.75;
    x = fabs(x);
    if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
    if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
    return 0;
}

static void resample_ref(const float *src_, int gi, double *dst, int go, int D) {
    for (int d = 0; d < D; d++) dst[d] = src_[d];
    for (int oy = 0; oy < go; oy++)
        for (int ox = 0; ox < go; ox++)
            for (int d = 0; d < D; d++) {
                double ry = (oy + 0.5) * gi / go - 0.5, rx = (ox + 0.5) * gi / go - 0.5, s = 0;
                int fy = (int)floor(ry), fx = (int)floor(rx);
                for (int j = fy - 1; j <= fy + 2; j++)
                    for (int i = fx - 1; i <= fx + 2; i++) {
                        int y = j < 0 ? 0 : j >= gi ? gi - 1 : j, x = i < 0 ? 0 : i >= gi ? gi - 1 : i;
                        s += keys(ry - j) * keys(rx - i) * src_[(size_t)(1 + y * gi + x) * D + d];
                    }
                dst[(size_t)(1 + oy * go + ox) * D + d] = s;
            }
}

static void test_resample(void) {
    const int D = 3;
    int cases[][2] = {{7, 8}, {8, 7}, {4, 9}, {14, 14}, {5, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int gi = cases[c][0], go = cases[c][1];
        size_t ni = (size_t)(1 + gi * gi) * D, no = (size_t)(1 + go * go) * D;
        float *in = malloc(ni * 4), *out = malloc(no * 4);
        double *ref = malloc(no * 8);
        for (size_t i = 0; i < ni; i++) in[i] = sinf((float)i * 0.37f) + 0.1f * (float)(i % 5);
        CHECK_OK(sv_vit_resample_pos_embed(in, gi, out, go, D, 1, 0));
        resample_ref(in, gi, ref, go, D);
        for (size_t i = 0; i < no; i++) CHECK_CLOSE(out[i], ref[i], 2e-6);
        if (gi == go)
            for (size_t i = 0; i < no; i++) CHECK(out[i] == in[i]); /* same grid: exact copy */
        free(in);
        free(out);
        free(ref);
    }
}

static void esc_is(const char *in, size_t cap, const char *want) {
    char buf[512];
    const char *got = sv_log_esc(in, buf, cap);
    if (strcmp(got, want)) fprintf(stderr, "sv_log_esc: got \"%s\", want \"%s\"\n", got, want);
    CHECK(!strcmp(got, want));
    CHECK(strlen(got) < cap);
}

static void test_escape(void) {
    esc_is("blocks.0.attn.qkv.weight", 256, "blocks.0.attn.qkv.weight");
    esc_is("a\nb\tc\rd", 256, "a\\nb\\tc\\rd");
    esc_is("evil\x1b[31mred\x7f", 256, "evil\\x1B[31mred\\x7F");
    esc_is("caf\xc3\xa9 \xc3\xbcn\xc3\xaf"
           "c\xc3\xb8"
           "d\xc3\xa9",
           256,
           "caf\xc3\xa9 \xc3\xbcn\xc3\xaf"
           "c\xc3\xb8"
           "d\xc3\xa9"); /* UTF-8 kept */
    esc_is("\xc2\x9b"
           "2J",
           256, "\\u{009B}2J"); /* C1 CSI */
    esc_is("ab\xe2\x80\xae"
           "cd",
           256, "ab\\u{202E}cd");                   /* right-to-left override */
    esc_is("\xff\xc3", 256, "\\xFF\\xC3");          /* invalid and cut UTF-8 */
    esc_is("\xc0\xaf", 256, "\\xC0\\xAF");          /* overlong "/" */
    esc_is("\xed\xa0\x80", 256, "\\xED\\xA0\\x80"); /* a surrogate */
    esc_is("back\\slash", 256, "back\\\\slash");
    esc_is("aaaaaaaaaaaaaaa", 16, "aaaaaaaaaaaaaaa");   /* exactly fits */
    esc_is("aaaaaaaaaaaaaaaa", 16, "aaaaaaaaaaaa...");  /* one more: cut with "..." */
    esc_is("aaaaaaaaaaa\n\n", 16, "aaaaaaaaaaa\\n\\n"); /* escapes that exactly fit */
    esc_is("aaaaaaaaaaaa\n\n", 16, "aaaaaaaaaaaa...");  /* an escape is never cut in half */
    esc_is(NULL, 256, "(null)");
}

static void test_out_rules(const char *root) {
    char ck[600], p[700], q[700], t1[800], t2[800];
    snprintf(ck, sizeof ck, "%s/out/ck/step_1", root);
    CHECK_OK(sv_fileio_mkdirs(ck, 0755));
    snprintf(p, sizeof p, "%s/index.json", ck);
    CHECK_OK(sv_fileio_write_atomic(p, "{}", 2));
    snprintf(p, sizeof p, "%s/out/ck/latest", root);
    CHECK_OK(sv_fileio_write_atomic(p, "step_1\n", 7));
    /* inside the checkpoint: refused, also through "..", missing parents and a symbolic link */
    snprintf(p, sizeof p, "%s/index.json", ck);
    CHECK(sv_ckpt_out_check(p, ck, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "inside the checkpoint"));
    snprintf(p, sizeof p, "%s/out/ck/nope/../step_1/new/deeper", root);
    CHECK(sv_ckpt_out_check(p, ck, 1, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "inside the checkpoint"));
    snprintf(p, sizeof p, "%s/out/lnk", root);
    CHECK(symlink(ck, p) == 0);
    snprintf(p, sizeof p, "%s/out/lnk/x.safetensors", root);
    CHECK(sv_ckpt_out_check(p, ck, 0, "t") == SV_ERR_INVALID);
    snprintf(p, sizeof p, "%s/out/ck/latest", root);
    CHECK(sv_ckpt_out_check(p, ck, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "latest"));
    /* inside the checkpoint root that holds the step directory (it has `latest`): refused, also
     * through a missing parent and for a step directory reached through a symbolic link */
    snprintf(p, sizeof p, "%s/out/ck/model.safetensors", root);
    CHECK(sv_ckpt_out_check(p, ck, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "inside the checkpoint root") &&
          strstr(sv_err_msg(), "/out/ck ") && strstr(sv_err_msg(), "choose a path outside it"));
    snprintf(p, sizeof p, "%s/out/ck/sub/new", root);
    CHECK(sv_ckpt_out_check(p, ck, 1, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "inside the checkpoint root"));
    snprintf(q, sizeof q, "%s/out/lnk", root);
    snprintf(p, sizeof p, "%s/out/ck/model.safetensors", root);
    CHECK(sv_ckpt_out_check(p, q, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "inside the checkpoint root"));
    /* outside: fine, also where the parents do not exist yet */
    snprintf(p, sizeof p, "%s/out/model.safetensors", root);
    CHECK_OK(sv_ckpt_out_check(p, ck, 0, "t"));
    snprintf(p, sizeof p, "%s/out/a/b/../c", root);
    CHECK_OK(sv_ckpt_out_check(p, ck, 1, "t"));
    snprintf(p, sizeof p, "%s/out/step_10", root); /* a prefix of the name is not "inside" */
    snprintf(q, sizeof q, "%s/out/step_1", root);
    CHECK_OK(sv_fileio_mkdirs(q, 0755));
    CHECK_OK(sv_ckpt_out_check(p, q, 1, "t"));
    /* non-regular targets are never replaced; must_not_exist refuses a regular file too */
    snprintf(p, sizeof p, "%s/out/fifo", root);
    CHECK(mkfifo(p, 0600) == 0);
    CHECK(sv_ckpt_out_check(p, NULL, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "a FIFO"));
    CHECK(sv_ckpt_out_check(ck, NULL, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "a directory"));
    snprintf(p, sizeof p, "%s/out/lnk", root);
    CHECK(sv_ckpt_out_check(p, NULL, 0, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "a symbolic link"));
    snprintf(p, sizeof p, "%s/out/ck/latest", root);
    CHECK_OK(sv_ckpt_out_check(p, NULL, 0, "t"));
    CHECK(sv_ckpt_out_check(p, NULL, 1, "t") == SV_ERR_INVALID && strstr(sv_err_msg(), "already exists"));
    /* temporaries: fresh names, never an existing file; commit without replace keeps the target */
    snprintf(p, sizeof p, "%s/out/file", root);
    CHECK_OK(sv_fileio_tmp_file(p, t1, sizeof t1, NULL));
    CHECK_OK(sv_fileio_tmp_file(p, t2, sizeof t2, NULL));
    CHECK(strcmp(t1, t2) && !strncmp(t1, p, strlen(p)) && access(t1, F_OK) == 0 && access(t2, F_OK) == 0);
    CHECK_OK(sv_fileio_write_atomic(p, "new", 3));
    CHECK(sv_fileio_rename(t1, p, 1) != SV_OK);
    char *text;
    size_t len;
    CHECK_OK(sv_fileio_read_small(p, 100, &text, &len));
    CHECK(len == 3 && !memcmp(text, "new", 3));
    free(text);
    CHECK_OK(sv_fileio_rename(t1, p, 0)); /* replacing a regular file: allowed */
    unlink(t2);
    snprintf(p, sizeof p, "%s/out/d", root);
    CHECK_OK(sv_fileio_tmp_dir(p, t1, sizeof t1));
    CHECK_OK(sv_fileio_rename(t1, p, 1));
    CHECK_OK(sv_fileio_tmp_dir(p, t2, sizeof t2));
    CHECK(sv_fileio_rename(t2, p, 1) != SV_OK); /* an empty directory OUT is not replaced either */
    CHECK(rmdir(t2) == 0);
}

/* A checkpoint with the weight EMA (fsdp/ema.h): a fourth range per unit after v. */
static void test_ema_format(const char *root, const sv_layout *L, const sv_ckpt_train_state *st0) {
    char d3[256], d2[256], d33[256], p[512], q[512];
    snprintf(d3, sizeof d3, "%s/e3", root);
    snprintf(d2, sizeof d2, "%s/e2", root);
    snprintf(d33, sizeof d33, "%s/e3b", root);
    sv_ckpt_train_state st = *st0;
    st.ema = 1, st.ema_decay = 0.999, st.ema_warmup = 1;
    sv_ckpt_index idx, back, two;
    CHECK_OK(sv_ckpt_index_from_layout(&idx, L, 3, "full_shard", &st));
    uint64_t elems = 0;
    for (int u = 0; u < idx.n_units; u++) elems += idx.units[u].shard;
    CHECK(idx.files[0].bytes == 16 * elems); /* master, m, v, EMA */
    CHECK_OK(sv_fileio_mkdirs(d3, 0755));
    for (int r = 0; r < 3; r++) CHECK_OK(sv_ckpt_write_shard(&idx, d3, r, src, NULL));
    CHECK_OK(sv_ckpt_index_store(&idx, d3));
    CHECK_OK(sv_ckpt_index_load(&back, d3));
    CHECK(back.state.ema == 1 && back.state.ema_decay == 0.999 && back.state.ema_warmup == 1);
    check_all(&back); /* all four kinds, EMA included */
    CHECK_OK(sv_ckpt_reshard(d3, d2, 2));
    CHECK_OK(sv_ckpt_reshard(d2, d33, 3));
    CHECK_OK(sv_ckpt_index_load(&two, d2));
    CHECK(two.state.ema == 1);
    check_all(&two);
    for (int r = 0; r < 3; r++) {
        snprintf(p, sizeof p, "%s/%s", d3, idx.files[r].name);
        snprintf(q, sizeof q, "%s/%s", d33, idx.files[r].name);
        CHECK(same_file(p, q));
    }
    snprintf(p, sizeof p, "%s/index.json", d3);
    snprintf(q, sizeof q, "%s/index.json", d33);
    CHECK(same_file(p, q));
    /* a model_ema of another kind is refused */
    char *text;
    size_t len;
    CHECK_OK(sv_fileio_read_small(p, 1 << 26, &text, &len));
    char *k = strstr(text, "\"weights_fp32\"");
    CHECK(k);
    memcpy(k + 1, "weights_bf16", 12);
    CHECK_OK(sv_fileio_write_atomic(p, text, len));
    free(text);
    sv_ckpt_index bad;
    CHECK(sv_ckpt_index_load(&bad, d3) == SV_ERR_FORMAT);
    CHECK(strstr(sv_err_msg(), "model_ema"));
    sv_ckpt_index_free(&idx);
    sv_ckpt_index_free(&back);
    sv_ckpt_index_free(&two);
}

/* index.json with `from` (a member of its "train_data") replaced by `to`, loaded: refused as
 * SV_ERR_FORMAT naming the file and train_data. */
static void train_data_refused(const char *dir, const char *good, size_t len, const char *from, const char *to) {
    const char *at = strstr(good, from);
    CHECK(at);
    size_t pre = (size_t)(at - good), nf = strlen(from), nt = strlen(to);
    char *text = malloc(len - nf + nt + 1), p[512];
    memcpy(text, good, pre);
    memcpy(text + pre, to, nt);
    memcpy(text + pre + nt, at + nf, len - pre - nf + 1);
    snprintf(p, sizeof p, "%s/index.json", dir);
    CHECK_OK(sv_fileio_write_atomic(p, text, len - nf + nt));
    free(text);
    sv_ckpt_index bad;
    sv_status st = sv_ckpt_index_load(&bad, dir);
    if (st != SV_ERR_FORMAT || !strstr(sv_err_msg(), "train_data") || !strstr(sv_err_msg(), "index.json"))
        fprintf(stderr, "train_data %s -> %s: status %d, \"%s\"\n", from, to, (int)st, sv_err_msg());
    CHECK(st == SV_ERR_FORMAT);
    CHECK(strstr(sv_err_msg(), "train_data") && strstr(sv_err_msg(), "index.json"));
}

/* The training data set's identity (index.json "train_data": sample count and fingerprint, a
 * 64-bit value written as 16 hex digits) reads back exactly, survives a reshard, is absent (not
 * known) in an index without it, and hostile values (wrong types, out of range, past int64) are
 * refused naming the member. */
static void test_train_data(const char *root, const sv_layout *L, const sv_ckpt_train_state *st0) {
    char d3[256], d2[256], p[512];
    snprintf(d3, sizeof d3, "%s/td3", root);
    snprintf(d2, sizeof d2, "%s/td2", root);
    sv_ckpt_train_state st = *st0;
    st.data_known = 1, st.data_samples = 480, st.data_fingerprint = 0xfedcba9876543210ull;
    sv_ckpt_index idx, back, two;
    CHECK_OK(sv_ckpt_index_from_layout(&idx, L, 3, "full_shard", &st));
    CHECK_OK(sv_fileio_mkdirs(d3, 0755));
    for (int r = 0; r < 3; r++) CHECK_OK(sv_ckpt_write_shard(&idx, d3, r, src, NULL));
    CHECK_OK(sv_ckpt_index_store(&idx, d3));
    CHECK_OK(sv_ckpt_index_load(&back, d3));
    CHECK(back.state.data_known == 1 && back.state.data_samples == 480);
    CHECK(back.state.data_fingerprint == 0xfedcba9876543210ull);
    CHECK_OK(sv_ckpt_reshard(d3, d2, 2)); /* the resharded checkpoint records the same data set */
    CHECK_OK(sv_ckpt_index_load(&two, d2));
    CHECK(two.state.data_known == 1 && two.state.data_samples == 480);
    CHECK(two.state.data_fingerprint == 0xfedcba9876543210ull);
    char *good;
    size_t len;
    snprintf(p, sizeof p, "%s/index.json", d3);
    CHECK_OK(sv_fileio_read_small(p, 1 << 26, &good, &len));
    CHECK(strstr(good, "\"fingerprint\": \"fedcba9876543210\""));
    static const char *const hostile[][2] = {
        {"\"samples\": 480", "\"samples\": \"480\""},
        {"\"samples\": 480", "\"samples\": 0"},
        {"\"samples\": 480", "\"samples\": -1"},
        {"\"samples\": 480", "\"samples\": 4.5"},
        {"\"samples\": 480", "\"samples\": 1e300"},
        {"\"samples\": 480", "\"samples\": 99999999999999999999999"},
        {"\"samples\": 480", "\"count\": 480"},
        {"\"fingerprint\": \"fedcba9876543210\"", "\"fingerprint\": 18364758544493064720"},
        {"\"fingerprint\": \"fedcba9876543210\"", "\"fingerprint\": \"fedcba987654321\""},
        {"\"fingerprint\": \"fedcba9876543210\"", "\"fingerprint\": \"fedcba98765432100\""},
        {"\"fingerprint\": \"fedcba9876543210\"", "\"fingerprint\": \"FEDCBA9876543210\""},
        {"\"fingerprint\": \"fedcba9876543210\"", "\"fingerprint\": \"fedcba98765432zz\""},
        {"\"fingerprint\": \"fedcba9876543210\"", "\"fingerprint\": null"},
        {"\"train_data\": {", "\"train_data\": 7, \"x\": {"},
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++)
        train_data_refused(d3, good, len, hostile[i][0], hostile[i][1]);
    free(good);
    sv_ckpt_index_free(&idx);
    sv_ckpt_index_free(&back);
    sv_ckpt_index_free(&two);
}

int main(void) {
    test_resample();
    char root[] = "/tmp/sv-ckpt-format-XXXXXX";
    CHECK(mkdtemp(root));
    char d3[256], d2[256], d33[256], p[512], q[512];
    snprintf(d3, sizeof d3, "%s/w3", root);
    snprintf(d2, sizeof d2, "%s/w2", root);
    snprintf(d33, sizeof d33, "%s/w3b", root);

    sv_vit_config cfg;
    CHECK_OK(sv_vit_preset("vit-28", &cfg));
    cfg.dim = 36, cfg.depth = 2, cfg.heads = 3;
    sv_layout L;
    CHECK_OK(sv_layout_build(&L, &cfg, 0, 3, 0));
    sv_ckpt_train_state st = {.step = 12,
                              .skipped_steps = 1,
                              .epoch = 2,
                              .cursor = 96,
                              .seed = 9007199254740993ull,
                              .total_steps = 100,
                              .lr = 1e-3,
                              .min_lr = 1e-5,
                              .warmup = 5,
                              .global_batch = 24};
    sv_ckpt_index idx;
    CHECK_OK(sv_ckpt_index_from_layout(&idx, &L, 6, "hybrid_shard", &st));
    CHECK_OK(sv_fileio_mkdirs(d3, 0755));
    for (int r = 0; r < 3; r++) CHECK_OK(sv_ckpt_write_shard(&idx, d3, r, src, NULL));
    CHECK_OK(sv_ckpt_index_store(&idx, d3));

    sv_ckpt_index back;
    CHECK_OK(sv_ckpt_index_load(&back, d3));
    CHECK(back.shard_world == 3 && back.world_size == 6 && !strcmp(back.strategy, "hybrid_shard"));
    CHECK(back.state.step == 12 && back.state.skipped_steps == 1 && back.state.epoch == 2 && back.state.cursor == 96);
    CHECK(back.state.seed == 9007199254740993ull && back.state.lr == 1e-3 && back.state.warmup == 5);
    CHECK(back.n_tensors == idx.n_tensors && back.n_units == 3);
    CHECK(back.state.ema == 0);        /* no "model_ema": three ranges, 12 bytes per element */
    CHECK(back.state.data_known == 0); /* no "train_data": the data set is not known */
    uint64_t elems = 0;
    for (int u = 0; u < idx.n_units; u++) elems += idx.units[u].shard;
    CHECK(idx.files[0].bytes == 12 * elems);
    for (int r = 0; r < 3; r++) {
        CHECK(back.files[r].n_chunks == idx.files[r].n_chunks);
        for (size_t i = 0; i < idx.files[r].n_chunks; i++) {
            const sv_ckpt_chunk *x = &back.files[r].chunks[i], *y = &idx.files[r].chunks[i];
            CHECK(x->offset == y->offset && x->nbytes == y->nbytes && x->crc == y->crc);
        }
    }
    check_all(&back);

    /* 3 -> 2 -> 3 is byte-identical; the 2-rank copy reads back the same values. */
    CHECK_OK(sv_ckpt_reshard(d3, d2, 2));
    CHECK_OK(sv_ckpt_reshard(d2, d33, 3));
    sv_ckpt_index two;
    CHECK_OK(sv_ckpt_index_load(&two, d2));
    CHECK(two.shard_world == 2);
    check_all(&two);
    for (int r = 0; r < 3; r++) {
        snprintf(p, sizeof p, "%s/%s", d3, idx.files[r].name);
        snprintf(q, sizeof q, "%s/%s", d33, idx.files[r].name);
        CHECK(same_file(p, q));
    }
    CHECK(sv_ckpt_reshard(d3, d2, 2) != SV_OK); /* never overwrites */

    /* A flipped byte inside a chunk is found by any read touching that chunk. */
    const sv_ckpt_chunk *c = &back.files[1].chunks[back.files[1].n_chunks / 2];
    snprintf(p, sizeof p, "%s/%s", d3, back.files[1].name);
    FILE *f = fopen(p, "r+b");
    CHECK(f);
    fseek(f, (long)(c->offset + c->nbytes - 1), SEEK_SET);
    int ch = fgetc(f);
    fseek(f, (long)(c->offset + c->nbytes - 1), SEEK_SET);
    fputc(ch ^ 0x10, f);
    fclose(f);
    sv_ckpt_reader rd;
    CHECK_OK(sv_ckpt_reader_open(&rd, &back));
    sv_status bad = SV_OK;
    float *buf = malloc(1 << 22);
    for (int t = 0; t < back.n_tensors && bad == SV_OK; t++)
        for (int k = 0; k < SV_CKPT_KINDS && bad == SV_OK; k++)
            bad = sv_ckpt_read(&rd, k, t, 0, back.tensors[t].numel, buf);
    CHECK(bad == SV_ERR_CORRUPT);
    CHECK(strstr(sv_err_msg(), "CRC32C mismatch") && strstr(sv_err_msg(), back.files[1].name));
    sv_ckpt_reader_close(&rd);
    free(buf);

    test_nonfinite(root, &L, &st);
    test_ema_format(root, &L, &st);
    test_train_data(root, &L, &st);
    sv_ckpt_index_free(&idx);
    sv_ckpt_index_free(&back);
    sv_ckpt_index_free(&two);
    sv_layout_free(&L);
    test_escape();
    test_out_rules(root);
    CHECK_OK(sv_fileio_remove_tree(root));
    printf("ckpt_format: all passed\n");
    return 0;
}
