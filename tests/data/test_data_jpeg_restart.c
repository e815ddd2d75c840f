/* Restart markers (data/jpeg_restart.h): sv_jpeg_add_restarts keeps every pixel (4:2:0, 4:2:2,
 * 4:4:4 and grayscale, sizes that are not whole MCUs, a progressive input); region decodes of
 * the rewritten files cut the stream at its restart markers (counted) and give, inside every
 * requested region, the pixels of a full decode, for intervals of 1 and 4 MCUs, of whole and
 * double MCU rows, and of a length that fits neither (not cut); restart markers out of sequence
 * are not cut around but reported by libjpeg; bad arguments and input are refused. */
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "check.h"
#include "core/rng.h"
#include "data/jpeg.h"
#include "data/jpeg_restart.h"
#include "data/synth.h"
#include "scan_jpeg.h"

typedef struct img {
    uint8_t *jpg;
    size_t len;
} img;

static img copy_of(const uint8_t *p, size_t n) {
    img m = {malloc(n), n};
    CHECK(m.jpg != NULL);
    memcpy(m.jpg, p, n);
    return m;
}

/* A JPEG of a synthetic picture with chroma subsampling ss (TJSAMP_*). */
static img encode(int w, int h, int ss, int progressive, uint64_t seed) {
    const int ch = ss == TJSAMP_GRAY ? 1 : 3;
    uint8_t *pix = malloc((size_t)w * h * ch);
    CHECK(pix != NULL);
    sv_synth_render(seed, 1, (int)(seed % 7), w, h, ch, pix);
    tjhandle t = tjInitCompress();
    CHECK(t != NULL);
    unsigned char *out = NULL;
    unsigned long len = 0;
    CHECK(tjCompress2(t, pix, w, 0, h, ch == 1 ? TJPF_GRAY : TJPF_RGB, &out, &len, ss, 88,
                      progressive ? TJFLAG_PROGRESSIVE : 0) == 0);
    img m = copy_of(out, len);
    tjFree(out);
    tjDestroy(t);
    free(pix);
    return m;
}

/* m rewritten with restart markers (sv_jpeg_add_restarts), in a buffer of its own. */
static img restarts_of(sv_jpeg_ctx *c, const img *m, int mcus, int fit_row) {
    const uint8_t *out;
    size_t len;
    CHECK_OK(sv_jpeg_add_restarts(c, m->jpg, m->len, mcus, fit_row, &out, &len));
    return copy_of(out, len);
}

/* Full decode into a fresh buffer. */
static uint8_t *decode_full(sv_jpeg_ctx *c, const img *m, int ch, int *w, int *h) {
    CHECK_OK(sv_jpeg_decode(c, m->jpg, m->len, ch, 1, w, h));
    size_t n = (size_t)*w * *h * ch;
    uint8_t *p = malloc(n);
    CHECK(p != NULL);
    memcpy(p, c->pix, n);
    return p;
}

/* Number of restart markers in a stream (FF D0..D7). */
static int count_rst(const img *m) {
    int k = 0;
    for (size_t i = 0; i + 1 < m->len; i++)
        if (m->jpg[i] == 0xFF && m->jpg[i + 1] >= 0xD0 && m->jpg[i + 1] <= 0xD7) k++;
    return k;
}

/* Regions of `m` (restart intervals of `mcus`) against the full decode `ref` (w x h x ch); returns
 * how many of the decodes were cut at restart markers. */
static unsigned long check_regions(const img *m, const uint8_t *ref, int w, int h, int ch, uint64_t seed) {
    sv_jpeg_ctx c;
    sv_jpeg_ctx_init(&c);
    unsigned long before = sv_jpeg_restart_cuts();
    for (int k = 0; k < 60; k++) {
        int x0 = (int)(sv_rand_u64(seed, 4 * k) % (uint64_t)w), y0 = (int)(sv_rand_u64(seed, 4 * k + 1) % (uint64_t)h);
        int x1 = x0 + 1 + (int)(sv_rand_u64(seed, 4 * k + 2) % (uint64_t)(w - x0));
        int y1 = y0 + 1 + (int)(sv_rand_u64(seed, 4 * k + 3) % (uint64_t)(h - y0));
        if (k == 0) x0 = 0, y0 = 0, x1 = w, y1 = h;         /* the whole image */
        if (k == 1) x0 = w - 1, y0 = h - 1, x1 = w, y1 = h; /* the last pixel */
        sv_jpeg_region r;
        CHECK_OK(sv_jpeg_decode_region(&c, m->jpg, m->len, ch, 1, x0, y0, x1, y1, &r));
        CHECK(r.fw == w && r.fh == h);
        CHECK(r.x0 <= x0 && r.y0 <= y0 && r.x0 + r.w >= x1 && r.y0 + r.h >= y1);
        for (int y = y0; y < y1; y++) {
            const uint8_t *got = r.pix + ((size_t)(y - r.y0) * r.w + (size_t)(x0 - r.x0)) * ch;
            const uint8_t *want = ref + ((size_t)y * w + x0) * ch;
            if (memcmp(got, want, (size_t)(x1 - x0) * ch)) {
                fprintf(stderr, "region [%d,%d)x[%d,%d) of %dx%d: row %d differs from the full decode\n", x0, x1, y0,
                        y1, w, h, y);
                for (int e = 0; e < (x1 - x0) * ch && e < 12; e++) fprintf(stderr, "%d/%d ", got[e], want[e]);
                fprintf(stderr, "region %d %d %d %d\n", r.x0, r.y0, r.w, r.h);
                exit(1);
            }
        }
    }
    sv_jpeg_ctx_free(&c);
    return sv_jpeg_restart_cuts() - before;
}

