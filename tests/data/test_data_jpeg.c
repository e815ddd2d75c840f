/* JPEG + transforms: encode/decode round trip (gray, colour) with a PSNR bound, progressive
 * decode, DCT-scaled decode sizes, pixel guard; RandomResizedCrop boxes inside the image with
 * scale/ratio in range and the central fallback; eval box; region decodes equal full decodes
 * inside the request, also for sampling layouts only libjpeg itself writes (luma 2x4, chroma
 * with factors of its own) at every DCT scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "data/jpeg.h"
#include "data/synth.h"
#include "data/transform.h"

#include <jpeglib.h>
#include <turbojpeg.h>

static double psnr(const uint8_t *a, const uint8_t *b, size_t n) {
    double se = 0;
    for (size_t i = 0; i < n; i++) se += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return se == 0 ? 99 : 10 * log10(255.0 * 255.0 / (se / (double)n));
}

/* A colour JPEG with the given sampling factors (Y h,v, Cb h,v, Cr h,v), through libjpeg. */
static unsigned char *enc_sampled(const uint8_t *rgb, int w, int h, const int *f, unsigned long *len) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    jpeg_mem_dest(&c, &out, len);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    for (int k = 0; k < 3; k++) c.comp_info[k].h_samp_factor = f[2 * k], c.comp_info[k].v_samp_factor = f[2 * k + 1];
    jpeg_set_quality(&c, 88, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = (JSAMPROW)(rgb + (size_t)c.next_scanline * (size_t)w * 3);
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return out;
}

/* The whole image at 1/denom through plain libjpeg (every row read, no crop): the reference; one
 * channel of a colour file is Pillow's luma of the RGB decode. */
