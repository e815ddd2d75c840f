/* WebDataset tar reading and dataset specs, with tar files written to disk by a writer in this
 * test: brace lists with an empty item, braces without a list kept as text, an existing path
 * with braces used as written; a key's repeated image or label, hard links, symbolic links and
 * other non-file members, a key with neither image nor label (a dot in the key), a key again
 * later in the shard: refused naming shard, key or member; pax size= records; data after the
 * end-of-archive marker (a warning); .cls contents; GNU headers' prefix bytes; a UTF-8 BOM in a
 * class list; member names over 4095 bytes and base-256 sizes out of range, refused. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "data/dataset.h"
#include "tar_write.h"

static char root[] = "/tmp/sv_test_tar_XXXXXX";
static char path[4400];

static const char *at(const char *rel) {
    snprintf(path, sizeof path, "%s/%s", root, rel);
    return path;
}

/* a shard holding samples k<first>..k<first+n-1> with "image" bytes and labels i % 3 */
static void shard(const char *p, int first, int n) {
    FILE *f = fopen(p, "wb");
    CHECK(f);
    for (int i = first; i < first + n; i++) {
        char nm[64], img[32], lab[8];
        snprintf(nm, sizeof nm, "k%d.jpg", i);
        snprintf(img, sizeof img, "image %d", i);
        text(f, nm, img);
        snprintf(nm, sizeof nm, "k%d.cls", i);
        snprintf(lab, sizeof lab, "%d", i % 3);
        text(f, nm, lab);
    }
    finish(f);
}

static sv_dataset *open_ok(const char *spec, size_t n) {
    sv_dataset *d = NULL;
    CHECK_OK(sv_dataset_open(spec, NULL, &d));
    if (sv_dataset_len(d) != n) fprintf(stderr, "%s: %zu samples, expected %zu\n", spec, sv_dataset_len(d), n);
    CHECK(sv_dataset_len(d) == n);
    return d;
}
/* opening spec fails with `code` and a message holding spec and each non-NULL want */
static void refused(const char *spec, sv_status code, const char *w1, const char *w2, const char *w3) {
    sv_dataset *d = NULL;
    sv_status s = sv_dataset_open(spec, NULL, &d);
    if (s == SV_OK) {
        fprintf(stderr, "%s opened (%zu samples) but must be refused\n", spec, sv_dataset_len(d));
        exit(1);
    }
    fprintf(stderr, "expected error: %s\n", sv_err_msg());
    CHECK(s == code && d == NULL && strstr(sv_err_msg(), spec));
    CHECK(!w1 || strstr(sv_err_msg(), w1));
    CHECK(!w2 || strstr(sv_err_msg(), w2));
    CHECK(!w3 || strstr(sv_err_msg(), w3));
}
static void key_is(const sv_dataset *d, size_t i, const char *key) {
    char name[4400];
    sv_dataset_sample_name(d, i, name, sizeof name);
    const char *c = strrchr(name, ':');
    if (!c || strcmp(c + 1, key) != 0) fprintf(stderr, "sample %zu is %s, expected key %s\n", i, name, key);
    CHECK(c && strcmp(c + 1, key) == 0);
}