static void check_image(int w, int h, int ss, int mcu_w, uint64_t seed) {
    const int ch = ss == TJSAMP_GRAY ? 1 : 3;
    img plain = encode(w, h, ss, 0, seed);
    sv_jpeg_ctx c;
    sv_jpeg_ctx_init(&c);
    int fw, fh;
    uint8_t *ref = decode_full(&c, &plain, ch, &fw, &fh);
    CHECK(fw == w && fh == h);
    const int mpr = (w + mcu_w - 1) / mcu_w;
    /* 1 and 4 MCUs, a whole and a double MCU row, and a length that fits neither */
    const int intervals[] = {1, 4, mpr, 2 * mpr, mpr + 1};
    for (size_t t = 0; t < sizeof intervals / sizeof intervals[0]; t++) {
        const int ri = intervals[t];
        const int aligned = mpr % ri == 0 || ri % mpr == 0;
        if (t == 4 && aligned) continue;
        img rst = restarts_of(&c, &plain, ri, 0);
        CHECK(count_rst(&rst) > 0);
        int rw, rh;
        uint8_t *full = decode_full(&c, &rst, ch, &rw, &rh);
        CHECK(rw == w && rh == h && !memcmp(full, ref, (size_t)w * h * ch)); /* lossless */
        unsigned long cuts = check_regions(&rst, ref, w, h, ch, seed + t);
        printf("%dx%d %s, restart every %d MCUs: %zu -> %zu bytes, %lu of 60 regions cut\n", w, h,
               ss == TJSAMP_GRAY      ? "gray"
                   : ss == TJSAMP_444 ? "4:4:4"
                   : ss == TJSAMP_422 ? "4:2:2"
                                      : "4:2:0",
               ri, plain.len, rst.len, cuts);
        if (aligned)
            CHECK(cuts >= 40); /* most random regions skip rows or columns */
        else
            CHECK(cuts == 0);
        free(full);
        free(rst.jpg);
    }
    /* fit_row: at most 4 MCUs, and always an interval the decoder cuts at */
    {
        img rst = restarts_of(&c, &plain, 4, 1);
        int want = 4;
        while (mpr % want) want--;
        CHECK(count_rst(&rst) ==
              (mpr / want) * ((h + (ss == TJSAMP_420 ? 16 : 8) - 1) / (ss == TJSAMP_420 ? 16 : 8)) - 1);
        CHECK(check_regions(&rst, ref, w, h, ch, seed + 7) >= 40);
        free(rst.jpg);
    }
    /* without restart markers nothing is cut */
    CHECK(check_regions(&plain, ref, w, h, ch, seed + 9) == 0);
    free(ref);
    free(plain.jpg);
    sv_jpeg_ctx_free(&c);
}

