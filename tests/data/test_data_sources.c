/* Sources on disk: ImageFolder class/sample order, unreadable files (truncated JPEG, a text
 * file named .jpg) skipped deterministically and counted by the loader (same output at 1 and 3
 * threads); WebDataset tar: pax long names, brace patterns, one shard file named twice,
 * classes.txt, missing .cls, '..' and absolute member names, truncated archive; class lists:
 * UTF-8 text with CRLF read back, a NUL byte, invalid UTF-8, a line break inside a line, random
 * bytes and a repeated name refused naming the file and the line. Tar files are written by a
 * writer in this test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "data/jpeg.h"
#include "data/loader.h"
#include "data/synth.h"
#include "tar_write.h"

/* sv_classes_read must refuse `text` (n bytes) with a message naming the file and `want`. */
static void classes_refused(const char *path, const void *text, size_t n, const char *want) {
    put_file(path, text, n);
    char **names = NULL;
    int nn = -1;
    CHECK(sv_classes_read(path, &names, &nn) == SV_ERR_FORMAT);
    fprintf(stderr, "expected error: %s\n", sv_err_msg());
    CHECK(strstr(sv_err_msg(), path) && strstr(sv_err_msg(), want));
    CHECK(names == NULL && nn == -1);
}

static void test_class_lists(const char *root) {
    char p[4400];
    snprintf(p, sizeof p, "%s/list.txt", root);
    /* UTF-8 names, CRLF line ends, no newline after the last line */
    static const char good[] = "Ankle_boot\r\nT-shirt/top\n\xc3\xbc"
                               "n"
                               "\xc3\xaf"
                               "c"
                               "\xc3\xb8"
                               "d"
                               "\xc3\xa9\nwith space";
    put_file(p, good, sizeof good - 1);
    char **names;
    int nn;
    CHECK_OK(sv_classes_read(p, &names, &nn));
    CHECK(nn == 4 && !strcmp(names[0], "Ankle_boot") && !strcmp(names[1], "T-shirt/top") &&
          !strcmp(names[2],
                  "\xc3\xbc"
                  "n"
                  "\xc3\xaf"
                  "c"
                  "\xc3\xb8"
                  "d"
                  "\xc3\xa9") &&
          !strcmp(names[3], "with space"));
    free(names);
    /* a NUL byte once hid every later line (the lines were C strings) */
    static const char nul[] = "Ankle_boot\0x\nBag\nCoat\n";
    classes_refused(p, nul, sizeof nul - 1, "line 1 holds a NUL byte");
    static const char nul3[] = "a\nb\nc\0\n";
    classes_refused(p, nul3, sizeof nul3 - 1, "line 3 holds a NUL byte");
    classes_refused(p, "a\nb\xff\n", 5, "line 2 is not valid UTF-8");
    classes_refused(p, "a\n\xc0\xaf\n", 5, "line 2 is not valid UTF-8"); /* overlong '/' */
    classes_refused(p, "a\nb\rc\n", 6, "line 2 holds a line break");
    classes_refused(p, "a\n\nb\n", 5, "line 2 is empty");
    classes_refused(p, "a\nb\nc\nb\nd\na\n", 12, "line 4 repeats the name \"b\" of line 2");
    classes_refused(p, "x\ny\r\ny\n", 7, "line 3 repeats the name \"y\" of line 2");
    /* a name three times, and a later name whose first repeat comes earlier: the earliest repeat */
    classes_refused(p, "p\nq\nr\nq\np\nq\n", 12, "line 4 repeats the name \"q\" of line 2");
    classes_refused(p, "z\ny\nz\nz\ny\n", 10, "line 3 repeats the name \"z\" of line 1");
    classes_refused(p, "m\nb\nb\nm\nb\n", 10, "line 3 repeats the name \"b\" of line 2");
    /* 3000 random bytes: never a silent short list */
    uint8_t rnd[3000];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int seed = 0; seed < 20; seed++) {
        for (size_t i = 0; i < sizeof rnd; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            rnd[i] = (uint8_t)(x >> 24);
        }
        classes_refused(p, rnd, sizeof rnd, "line ");
    }
    /* the rule shared with ImageFolder class directories */
    CHECK(sv_class_name_problem("ok name", 7) == NULL && sv_class_name_problem("", 0) != NULL);
    CHECK(sv_class_name_problem("a\nb", 3) != NULL && sv_class_name_problem("a\xe2\x82", 3) != NULL);
    CHECK(sv_class_name_problem("evil\x1b[31mred\t", 13) == NULL); /* printed escaped, not refused */
}