/* 1, 10: brace lists, braces without a list, existing paths with braces */
static void test_patterns(void) {
    char **out;
    size_t n;
    CHECK_OK(sv_expand_braces("s{,_x}.tar", &out, &n)); /* bash / braceexpand: s.tar s_x.tar */
    CHECK(n == 2 && !strcmp(out[0], "s.tar") && !strcmp(out[1], "s_x.tar"));
    free(out);
    CHECK_OK(sv_expand_braces("a{b,}{,c}", &out, &n));
    CHECK(n == 4 && !strcmp(out[0], "ab") && !strcmp(out[1], "abc") && !strcmp(out[2], "a") && !strcmp(out[3], "ac"));
    free(out);
    CHECK_OK(sv_expand_braces("fm{v2}/t-{0..1}{}.tar", &out, &n)); /* no list, no range: text */
    CHECK(n == 2 && !strcmp(out[0], "fm{v2}/t-0{}.tar") && !strcmp(out[1], "fm{v2}/t-1{}.tar"));
    free(out);

    shard(at("s.tar"), 0, 2);
    shard(at("s_x.tar"), 2, 3);
    char spec[4400];
    snprintf(spec, sizeof spec, "%s/s{,_x}.tar", root);
    sv_dataset *d = open_ok(spec, 5); /* before: s_x.tar alone, 3 samples */
    key_is(d, 0, "k0");
    key_is(d, 4, "k4");
    sv_dataset_close(d);

    /* an existing file or directory is used as written, braces and all */
    shard(at("t{a,b}.tar"), 0, 2);
    d = open_ok(at("t{a,b}.tar"), 2); /* before: ta.tar, tb.tar not found */
    sv_dataset_close(d);
    CHECK(mkdir(at("fm{v2}"), 0755) == 0 && mkdir(at("fm{v2}/Bag"), 0755) == 0);
    put_file(at("fm{v2}/Bag/0.jpg"), "x", 1);
    d = open_ok(at("fm{v2}"), 1); /* before: "open fmv2" */
    CHECK(sv_dataset_kind_of(d) == SV_DATASET_FOLDER);
    sv_dataset_close(d);
    CHECK(mkdir(at("d{v2}"), 0755) == 0 && mkdir(at("dir.tar"), 0755) == 0 && mkdir(at("dir.tar/Bag"), 0755) == 0);
    put_file(at("dir.tar/Bag/0.jpg"), "x", 1);
    d = open_ok(at("dir.tar"), 1); /* a directory named *.tar is a folder */
    CHECK(sv_dataset_kind_of(d) == SV_DATASET_FOLDER);
    sv_dataset_close(d);
    shard(at("d{v2}/s-0.tar"), 0, 1);
    shard(at("d{v2}/s-1.tar"), 1, 2);
    snprintf(spec, sizeof spec, "%s/d{v2}/s-{0..1}.tar", root);
    d = open_ok(spec, 3);
    sv_dataset_close(d);
}

/* 2, 4, 5: a key's members */
static void test_keys(void) {
    struct {
        const char *members[8]; /* name, contents pairs */
        const char *want1, *want2;
    } bad[] = {
        {{"k0.jpg", "i", "k0.cls", "0", "k0.cls", "7"}, "key 'k0'", ".cls"},
        {{"k0.jpg", "i", "k0.cls", "0", "k0.jpg", "j"}, "key 'k0'", ".jpg after .jpg"},
        {{"k0.jpg", "i", "k0.JPEG", "j", "k0.cls", "0"}, "key 'k0'", ".JPEG after .jpg"},
        {{"k0.jpg", "i", "k0.cls", "0", "a.b.jpg", "j", "a.b.cls", "1"}, "key 'a'", ".b.jpg, .b.cls"},
        {{"k0.jpg", "i", "k0.cls", "0", "k0.txt", "t", "k1.json", "{}"}, "key 'k1'", "first dot"},
        {{"k0.jpg", "i", "k0.cls", "0", "k1.jpg", "j", "k1.cls", "1"}, NULL, NULL},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "keys%zu.tar", c);
        FILE *f = fopen(at(nm), "wb");
        CHECK(f);
        for (int m = 0; m < 8 && bad[c].members[m]; m += 2) text(f, bad[c].members[m], bad[c].members[m + 1]);
        if (!bad[c].want1) { /* the same key again after another: two samples before */
            text(f, "k0.jpg", "again");
            text(f, "k0.cls", "2");
            finish(f);
            refused(at(nm), SV_ERR_FORMAT, "key 'k0'", "sample 1", "sample 3");
            continue;
        }
        finish(f);
        refused(at(nm), SV_ERR_FORMAT, bad[c].want1, bad[c].want2, NULL);
    }
    /* the image wins nothing silently; hidden files and names without a dot are no keys; other
     * extensions beside an image and label stay ignored */
    FILE *f = fopen(at("keys_ok.tar"), "wb");
    CHECK(f);
    text(f, "README", "r");
    text(f, "dir/._k0.jpg", "AppleDouble");
    text(f, "dir/k0.jpg", "i");
    text(f, "dir/k0.txt", "t");
    text(f, "dir/k0.cls", "1");
    text(f, ".hidden", "h");
    finish(f);
    sv_dataset *d = open_ok(at("keys_ok.tar"), 1);
    key_is(d, 0, "dir/k0");
    sv_dataset_close(d);
}

