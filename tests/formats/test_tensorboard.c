/* formats/tensorboard: file naming, byte-exact records derived by hand from event.proto /
 * summary.proto, write -> decode round trip, CRC and truncation detection, malformed protobuf,
 * and a mutation loop over a valid file image. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "formats/tensorboard.h"
#include "fmt_util.h"

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Check one TFRecord's framing at `p` and return a pointer to its data (length in *n). */
static const uint8_t *record(const uint8_t *p, size_t *n) {
    *n = (size_t)le64(p);
    uint32_t c = sv_crc32c(p, 8);
    CHECK(le32(p + 8) == ((c >> 15 | c << 17) + 0xa282ead8u));
    c = sv_crc32c(p + 12, *n);
    CHECK(le32(p + 12 + *n) == ((c >> 15 | c << 17) + 0xa282ead8u));
    return p + 12;
}

static void test_bytes_and_roundtrip(const char *dir) {
    sv_tb_writer w;
    CHECK_OK(sv_tb_open(&w, dir, 1700000000.5));
    char host[256] = {0}, want[600];
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "%s/events.out.tfevents.1700000000.%s", dir, host);
    CHECK(!strcmp(sv_tb_path(&w), want));
    char first[1024];
    snprintf(first, sizeof first, "%s", sv_tb_path(&w));
    CHECK_OK(sv_tb_scalar(&w, "a", 5, 1.0f, 2.0));
    const char *tags[] = {"train/loss", "lr", "eval/top1 \xc3\xa9"};
    int count = 0;
    for (int step = 0; step < 30; step++)
        for (int k = 0; k < 3; k++, count++)
            CHECK_OK(sv_tb_scalar(&w, tags[k], step * 10, (float)(k + 1) / (float)(step + 1), 1700000001.0 + step));
    CHECK_OK(sv_tb_scalar(&w, "neg", -3, NAN, 1.0));
    CHECK_OK(sv_tb_scalar(&w, "big", (int64_t)1 << 40, -0.0f, 1.0));
    char longtag[SV_TB_MAX_TAG + 2];
    memset(longtag, 'x', sizeof longtag - 1);
    longtag[sizeof longtag - 1] = 0;
    CHECK_FAILS(sv_tb_scalar(&w, longtag, 0, 1, 0), SV_ERR_INVALID, "tag");
    CHECK_FAILS(sv_tb_scalar(&w, "", 0, 1, 0), SV_ERR_INVALID, "tag");
    /* every record reaches the file at once (no user-space buffer): readable before close */
    sv_tb_events ev;
    CHECK_OK(sv_tb_read_file(first, 0, &ev));
    CHECK(ev.n == (size_t)count + 3);
    sv_tb_events_free(&ev);
    CHECK_OK(sv_tb_sync(&w));
    CHECK_OK(sv_tb_close(&w));

    /* a second writer in the same second on the same host gets its own file */
    sv_tb_writer w2;
    CHECK_OK(sv_tb_open(&w2, dir, 1700000000.9));
    CHECK(strcmp(sv_tb_path(&w2), first) != 0 && strstr(sv_tb_path(&w2), "events.out.tfevents.1700000000."));
    CHECK_OK(sv_tb_close(&w2));

    char *img;
    size_t len;
    CHECK_OK(sv_fileio_read_small(first, 1 << 20, &img, &len));
    const uint8_t *p = (const uint8_t *)img;
    size_t n;
    /* Event{wall_time(1, fixed64) = 1700000000.5, file_version(3, len) = "brain.Event:2"} */
    const uint8_t *d = record(p, &n);
    double wt = 1700000000.5;
    uint8_t ev0[9 + 2 + 13] = {0x09};
    memcpy(ev0 + 1, &wt, 8);
    ev0[9] = 0x1a;
    ev0[10] = 13;
    memcpy(ev0 + 11, "brain.Event:2", 13);
    CHECK(n == sizeof ev0 && !memcmp(d, ev0, n));
    /* Event{wall_time=2.0, step(2, varint)=5, summary(5, len){value(1, len){tag(1)="a",
     * simple_value(2, fixed32)=1.0f}}} */
    d = record(p + 12 + n + 4, &n);
    static const uint8_t ev1[] = {0x09, 0,    0,    0,    0,    0,   0,    0, 0x40, 0x10, 0x05, 0x2a,
                                  0x0a, 0x0a, 0x08, 0x0a, 0x01, 'a', 0x15, 0, 0,    0x80, 0x3f};
    CHECK(n == sizeof ev1 && !memcmp(d, ev1, n));

    CHECK_OK(sv_tb_decode(img, len, "ev", 0, &ev));
    CHECK(!strcmp(ev.file_version, "brain.Event:2"));
    CHECK(ev.n_records == (size_t)count + 4 && ev.n == (size_t)count + 3 && !ev.truncated_tail);
    CHECK(!strcmp(ev.items[0].tag, "a") && ev.items[0].step == 5 && ev.items[0].value == 1.0f &&
          ev.items[0].wall_time == 2.0);
    for (int i = 0; i < count; i++) {
        const sv_tb_scalar_rec *r = &ev.items[1 + i];
        int step = i / 3, k = i % 3;
        CHECK(!strcmp(r->tag, tags[k]) && r->step == step * 10);
        CHECK(r->value == (float)(k + 1) / (float)(step + 1));
        CHECK(r->wall_time == 1700000001.0 + step);
    }
    CHECK(ev.items[count + 1].step == -3 && isnan(ev.items[count + 1].value));
    CHECK(ev.items[count + 2].step == (int64_t)1 << 40 && signbit(ev.items[count + 2].value));
    sv_tb_events_free(&ev);

    /* corruption: a flipped data byte, a flipped length byte, a truncated tail */
    size_t r2 = 12 + sizeof ev0 + 4 + 12 + sizeof ev1 + 4; /* third record */
    img[r2 + 12 + 3] ^= 1;
    CHECK_FAILS(sv_tb_decode(img, len, "ev", 0, &ev), SV_ERR_CORRUPT, "record 2", "data CRC mismatch");
    sv_tb_events_free(&ev);
    img[r2 + 12 + 3] ^= 1;
    img[r2] ^= 1;
    CHECK_FAILS(sv_tb_decode(img, len, "ev", 0, &ev), SV_ERR_CORRUPT, "record 2", "length CRC mismatch");
    sv_tb_events_free(&ev);
    img[r2] ^= 1;
    CHECK_FAILS(sv_tb_decode(img, len - 3, "ev", 0, &ev), SV_ERR_CORRUPT, "truncated");
    sv_tb_events_free(&ev);
    CHECK_OK(sv_tb_decode(img, len - 3, "ev", 1, &ev));
    CHECK(ev.truncated_tail && ev.n == (size_t)count + 2);
    sv_tb_events_free(&ev);

    /* valid framing around an invalid protobuf */
    uint8_t bad[12 + 3 + 4] = {3};
    uint32_t c = sv_crc32c_mask(sv_crc32c(bad, 8));
    memcpy(bad + 8, &c, 4);
    memcpy(bad + 12, "\x2a\x7f\x00", 3); /* summary claims 127 bytes, 1 present */
    c = sv_crc32c_mask(sv_crc32c(bad + 12, 3));
    memcpy(bad + 15, &c, 4);
    CHECK_FAILS(sv_tb_decode(bad, sizeof bad, "ev", 0, &ev), SV_ERR_FORMAT, "record 0", "malformed Event protobuf");
    sv_tb_events_free(&ev);

    /* mutations: never crash; accepted images only hold what was decodable */
    uint64_t rs = 5;
    char *buf = malloc(len);
    CHECK(buf);
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, img, len);
        size_t m = len;
        uint64_t r = fmt_rand(&rs);
        if (r & 1)
            buf[(r >> 8) % len] ^= (char)(1u << ((r >> 40) & 7));
        else
            m = (size_t)((r >> 8) % len);
        if (sv_tb_decode(buf, m, "fz", (int)((r >> 50) & 1), &ev) == SV_OK) CHECK(ev.n <= (size_t)count + 3);
        sv_tb_events_free(&ev);
    }
    free(buf);
    free(img);
}

int main(void) {
    char dir[256], sub[300];
    fmt_tmpdir(dir, sizeof dir, "tb");
    snprintf(sub, sizeof sub, "%s/run/tb", dir); /* created by sv_tb_open */
    test_bytes_and_roundtrip(sub);
    fmt_rmdir(dir);
    printf("test_tensorboard: ok\n");
    return 0;
}