int main(void) {
    check_image(500, 375, TJSAMP_420, 16, 1);
    check_image(201, 147, TJSAMP_420, 16, 2); /* not whole MCUs either way */
    check_image(190, 77, TJSAMP_422, 16, 3);
    check_image(131, 95, TJSAMP_444, 8, 4);
    check_image(97, 61, TJSAMP_GRAY, 8, 5);

    sv_jpeg_ctx c;
    sv_jpeg_ctx_init(&c);
    /* a progressive input comes out sequential with restart markers, same pixels */
    {
        img prog = encode(160, 120, TJSAMP_420, 1, 6);
        int w, h;
        uint8_t *ref = decode_full(&c, &prog, 3, &w, &h);
        img rst = restarts_of(&c, &prog, 2, 0);
        uint8_t *full = decode_full(&c, &rst, 3, &w, &h);
        CHECK(!memcmp(full, ref, (size_t)w * h * 3));
        CHECK(check_regions(&rst, ref, w, h, 3, 61) >= 40);
        free(full), free(ref), free(prog.jpg), free(rst.jpg);
    }
    /* restart markers out of sequence: the stream is not cut, and libjpeg reports the marker */
    {
        img plain = encode(320, 240, TJSAMP_420, 0, 7);
        img rst = restarts_of(&c, &plain, 20, 0); /* one MCU row each */
        int seen = 0;
        for (size_t i = 0; i + 1 < rst.len; i++)
            if (rst.jpg[i] == 0xFF && rst.jpg[i + 1] >= 0xD0 && rst.jpg[i + 1] <= 0xD7 && ++seen == 3) {
                rst.jpg[i + 1] = 0xD6; /* the third marker should be RST2 */
                break;
            }
        CHECK(seen == 3);
        unsigned long before = sv_jpeg_restart_cuts();
        sv_jpeg_region r;
        sv_status st = sv_jpeg_decode_region(&c, rst.jpg, rst.len, 3, 1, 40, 200, 80, 230, &r);
        CHECK(st == SV_ERR_CORRUPT);
        CHECK(strstr(sv_err_msg(), "RST") != NULL);
        CHECK(sv_jpeg_restart_cuts() == before);
        free(plain.jpg), free(rst.jpg);
    }
    /* 8 markers lost in a row: the numbering (modulo 8) still runs in sequence, but the intervals
     * after them are other parts of the image; the whole scan is counted, so no cut, and libjpeg
     * reports the damage (before: the region decoded silently from the wrong intervals) */
    {
        img plain = encode(256, 256, TJSAMP_420, 0, 9);
        img rst = restarts_of(&c, &plain, 1, 0);
        size_t w = 0;
        int seen = 0;
        for (size_t i = 0; i < rst.len; i++) {
            if (i + 1 < rst.len && rst.jpg[i] == 0xFF && rst.jpg[i + 1] >= 0xD0 && rst.jpg[i + 1] <= 0xD7 &&
                ++seen >= 20 && seen < 28) {
                i++; /* drop markers 20..27 */
                continue;
            }
            rst.jpg[w++] = rst.jpg[i];
        }
        CHECK(seen == 255);
        rst.len = w;
        unsigned long before = sv_jpeg_restart_cuts();
        sv_jpeg_region r;
        CHECK(sv_jpeg_decode_region(&c, rst.jpg, rst.len, 3, 1, 100, 100, 140, 140, &r) == SV_ERR_CORRUPT);
        CHECK(sv_jpeg_restart_cuts() == before);
        free(plain.jpg), free(rst.jpg);
    }
    /* a request running past the right edge: the cut keeps two MCUs of width from the edge (a
     * 3-pixel cut of the partial last MCU was upsampled by replication: other pixels) */
    {
        img plain = encode(35, 64, TJSAMP_420, 0, 10);
        int w, h;
        uint8_t *ref = decode_full(&c, &plain, 3, &w, &h);
        img rst = restarts_of(&c, &plain, 1, 0);
        unsigned long before = sv_jpeg_restart_cuts();
        sv_jpeg_region r;
        CHECK_OK(sv_jpeg_decode_region(&c, rst.jpg, rst.len, 3, 1, 34, 40, 70, 48, &r));
        CHECK(sv_jpeg_restart_cuts() == before + 1);
        for (int y = 40; y < 48; y++)
            CHECK(!memcmp(r.pix + ((size_t)(y - r.y0) * r.w + (size_t)(34 - r.x0)) * 3, ref + ((size_t)y * w + 34) * 3,
                          3));
        free(ref), free(plain.jpg), free(rst.jpg);
    }
    /* a progressive file whose scans leave coefficient bits unsent decodes through libjpeg's
     * block smoothing: a sequential rewrite would change its pixels, so it is refused */
    {
        uint8_t *pj;
        size_t plen;
        CHECK(scan_jpeg_make(64, 48, -1, 0, &pj, &plen) == 0);
        int w, h;
        CHECK_OK(sv_jpeg_decode(&c, pj, plen, 1, 1, &w, &h)); /* a valid file */
        const uint8_t *out;
        size_t len;
        CHECK(sv_jpeg_add_restarts(&c, pj, plen, 4, 1, &out, &len) == SV_ERR_UNSUPPORTED);
        CHECK(strstr(sv_err_msg(), "coefficient bits unsent") != NULL);
        free(pj);
    }
    /* refused: interval length, not a JPEG, a truncated one */
    {
        img plain = encode(64, 48, TJSAMP_420, 0, 8);
        const uint8_t *out;
        size_t len;
        CHECK(sv_jpeg_add_restarts(&c, plain.jpg, plain.len, 0, 0, &out, &len) == SV_ERR_INVALID);
        CHECK(sv_jpeg_add_restarts(&c, plain.jpg, plain.len, 70000, 0, &out, &len) == SV_ERR_INVALID);
        static const uint8_t junk[] = "not a jpeg at all";
        CHECK(sv_jpeg_add_restarts(&c, junk, sizeof junk, 4, 0, &out, &len) == SV_ERR_FORMAT);
        CHECK(sv_jpeg_add_restarts(&c, plain.jpg, plain.len / 2, 4, 0, &out, &len) == SV_ERR_CORRUPT);
        printf("truncated input: %s\n", sv_err_msg());
        free(plain.jpg);
    }
    sv_jpeg_ctx_free(&c);
    printf("ok\n");
    return 0;
}