/* 3: member types */
static void test_types(void) {
    struct {
        char type;
        const char *want;
    } bad[] = {{'1', "hard link"}, {'2', "symbolic link"}, {'3', "character device"}, {'4', "block device"},
               {'6', "FIFO"},      {'S', "sparse"},        {'Q', "unknown"}};
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        char nm[64], want[32];
        snprintf(nm, sizeof nm, "type%zu.tar", c);
        snprintf(want, sizeof want, "type '%c'", bad[c].type);
        FILE *f = fopen(at(nm), "wb");
        CHECK(f);
        text(f, "k0.jpg", "i");
        text(f, "k0.cls", "0");
        hdr_x(f, "k1.jpg", 0, bad[c].type, &(hdr_opts){.link = "k0.jpg"}); /* before: skipped */
        hdr_x(f, "k1.cls", 0, bad[c].type, &(hdr_opts){.link = "k0.cls"});
        finish(f);
        refused(at(nm), SV_ERR_FORMAT, "member 'k1.jpg'", bad[c].want, want);
    }
    /* directories (ustar and GNU dump directories), pax global headers, volume labels, GNU long
     * link names: ignored, and a pending long name is kept for the member it belongs to */
    FILE *f = fopen(at("types_ok.tar"), "wb");
    CHECK(f);
    hdr_x(f, "V0", 0, 'V', NULL);
    hdr_x(f, "dir/", 0, '5', NULL);
    hdr_x(f, "dir2/", 3, 'D', NULL);
    CHECK(fwrite("x\0\0", 1, 3, f) == 3);
    pad(f, 3);
    pax(f, "path=dir/k0.jpg");
    hdr_x(f, "pax_global", 0, 'g', NULL); /* between a pax header and its member */
    hdr_x(f, "././@LongLink", 0, 'K', NULL);
    text(f, "placeholder", "i");
    text(f, "dir/k0.cls", "2");
    finish(f);
    sv_dataset *d = open_ok(at("types_ok.tar"), 1);
    key_is(d, 0, "dir/k0");
    CHECK(sv_dataset_label(d, 0) == 2);
    sv_dataset_close(d);
}

/* stderr of sv_dataset_open(spec) in buf (the warnings it printed) */
static sv_dataset *open_capture(const char *spec, size_t n, char *buf, size_t cap) {
    char log[4400];
    snprintf(log, sizeof log, "%s/stderr.txt", root);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
    close(fd);
    sv_dataset *d = NULL;
    sv_status s = sv_dataset_open(spec, NULL, &d);
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    CHECK_OK(s);
    FILE *f = fopen(log, "rb");
    size_t got = fread(buf, 1, cap - 1, f);
    buf[got] = 0;
    fclose(f);
    fprintf(stderr, "captured: \"%s\"\n", buf);
    CHECK(sv_dataset_len(d) == n);
    return d;
}

/* 6: pax size= records, data after the end-of-archive marker */
static void test_archive(void) {
    /* a pax size= record gives the size of the next member (a member over 8 GiB has 0 in the
     * ustar field); before, its data was read as the next header */
    static const char img[] = "a jpeg of 600 bytes";
    uint8_t data[600];
    memset(data, 0xd8, sizeof data);
    memcpy(data, img, sizeof img);
    FILE *f = fopen(at("paxsize.tar"), "wb");
    CHECK(f);
    pax(f, "size=600");
    hdr_x(f, "k0.jpg", 0, '0', NULL);
    CHECK(fwrite(data, 1, sizeof data, f) == sizeof data);
    pad(f, sizeof data);
    text(f, "k0.cls", "1");
    text(f, "k1.jpg", "j");
    text(f, "k1.cls", "2");
    finish(f);
    sv_dataset *d = open_ok(at("paxsize.tar"), 2);
    uint8_t *buf = NULL;
    size_t cap = 0, got;
    CHECK_OK(sv_dataset_read(d, 0, &buf, &cap, &got));
    CHECK(got == sizeof data && memcmp(buf, data, sizeof data) == 0);
    CHECK(sv_dataset_label(d, 0) == 1 && sv_dataset_label(d, 1) == 2);
    free(buf);
    sv_dataset_close(d);
    const char *nonsense[] = {"size=", "size=12x", "size=-1", "size= 5", "size=99999999999999999999999"};
    for (size_t c = 0; c < sizeof nonsense / sizeof nonsense[0]; c++) {
        f = fopen(at("paxbad.tar"), "wb");
        CHECK(f);
        pax(f, nonsense[c]);
        text(f, "k0.jpg", "i");
        text(f, "k0.cls", "1");
        finish(f);
        refused(at("paxbad.tar"), SV_ERR_FORMAT, "size record", "decimal", NULL);
    }

    /* two archives joined with cat: the first is read, the rest named in one warning */
    shard(at("cA.tar"), 0, 2);
    shard(at("cB.tar"), 2, 3);
    char cmd[9000], log[2048];
    snprintf(cmd, sizeof cmd, "cat %s/cA.tar %s/cB.tar %s/cB.tar > %s/cat.tar", root, root, root, root);
    CHECK(system(cmd) == 0);
    d = open_capture(at("cat.tar"), 2, log, sizeof log);
    CHECK(strstr(log, "WARN") && strstr(log, at("cat.tar")) && strstr(log, "end-of-archive") && strstr(log, "ignored"));
    CHECK(strstr(strstr(log, "WARN") + 1, "WARN") == NULL); /* once per shard */
    sv_dataset_close(d);
    /* zeros after the marker (a tar record's padding) are no data: no warning */
    f = fopen(at("padded.tar"), "wb");
    CHECK(f);
    text(f, "k0.jpg", "i");
    text(f, "k0.cls", "0");
    static const uint8_t z[10240];
    CHECK(fwrite(z, 1, sizeof z, f) == sizeof z);
    CHECK(fclose(f) == 0);
    d = open_capture(at("padded.tar"), 1, log, sizeof log);
    CHECK(log[0] == 0);
    sv_dataset_close(d);
}