int main(void) {
    char root[] = "/tmp/sv_test_src_XXXXXX";
    CHECK(mkdtemp(root));
    char p[4400], q[4400];
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    static uint8_t pix[64 * 48 * 3];
    /* ImageFolder: classes "b", "a", "B" (byte order: B < a < b), nested sub-dir, .JPEG case */
    const char *cls[3] = {"b", "a", "B"};
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/f/%s/sub", root, cls[k]);
        char cmd[4500];
        snprintf(cmd, sizeof cmd, "mkdir -p %s", p);
        CHECK(system(cmd) == 0);
        for (int i = 0; i < 4; i++) {
            const uint8_t *j;
            size_t len;
            sv_synth_render(2, (uint64_t)(k * 10 + i), k, 64, 48, 3, pix);
            CHECK_OK(sv_jpeg_encode(&jc, pix, 64, 48, 3, 90, i == 1, &j, &len));
            snprintf(p, sizeof p, "%s/f/%s/%s%d.%s", root, cls[k], i == 3 ? "sub/" : "", i, i == 2 ? "JPEG" : "jpg");
            put_file(p, j, i == 0 && k == 0 ? len / 3 : len); /* b/0.jpg truncated */
        }
    }
    snprintf(p, sizeof p, "%s/f/a/9.jpg", root);
    put_file(p, "this is not a jpeg\n", 19);
    snprintf(p, sizeof p, "%s/f/a/notes.txt", root);
    put_file(p, "ignored", 7);
    snprintf(p, sizeof p, "%s/f", root);
    sv_dataset *d;
    CHECK_OK(sv_dataset_open(p, NULL, &d));
    CHECK(sv_dataset_num_classes(d) == 3 && sv_dataset_len(d) == 13);
    CHECK(!strcmp(sv_dataset_class_name(d, 0), "B") && !strcmp(sv_dataset_class_name(d, 1), "a") &&
          !strcmp(sv_dataset_class_name(d, 2), "b"));
    char name[4400];
    sv_dataset_sample_name(d, 4, name, sizeof name); /* a: 0.jpg 1.jpg 2.JPEG 9.jpg sub/3.jpg */
    CHECK(strstr(name, "/a/0.jpg"));
    sv_dataset_sample_name(d, 7, name, sizeof name);
    CHECK(strstr(name, "/a/9.jpg"));
    sv_dataset_sample_name(d, 8, name, sizeof name);
    CHECK(strstr(name, "/a/sub/3.jpg"));
    snprintf(p, sizeof p, "%s/classes.txt", root);
    CHECK_OK(sv_classes_write(p, d));
    char **names;
    int nn;
    CHECK_OK(sv_classes_read(p, &names, &nn));
    CHECK(nn == 3 && !strcmp(names[0], "B") && !strcmp(names[2], "b"));
    free(names);
    test_class_lists(root);

    /* loader over every sample at 1 and 3 threads: 2 bad files substituted, identical output */
    float *ref = NULL;
    for (int threads = 1; threads <= 3; threads += 2) {
        sv_loader_opts o = sv_loader_opts_default();
        o.dataset = d;
        o.batch_local = 13;
        o.img = 24;
        o.seed = 3;
        o.threads = threads;
        o.prefetch = 1; /* stats count produced samples: no look-ahead makes them exact here */
        sv_loader *l;
        CHECK_OK(sv_loader_create(&o, &l));
        const sv_batch *b;
        CHECK_OK(sv_loader_next(l, &b));
        sv_loader_stats st;
        sv_loader_stats_get(l, &st);
        CHECK(st.bad_files == 2 && st.substituted == 2);
        int bad_used = 0;
        for (int j = 0; j < 13; j++) {
            sv_dataset_sample_name(d, (size_t)b->sample_index[j], name, sizeof name);
            bad_used += strstr(name, "/b/0.jpg") || strstr(name, "/a/9.jpg");
            CHECK(b->labels[j] == sv_dataset_label(d, (size_t)b->sample_index[j]));
        }
        CHECK(bad_used == 0);
        size_t bytes = 13 * 3 * 24 * 24 * sizeof(float);
        if (!ref) {
            ref = malloc(bytes);
            memcpy(ref, b->images, bytes);
        } else {
            CHECK(memcmp(ref, b->images, bytes) == 0);
        }
        /* the next epoch still works and counts the substitutions again, not the files */
        CHECK_OK(sv_loader_next(l, &b));
        sv_loader_stats_get(l, &st);
        fprintf(stderr, "bad %llu substituted %llu\n", (unsigned long long)st.bad_files,
                (unsigned long long)st.substituted);
        CHECK(st.bad_files == 2 && st.substituted == 4);
        sv_loader_destroy(l);
    }
    free(ref);
    sv_dataset_close(d);

    /* tar shards: two shards through a brace pattern, a pax long key, classes.txt beside them */
    const uint8_t *j;
    size_t len;
    sv_synth_render(2, 1, 0, 64, 48, 3, pix);
    CHECK_OK(sv_jpeg_encode(&jc, pix, 64, 48, 3, 90, 0, &j, &len));
    uint8_t *jpg = malloc(len);
    memcpy(jpg, j, len);
    char longkey[300];
    memset(longkey, 'k', 250);
    longkey[250] = 0;
    for (int s = 0; s < 2; s++) {
        snprintf(p, sizeof p, "%s/t-%02d.tar", root, s);
        FILE *f = fopen(p, "wb");
        for (int i = 0; i < 3; i++) {
            char nm[400];
            if (s == 1 && i == 2)
                snprintf(nm, sizeof nm, "dir/%s.jpg", longkey);
            else
                snprintf(nm, sizeof nm, "dir/s%d_%d.jpg", s, i);
            member(f, nm, jpg, len);
            char c[8];
            int cl = snprintf(c, sizeof c, "%d\n", (s * 3 + i) % 4);
            *strrchr(nm, '.') = 0;
            strcat(nm, ".cls");
            member(f, nm, c, (size_t)cl);
        }
        finish(f);
    }
    snprintf(p, sizeof p, "%s/classes.txt", root);
    put_file(p, "zero\none\ntwo\nthree\nfour\n", 24);
    snprintf(p, sizeof p, "%s/t-{00..01}.tar", root);
    CHECK_OK(sv_dataset_open(p, NULL, &d));
    CHECK(sv_dataset_len(d) == 6 && sv_dataset_num_classes(d) == 5);
    CHECK(!strcmp(sv_dataset_class_name(d, 3), "three"));
    for (size_t i = 0; i < 6; i++) CHECK(sv_dataset_label(d, i) == (int)(i % 4));
    sv_dataset_sample_name(d, 5, name, sizeof name);
    CHECK(strstr(name, longkey) && strstr(name, ":dir/"));
    uint8_t *buf = NULL;
    size_t cap = 0, got;
    CHECK_OK(sv_dataset_read(d, 5, &buf, &cap, &got));
    CHECK(got == len && memcmp(buf, jpg, len) == 0);
    free(buf);
    sv_dataset_close(d);
    /* one shard file named twice, by a repeated brace item, by another spelling of its path or
     * through a link: refused naming the repeat, the shard it repeats and the pattern (before:
     * its samples were indexed twice) */
    snprintf(p, sizeof p, "%s/t-01.tar", root);
    snprintf(q, sizeof q, "%s/link.tar", root);
    CHECK(symlink(p, q) == 0);
    struct {
        const char *pat, *repeat, *of;
    } twice[] = {{"%s/t-{00,01,00}.tar", "shard 3 (%s/t-00.tar)", "shard 1 (%s/t-00.tar)"},
                 {"%s/t-{01,00,00,00}.tar", "shard 3 (%s/t-00.tar)", "shard 2 (%s/t-00.tar)"},
                 {"%s/{t-00,./t-00,t-01}.tar", "shard 2 (%s/./t-00.tar)", "shard 1 (%s/t-00.tar)"},
                 {"%s/{t-01,t-00,link}.tar", "shard 3 (%s/link.tar)", "shard 1 (%s/t-01.tar)"},
                 {"%s/{t-00,t-01}{.tar,.tar}", "shard 2 (%s/t-00.tar)", "shard 1 (%s/t-00.tar)"}};
    for (size_t c = 0; c < sizeof twice / sizeof twice[0]; c++) {
        char want1[4400], want2[4400];
        snprintf(p, sizeof p, twice[c].pat, root);
        snprintf(want1, sizeof want1, twice[c].repeat, root);
        snprintf(want2, sizeof want2, twice[c].of, root);
        d = NULL;
        CHECK(sv_dataset_open(p, NULL, &d) == SV_ERR_INVALID && d == NULL);
        fprintf(stderr, "expected error: %s\n", sv_err_msg());
        CHECK(strstr(sv_err_msg(), p) && strstr(sv_err_msg(), want1) && strstr(sv_err_msg(), want2) &&
              strstr(sv_err_msg(), "is the same file as"));
    }
    snprintf(p, sizeof p, "%s/{t-01,t-00}.tar", root); /* distinct shards in any order are fine */
    CHECK_OK(sv_dataset_open(p, NULL, &d));
    CHECK(sv_dataset_len(d) == 6);
    sv_dataset_close(d);

    /* bad archives: each is a clear error naming the problem */
    struct {
        const char *bad_name;
        int drop_cls;
        int truncate;
        const char *want;
    } cases[] = {{"../evil.jpg", 0, 0, "'..'"},
                 {"/abs/evil.jpg", 0, 0, "absolute"},
                 {NULL, 1, 0, "no .cls"},
                 {NULL, 0, 1, "truncated"}};
    for (int c = 0; c < 4; c++) {
        snprintf(p, sizeof p, "%s/bad%d.tar", root, c);
        FILE *f = fopen(p, "wb");
        member(f, "ok.jpg", jpg, len);
        member(f, "ok.cls", "1", 1);
        const char *nm = cases[c].bad_name ? cases[c].bad_name : "key7.jpg";
        member(f, nm, jpg, len);
        if (!cases[c].drop_cls) member(f, cases[c].bad_name ? "x.cls" : "key7.cls", "2", 1);
        finish(f);
        if (cases[c].truncate) CHECK(truncate(p, 512 * 3 + 700) == 0);
        CHECK(sv_dataset_open(p, NULL, &d) != SV_OK);
        fprintf(stderr, "expected error: %s\n", sv_err_msg());
        CHECK(strstr(sv_err_msg(), cases[c].want) && strstr(sv_err_msg(), p));
        if (cases[c].drop_cls) CHECK(strstr(sv_err_msg(), "key7"));
    }
    free(jpg);
    sv_jpeg_ctx_free(&jc);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    return 0;
}