static uint8_t *dec_plain(const unsigned char *j, unsigned long len, int channels, int denom, int *fw, int *fh) {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    d.err = jpeg_std_error(&e);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, j, len);
    jpeg_read_header(&d, TRUE);
    const int dch = channels == 1 && d.num_components > 1 ? 3 : channels; /* colour for 1 channel: RGB, then L */
    d.out_color_space = dch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    d.scale_num = 1;
    d.scale_denom = (unsigned)denom;
    jpeg_start_decompress(&d);
    *fw = (int)d.output_width, *fh = (int)d.output_height;
    const size_t n = (size_t)*fw * (size_t)*fh;
    uint8_t *p = malloc(n * (size_t)dch);
    while (d.output_scanline < d.output_height) {
        JSAMPROW r = p + (size_t)d.output_scanline * (size_t)*fw * (size_t)dch;
        jpeg_read_scanlines(&d, &r, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    for (size_t i = 0; dch != channels && i < n; i++) /* Pillow's convert("L") */
        p[i] = (uint8_t)((p[3 * i] * 19595u + p[3 * i + 1] * 38470u + p[3 * i + 2] * 7471u + 0x8000u) >> 16);
    return p;
}

/* A random region (draw k, sv_rand_u64 keys salt .. salt + 3) of the JPEG at 1/denom through the
 * region decoder, against `full` (the whole image, fw x fh x ch): the rows inside the region that
 * differ; the region in reg (x0, y0, x1, y1). */
static int region_vs_full(sv_jpeg_ctx *jc, const unsigned char *jb, unsigned long jl, int ch, int denom,
                          const uint8_t *full, int fw, int fh, uint64_t k, uint64_t salt, int reg[4]) {
    int x0 = (int)(sv_rand_u64(k, salt) % (uint64_t)fw), y0 = (int)(sv_rand_u64(k, salt + 1) % (uint64_t)fh);
    int x1 = x0 + 1 + (int)(sv_rand_u64(k, salt + 2) % (uint64_t)(fw - x0));
    int y1 = y0 + 1 + (int)(sv_rand_u64(k, salt + 3) % (uint64_t)(fh - y0));
    sv_jpeg_region r;
    CHECK_OK(sv_jpeg_decode_region(jc, jb, jl, ch, denom, x0, y0, x1, y1, &r));
    CHECK(r.fw == fw && r.fh == fh && r.x0 <= x0 && r.y0 <= y0 && r.x0 + r.w >= x1 && r.y0 + r.h >= y1);
    int bad = 0;
    for (int y = y0; y < y1; y++)
        bad += memcmp(r.pix + ((size_t)(y - r.y0) * r.w + (size_t)(x0 - r.x0)) * ch, full + ((size_t)y * fw + x0) * ch,
                      (size_t)(x1 - x0) * ch) != 0;
    reg[0] = x0, reg[1] = y0, reg[2] = x1, reg[3] = y1;
    return bad;
}

int main(void) {
    enum { W = 120, H = 90 };
    static uint8_t pix[W * H * 3], copy[W * H * 3];
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    for (int ch = 1; ch <= 3; ch += 2)
        for (int prog = 0; prog < 2; prog++) {
            sv_synth_render(1, 5, 3, W, H, ch, pix);
            const uint8_t *j;
            size_t len;
            CHECK_OK(sv_jpeg_encode(&jc, pix, W, H, ch, 95, prog, &j, &len));
            uint8_t *enc = malloc(len);
            memcpy(enc, j, len);
            int w, h, comps;
            CHECK_OK(sv_jpeg_header(&jc, enc, len, &w, &h, &comps));
            CHECK(w == W && h == H && comps == ch);
            CHECK_OK(sv_jpeg_decode(&jc, enc, len, ch, 1, &w, &h));
            double p = psnr(jc.pix, pix, (size_t)W * H * ch);
            fprintf(stderr, "channels %d progressive %d: %zu bytes, PSNR %.1f dB\n", ch, prog, len, p);
            CHECK(p > (ch == 1 ? 38 : 27)); /* colour: 4:2:0 chroma on a noisy image */
            /* DCT-domain scaling gives ceil(W/d) x ceil(H/d) */
            CHECK_OK(sv_jpeg_decode(&jc, enc, len, 3, 4, &w, &h));
            CHECK(w == (W + 3) / 4 && h == (H + 3) / 4);
            /* truncated data is an error, never a crash */
            CHECK(sv_jpeg_decode(&jc, enc, len / 2, ch, 1, &w, &h) != SV_OK);
            /* the frame marker flipped to another coding (baseline SOF0/SOF2 -> arithmetic SOF9/
             * SOF10): the scan decodes to other pixels with no complaint until libjpeg meets the
             * entropy data it did not use at the end, which is an error like every warning */
            size_t sof = 2;
            while (sof + 1 < len && !(enc[sof] == 0xFF && (enc[sof + 1] == 0xC0 || enc[sof + 1] == 0xC2))) sof++;
            CHECK(sof + 1 < len);
            enc[sof + 1] = (uint8_t)(enc[sof + 1] + 9);
            sv_status bad = sv_jpeg_decode(&jc, enc, len, ch, 1, &w, &h);
            fprintf(stderr, "  SOF%d -> SOF%d: %s\n", enc[sof + 1] - 0xC9, enc[sof + 1] - 0xC0,
                    bad == SV_OK ? "decoded (wrong)" : sv_err_msg());
            CHECK(bad != SV_OK);
            sv_err_clear();
            /* the context decodes the next, valid image as if nothing had happened */
            enc[sof + 1] = (uint8_t)(enc[sof + 1] - 9);
            CHECK_OK(sv_jpeg_header(&jc, enc, len, &w, &h, &comps));
            CHECK_OK(sv_jpeg_decode(&jc, enc, len, ch, 1, &w, &h));
            CHECK(psnr(jc.pix, pix, (size_t)W * H * ch) == p);
            sv_jpeg_region rg;
            enc[sof + 1] = (uint8_t)(enc[sof + 1] + 9);
            CHECK(sv_jpeg_decode_region(&jc, enc, len, ch, 1, 0, 0, W, H, &rg) != SV_OK); /* the region decoder too */
            sv_err_clear();
            enc[sof + 1] = (uint8_t)(enc[sof + 1] - 9);
            CHECK_OK(sv_jpeg_decode_region(&jc, enc, len, ch, 1, 0, 0, W, H, &rg));
            free(enc);
        }
    /* not a JPEG */
    int w, h, comps;
    CHECK(sv_jpeg_header(&jc, (const uint8_t *)"hello world, not an image", 25, &w, &h, &comps) == SV_ERR_FORMAT);

    /* pixel guard is checked from the header before decoding */
    {
        sv_synth_render(1, 6, 0, W, H, 3, pix);
        const uint8_t *j;
        size_t len;
        CHECK_OK(sv_jpeg_encode(&jc, pix, W, H, 3, 90, 0, &j, &len));
        float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
        static float out[3 * 32 * 32];
        sv_resample_scratch rs = {0};
        sv_image_xform x = {.train = 1,
                            .key = 9,
                            .img = 32,
                            .channels = 3,
                            .scale_min = 0.08,
                            .scale_max = 1,
                            .ratio_min = 0.75,
                            .ratio_max = 4.0 / 3,
                            .hflip = 0.5,
                            .crop_pct = 0.875,
                            .max_pixels = (uint64_t)W * H - 1,
                            .mean = mean,
                            .std = std};
        CHECK(sv_load_image(&jc, &rs, j, len, &x, out) == SV_ERR_FORMAT);
        x.max_pixels = (uint64_t)W * H;
        CHECK_OK(sv_load_image(&jc, &rs, j, len, &x, out));
        for (int i = 0; i < 3 * 32 * 32; i++) CHECK(out[i] >= -1.0001f && out[i] <= 1.0001f);
        sv_resample_scratch_free(&rs);
    }

    /* RandomResizedCrop geometry over many keys and image shapes */
    int shapes[][2] = {{500, 375}, {375, 500}, {32, 32}, {1000, 40}, {40, 1000}, {7, 5}};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int IW = shapes[si][0], IH = shapes[si][1], fallbacks = 0;
        for (uint64_t k = 0; k < 2000; k++) {
            sv_box b;
            sv_rrc_box(sv_hash2(si, k), IW, IH, 0.08, 1.0, 0.75, 4.0 / 3, &b);
            CHECK(b.x >= 0 && b.y >= 0 && b.w >= 1 && b.h >= 1 && b.x + b.w <= IW && b.y + b.h <= IH);
            CHECK(b.x == floor(b.x) && b.w == floor(b.w));
            double area = b.w * b.h / ((double)IW * IH), ratio = b.w / b.h;
            int central = b.x == floor((IW - b.w) / 2) && b.y == floor((IH - b.h) / 2);
            int in_range = area >= 0.08 * 0.85 && area <= 1.0001 && ratio >= 0.75 * 0.85 && ratio <= 4.0 / 3 * 1.15;
            if (!in_range && IW * IH < 100) continue; /* rounding dominates on tiny images */
            if (!in_range) {
                if (!central) fprintf(stderr, "%dx%d box %g %g %g %g\n", IW, IH, b.x, b.y, b.w, b.h);
                CHECK(central); /* only the fallback may leave the ranges */
                fallbacks++;
            }
        }
        if (IW == 1000 || IW == 40) CHECK(fallbacks > 0); /* extreme aspect: fallback is reachable */
        if (IW == 500) CHECK(fallbacks == 0);
    }
    /* fallback exact values: 1000x40 (ratio 25 > 4/3) -> h = 40, w = round(40*4/3) = 53 */
    {
        sv_box b;
        int found = 0;
        for (uint64_t k = 0; k < 2000 && !found; k++) {
            sv_rrc_box(sv_hash2(3, k), 1000, 40, 0.9, 1.0, 0.75, 4.0 / 3, &b);
            if (b.h == 40 && b.w == 53) found = (b.x == (1000 - 53) / 2 && b.y == 0);
        }
        CHECK(found);
    }
    /* eval: 500x375, img 224, crop_pct .875 -> Resize(256): 341x256, CenterCrop at (58, 16) */
    {
        sv_box b;
        sv_eval_box(500, 375, 224, 0.875, &b);
        CHECK_CLOSE(b.x, 58 * 500.0 / 341, 1e-9);
        CHECK_CLOSE(b.y, 16 * 375.0 / 256, 1e-9);
        CHECK_CLOSE(b.w, 224 * 500.0 / 341, 1e-9);
        CHECK_CLOSE(b.h, 224 * 375.0 / 256, 1e-9);
    }
    /* region decode == full decode inside the request, for every chroma subsampling, baseline
     * and progressive, DCT scales, gray output of colour files, and cuts at any offset */
    {
        enum { RW = 157, RH = 101 };
        static uint8_t src[RW * RH * 3], full[RW * RH * 3];
        int samps[] = {TJSAMP_420, TJSAMP_422, TJSAMP_444, TJSAMP_440, TJSAMP_GRAY, TJSAMP_411};
        int checked = 0;
        for (int si = 0; si < 6; si++)
            for (int prog = 0; prog < 2; prog++) {
                sv_synth_render(7, (uint64_t)si, 1, RW, RH, 3, src);
                unsigned char *jb = NULL;
                unsigned long jl = 0;
                tjhandle tc = tjInitCompress(); /* fresh: a progressive scan script outlives the call */
                CHECK(tc != NULL);
                CHECK(tjCompress2(tc, src, RW, 0, RH, TJPF_RGB, &jb, &jl, samps[si], 88,
                                  prog ? TJFLAG_PROGRESSIVE : 0) == 0);
                for (int denom = 1; denom <= 4; denom *= 2)
                    for (int ch = 1; ch <= 3; ch += 2) {
                        int fw, fh;
                        CHECK_OK(sv_jpeg_decode(&jc, jb, jl, ch, denom, &fw, &fh));
                        memcpy(full, jc.pix, (size_t)fw * fh * ch);
                        for (uint64_t k = 0; k < 40; k++) {
                            int g[4], bad = region_vs_full(&jc, jb, jl, ch, denom, full, fw, fh, k, 0, g);
                            if (bad)
                                fprintf(stderr, "samp %d prog %d 1/%d ch %d: region %d,%d..%d,%d differs in %d rows\n",
                                        samps[si], prog, denom, ch, g[0], g[1], g[2], g[3], bad);
                            CHECK(bad == 0);
                            checked++;
                        }
                    }
                /* cut short anywhere (even below any region asked for) is an error */
                sv_jpeg_region r;
                CHECK(sv_jpeg_decode_region(&jc, jb, jl - jl / 4, 3, 1, 0, 0, 8, 8, &r) == SV_ERR_CORRUPT);
                CHECK(sv_jpeg_decode_region(&jc, jb, jl - 2, 3, 1, 0, 0, 8, 8, &r) == SV_ERR_CORRUPT);
                CHECK_OK(sv_jpeg_decode_region(&jc, jb, jl, 3, 1, 0, 0, 8, 8, &r));
                tjFree(jb);
                tjDestroy(tc);
            }
        fprintf(stderr, "region decodes checked against full decodes: %d\n", checked);
    }
    /* the same for layouts TurboJPEG does not name, against plain libjpeg decodes: a reduced DCT
     * scale with luma 2x4 / 4x2 or chroma factors of its own gave other pixels when rows were
     * skipped or columns cropped (up to 255 apart) */
    {
        enum { RW = 157, RH = 101 };
        static uint8_t src[RW * RH * 3];
        static const int lay[][6] = {{2, 4, 1, 1, 1, 1}, {4, 2, 1, 1, 1, 1}, {4, 1, 2, 1, 1, 1},
                                     {2, 2, 1, 2, 2, 1}, {1, 4, 1, 1, 1, 1}, {3, 2, 1, 1, 1, 1}};
        int checked = 0;
        for (int li = 0; li < 6; li++) {
            sv_synth_render(9, (uint64_t)li, 2, RW, RH, 3, src);
            unsigned long jl = 0;
            unsigned char *jb = enc_sampled(src, RW, RH, lay[li], &jl);
            for (int denom = 1; denom <= 4; denom *= 2)
                for (int ch = 1; ch <= 3; ch += 2) {
                    int fw, fh;
                    uint8_t *full = dec_plain(jb, jl, ch, denom, &fw, &fh);
                    for (uint64_t k = 0; k < 60; k++) {
                        int g[4], bad = region_vs_full(&jc, jb, jl, ch, denom, full, fw, fh, k, 4, g);
                        if (bad)
                            fprintf(stderr, "layout %d 1/%d ch %d: region %d,%d..%d,%d differs in %d rows\n", li, denom,
                                    ch, g[0], g[1], g[2], g[3], bad);
                        CHECK(bad == 0);
                        checked++;
                    }
                    free(full);
                }
            free(jb);
        }
        fprintf(stderr, "region decodes of libjpeg-only layouts checked against plain libjpeg: %d\n", checked);
    }
    /* a tables-only stream (quantisation table, no frame): TurboJPEG reports success without
     * writing the sizes, so whatever the caller's variables held came back as the image's size
     * (stack garbage reached a multi-exabyte allocation); it is an error, whatever they held */
    {
        uint8_t t[2 + 4 + 65 + 2] = {0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x43, 0x00};
        for (int i = 0; i < 64; i++) t[7 + i] = 1;
        t[71] = 0xFF, t[72] = 0xD9;
        int tw = 12345, th = 6789, tc = 0;
        CHECK(sv_jpeg_header(&jc, t, sizeof t, &tw, &th, &tc) == SV_ERR_FORMAT);
        tw = 12345, th = 6789;
        CHECK(sv_jpeg_decode(&jc, t, sizeof t, 3, 1, &tw, &th) == SV_ERR_FORMAT);
    }
    /* a colour JPEG for a 1-channel model: decoded as RGB, then Pillow's convert("L") luma (what
     * timm feeds such a model), not the file's Y channel (up to 34 levels apart on saturated
     * colours): the full decode and every region decode */
    {
        enum { CW = 61, CH = 45 };
        static uint8_t src[CW * CH * 3], rgb[CW * CH * 3];
        for (int i = 0; i < CW * CH; i++) /* saturated colours, where Y and Pillow's L differ most */
            src[3 * i] = (uint8_t)((i % 7) * 40), src[3 * i + 1] = (uint8_t)(255 - (i % 5) * 60),
                    src[3 * i + 2] = (uint8_t)((i % 3) * 120);
        const uint8_t *j;
        size_t len;
        CHECK_OK(sv_jpeg_encode(&jc, src, CW, CH, 3, 90, 0, &j, &len));
        uint8_t *enc = malloc(len);
        memcpy(enc, j, len);
        int fw, fh;
        CHECK_OK(sv_jpeg_decode(&jc, enc, len, 3, 1, &fw, &fh));
        memcpy(rgb, jc.pix, sizeof rgb);
        static uint8_t want[CW * CH];
        int ydiff = 0;
        for (int i = 0; i < CW * CH; i++)
            want[i] =
                (uint8_t)((rgb[3 * i] * 19595u + rgb[3 * i + 1] * 38470u + rgb[3 * i + 2] * 7471u + 0x8000u) >> 16);
        CHECK_OK(sv_jpeg_decode(&jc, enc, len, 1, 1, &fw, &fh));
        CHECK(fw == CW && fh == CH && !memcmp(jc.pix, want, sizeof want));
        for (uint64_t k = 0; k < 30; k++) {
            int g[4], bad = region_vs_full(&jc, enc, len, 1, 1, want, CW, CH, k, 8, g);
            CHECK(bad == 0);
        }
        /* the file's own Y channel is another image: the case tells the two apart */
        struct jpeg_decompress_struct d;
        struct jpeg_error_mgr e;
        d.err = jpeg_std_error(&e);
        jpeg_create_decompress(&d);
        jpeg_mem_src(&d, enc, len);
        jpeg_read_header(&d, TRUE);
        d.out_color_space = JCS_GRAYSCALE;
        jpeg_start_decompress(&d);
        static uint8_t yc[CW * CH];
        while (d.output_scanline < d.output_height) {
            JSAMPROW r = yc + (size_t)d.output_scanline * CW;
            jpeg_read_scanlines(&d, &r, 1);
        }
        jpeg_finish_decompress(&d);
        jpeg_destroy_decompress(&d);
        for (int i = 0; i < CW * CH; i++) ydiff = abs(yc[i] - want[i]) > ydiff ? abs(yc[i] - want[i]) : ydiff;
        CHECK(ydiff >= 2);
        fprintf(stderr, "colour JPEG for 1 channel: Pillow's luma (the Y channel is up to %d levels off)\n", ydiff);
        free(enc);
    }
    (void)copy;
    sv_jpeg_ctx_free(&jc);
    return 0;
}