/* 7: .cls contents */
static void test_labels(void) {
    struct {
        const char *cls;
        size_t len;
        int label; /* -1: refused */
    } cases[] = {{"7\0\0garbage", 10, -1},
                 {"7                              x", 32, -1}, /* byte 32 was never read */
                 {"", 0, -1},
                 {" \n", 2, -1},
                 {"-1", 2, -1},
                 {"+7", 2, -1},
                 {"0x7", 3, -1},
                 {"7 7", 3, -1},
                 {"10000001", 8, -1},
                 {"99999999999999999999999999", 26, -1},
                 {" \t12\r\n", 6, 12},
                 {"0", 1, 0},
                 {"007\n", 4, 7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        FILE *f = fopen(at("cls.tar"), "wb");
        CHECK(f);
        text(f, "k0.jpg", "i");
        member(f, "k0.cls", cases[c].cls, cases[c].len);
        finish(f);
        if (cases[c].label < 0) {
            refused(at("cls.tar"), SV_ERR_FORMAT, "key 'k0'", ".cls", "decimal");
            continue;
        }
        sv_dataset *d = open_ok(at("cls.tar"), 1);
        CHECK(sv_dataset_label(d, 0) == cases[c].label);
        sv_dataset_close(d);
    }
    /* 64 bytes are read whole; 65 are refused as no label */
    char big[65];
    memset(big, ' ', sizeof big);
    big[0] = '3';
    for (size_t n = 64; n <= 65; n++) {
        FILE *f = fopen(at("cls.tar"), "wb");
        CHECK(f);
        text(f, "k0.jpg", "i");
        member(f, "k0.cls", big, n);
        finish(f);
        if (n == 65) {
            refused(at("cls.tar"), SV_ERR_FORMAT, "key 'k0'", "65 bytes", "64");
            continue;
        }
        sv_dataset *d = open_ok(at("cls.tar"), 1);
        CHECK(sv_dataset_label(d, 0) == 3);
        sv_dataset_close(d);
    }
}

/* 8: the prefix field is a path prefix in POSIX ustar headers only */
static void test_prefix(void) {
    FILE *f = fopen(at("gnu.tar"), "wb");
    CHECK(f);
    hdr_opts gnu = {.magic = "ustar  ", .prefix = "15305305740"}; /* "ustar  \0": GNU; atime there */
    member_x(f, "./k0.jpg", "i", 1, &gnu);
    member_x(f, "./k0.cls", "1", 1, &(hdr_opts){.magic = "ustar  ", .prefix = "13602760400"});
    hdr_opts posix = {.prefix = "deep/dir"};
    member_x(f, "k1.jpg", "j", 1, &posix);
    member_x(f, "k1.cls", "2", 1, &posix);
    finish(f);
    sv_dataset *d = open_ok(at("gnu.tar"), 2);
    key_is(d, 0, "./k0"); /* before: 15305305740/./k0 (and 13602760400/./k0 for the label) */
    key_is(d, 1, "deep/dir/k1");
    sv_dataset_close(d);
}

/* 9: a class list may start with a UTF-8 byte order mark */
static void test_bom(void) {
    put_file(at("bom.txt"),
             "\xef\xbb\xbf"
             "Ankle_boot\r\nBag\r\n",
             20);
    char **names;
    int nn;
    CHECK_OK(sv_classes_read(at("bom.txt"), &names, &nn));
    CHECK(nn == 2 && !strcmp(names[0], "Ankle_boot") && !strcmp(names[1], "Bag"));
    free(names);
    put_file(at("bom.txt"), "\xef\xbb\xbf", 3); /* a mark and nothing else: empty */
    CHECK(sv_classes_read(at("bom.txt"), &names, &nn) == SV_ERR_FORMAT);
    fprintf(stderr, "expected error: %s\n", sv_err_msg());
    CHECK(strstr(sv_err_msg(), "empty"));
    put_file(at("bom.txt"),
             "a\n\xef\xbb\xbf"
             "b\n",
             6); /* only at the start */
    CHECK_OK(sv_classes_read(at("bom.txt"), &names, &nn));
    CHECK(nn == 2 &&
          !strcmp(names[1],
                  "\xef\xbb\xbf"
                  "b"));
    free(names);
}

/* a ustar header for `name` whose 12-byte size field is `size` as given (base-256 forms) */
static void hdr_size(FILE *f, const char *name, const uint8_t size[12]) {
    uint8_t h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    memcpy(h + 124, size, 12);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned s = 0;
    for (int i = 0; i < 512; i++) s += h[i];
    snprintf((char *)h + 148, 8, "%06o", s);
    CHECK(fwrite(h, 1, 512, f) == 512);
}

/* 11: member names over 4095 bytes, base-256 size fields */
static void test_limits(void) {
    /* a pax path= or GNU long name over 4095 bytes was cut to 4095 and its sample skipped as
     * having no key; 4095 bytes are read whole */
    static char name[4200];
    for (int L = 4095; L <= 4100; L += 5) {
        for (int gnu = 0; gnu < 2; gnu++) {
            FILE *f = fopen(at("long.tar"), "wb");
            CHECK(f);
            text(f, "s0.jpg", "i");
            text(f, "s0.cls", "0");
            for (int m = 0; m < 2; m++) {
                memset(name, 'k', (size_t)L - 4);
                memcpy(name + L - 4, m ? ".cls" : ".jpg", 5);
                if (gnu) { /* an 'L' member holding the name and its NUL, then the member */
                    hdr_x(f, "././@LongLink", (size_t)L + 1, 'L', NULL);
                    CHECK(fwrite(name, 1, (size_t)L + 1, f) == (size_t)L + 1);
                    pad(f, (size_t)L + 1);
                    hdr_x(f, "placeholder", 1, '0', NULL);
                    CHECK(fwrite(m ? "1" : "j", 1, 1, f) == 1);
                    pad(f, 1);
                } else
                    text(f, name, m ? "1" : "j");
            }
            text(f, "s2.jpg", "i");
            text(f, "s2.cls", "0");
            finish(f);
            if (L > 4095) {
                refused(at("long.tar"), SV_ERR_FORMAT, "member name of 4100 bytes", "starting 'kkkkkkkk",
                        "longer than 4095");
                continue;
            }
            sv_dataset *d = open_ok(at("long.tar"), 3);
            CHECK(sv_dataset_label(d, 1) == 1);
            sv_dataset_close(d);
        }
    }
    /* base-256 sizes: the low 8 bytes hold the real size; a negative field (0xff lead) or one
     * over 63 bits was read as that size */
    struct {
        uint8_t lead[4], top; /* the first 4 bytes, the top byte of the last 8 */
        int ok;
    } cases[] = {{{0x80, 0, 0, 0}, 0, 1}, {{0xff, 0xff, 0xff, 0xff}, 0, 0}, {{0xc0, 0, 0, 0}, 0, 0},
                 {{0x80, 1, 0, 0}, 0, 0}, {{0x81, 0, 0, 0}, 0, 0},          {{0x80, 0, 0, 0}, 0x80, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t size[12] = {0};
        memcpy(size, cases[c].lead, 4);
        size[4] = cases[c].top;
        size[11] = 3;
        FILE *f = fopen(at("b256.tar"), "wb");
        CHECK(f);
        text(f, "s0.jpg", "i");
        text(f, "s0.cls", "0");
        hdr_size(f, "s1.jpg", size);
        CHECK(fwrite("jpg", 1, 3, f) == 3);
        pad(f, 3);
        text(f, "s1.cls", "1");
        finish(f);
        if (!cases[c].ok) {
            refused(at("b256.tar"), SV_ERR_FORMAT, "member 's1.jpg'", "size out of range", NULL);
            continue;
        }
        sv_dataset *d = open_ok(at("b256.tar"), 2);
        uint8_t *buf = NULL;
        size_t cap = 0, got;
        CHECK_OK(sv_dataset_read(d, 1, &buf, &cap, &got));
        CHECK(got == 3 && memcmp(buf, "jpg", 3) == 0);
        free(buf);
        sv_dataset_close(d);
    }
}

int main(void) {
    CHECK(mkdtemp(root));
    test_patterns();
    test_keys();
    test_types();
    test_archive();
    test_labels();
    test_prefix();
    test_bom();
    test_limits();
    char cmd[4500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return 0;
}
