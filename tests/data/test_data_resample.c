/* Resampling (data/resample.h): bilinear and bicubic against a reference evaluated in double
 * straight from the kernel definitions (no fixed point, no 8-bit intermediate), for shrinking,
 * enlarging, sub-pixel boxes with and without a clip rectangle; the clip keeps pixels outside
 * from mattering; flip mirrors exactly; a ramp stays a ramp; constants stay constant; the
 * bicubic kernel is Pillow's a = -0.5 (a = -0.75 is measurably further away); normalisation;
 * the vectorised paths equal the portable ones (on an AVX-512 VBMI CPU the 3-channel horizontal
 * pass in groups of 5, 4 or 3 outputs, and the AVX2 pass where a group's taps span more than 64
 * bytes);
 * sv_load_image with each interpolation; an eval crop just under 2x the output is not DCT-scaled. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "data/jpeg.h"
#include "data/resample.h"
#include "data/synth.h"
#include "data/transform.h"

static double kernel(double x, int bicubic, double a) {
    x = fabs(x);
    if (!bicubic) return x < 1 ? 1 - x : 0;
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return a * (x * x * x - 5 * x * x + 8 * x - 4);
    return 0;
}

/* Normalised weights of source pixels [lo, hi) for output o of an axis: pixel centres i + 0.5,
 * kernel stretched by the scale when shrinking. */
static void axis_weights(double in0, double len, int out, int o, int lo, int hi, int bicubic, double a, double *w) {
    double scale = len / out, fs = scale > 1 ? scale : 1, center = in0 + (o + 0.5) * scale, sum = 0;
    for (int i = lo; i < hi; i++) sum += w[i - lo] = kernel((i + 0.5 - center) / fs, bicubic, a);
    for (int i = lo; i < hi; i++) w[i - lo] /= sum;
}

/* Reference output (out x out x c, double) of box b over src (W x H x c) clipped to clip. */
static void reference(const uint8_t *src, int W, int c, const sv_box *b, const int clip[4], int out, int bicubic,
                      double a, double *ref) {
    int nw = clip[2] - clip[0], nh = clip[3] - clip[1];
    double *wx = malloc(sizeof(double) * (size_t)nw * out), *wy = malloc(sizeof(double) * (size_t)nh * out);
    for (int o = 0; o < out; o++) {
        axis_weights(b->x, b->w, out, o, clip[0], clip[2], bicubic, a, wx + (size_t)o * nw);
        axis_weights(b->y, b->h, out, o, clip[1], clip[3], bicubic, a, wy + (size_t)o * nh);
    }
    for (int Y = 0; Y < out; Y++)
        for (int X = 0; X < out; X++)
            for (int ch = 0; ch < c; ch++) {
                double s = 0;
                for (int y = 0; y < nh; y++) {
                    double ky = wy[(size_t)Y * nh + y];
                    if (ky == 0) continue;
                    for (int x = 0; x < nw; x++)
                        s += ky * wx[(size_t)X * nw + x] * src[((size_t)(y + clip[1]) * W + (x + clip[0])) * c + ch];
                }
                ref[((size_t)Y * out + X) * c + ch] = s;
            }
    free(wx);
    free(wy);
}

/* Plan + run; the portable loops must give the same bytes as the selected (vectorised) ones. */
static void run(sv_resample_scratch *s, const uint8_t *src, int W, int c, const sv_box *b, const int clip[4], int out,
                int flip, sv_interp interp) {
    static uint8_t portable[64 * 64 * 3];
    CHECK_OK(sv_resample_plan(s, b, clip[0], clip[1], clip[2], clip[3], out, c, flip, interp));
    CHECK(s->x0 >= clip[0] && s->y0 >= clip[1] && s->x1 <= clip[2] && s->y1 <= clip[3]);
    sv_resample_run_portable(s, src, 0, 0, (size_t)W * c);
    size_t n = (size_t)out * out * c;
    CHECK(n <= sizeof portable);
    memcpy(portable, s->img, n);
    sv_resample_run(s, src, 0, 0, (size_t)W * c);
    CHECK(!memcmp(portable, s->img, n));
}

int main(void) {
    enum { W = 96, H = 80 };
    /* textured source with values in [30, 225]: no clipping anywhere, so the reference needs none */
    static uint8_t src[W * H * 3 + 16], alt[W * H * 3 + 16];
    sv_synth_render(5, 1, 2, W, H, 3, src);
    for (int i = 0; i < W * H * 3; i++) src[i] = (uint8_t)(30 + src[i] * 195 / 255);
    sv_resample_scratch s = {0};
    static double ref[64 * 64 * 3], ref75[64 * 64 * 3];
    struct {
        sv_box b;
        int clip[4], out;
    } cases[] = {
        {{0, 0, W, H}, {0, 0, W, H}, 37},            /* shrink 2.6x / 2.2x */
        {{10, 7, 61, 50}, {10, 7, 71, 57}, 29},      /* crop then resize: clip = crop */
        {{10.3, 7.6, 43.2, 41.7}, {0, 0, W, H}, 31}, /* resize then crop: sub-pixel box */
        {{20, 30, 17, 13}, {20, 30, 37, 43}, 64},    /* enlarge 3.8x / 4.9x */
        {{3, 2, 90, 20}, {0, 0, W, H}, 24},          /* different scales per axis */
        {{0, 0, W, H}, {0, 0, W, H}, 5},             /* shrink 19x: taps past the VBMI pass's 64-byte window */
    };
    for (int bic = 0; bic < 2; bic++)
        for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
            int out = cases[ci].out;
            run(&s, src, W, 3, &cases[ci].b, cases[ci].clip, out, 0, bic ? SV_INTERP_BICUBIC : SV_INTERP_BILINEAR);
            reference(src, W, 3, &cases[ci].b, cases[ci].clip, out, bic, -0.5, ref);
            reference(src, W, 3, &cases[ci].b, cases[ci].clip, out, bic, -0.75, ref75);
            double maxd = 0, sumd = 0, max75 = 0;
            size_t n = (size_t)out * out * 3;
            for (size_t e = 0; e < n; e++) {
                double d = fabs(s.img[e] - ref[e]);
                maxd = d > maxd ? d : maxd;
                sumd += d;
                d = fabs(s.img[e] - ref75[e]);
                max75 = d > max75 ? d : max75;
            }
            fprintf(stderr, "%s case %zu: max |err| %.3f, mean %.3f (vs a=-0.75: max %.3f)\n",
                    bic ? "bicubic" : "bilinear", ci, maxd, sumd / (double)n, max75);
            /* two 8-bit roundings (after each pass, as Pillow) bound the error */
            CHECK(maxd <= (bic ? 1.3 : 1.0));
            CHECK(sumd / (double)n < 0.4);
            if (bic && cases[ci].b.w / out < 2) CHECK(max75 > 1.5); /* the kernel's a is visible */
            /* flip: exact mirror */
            static uint8_t unflipped[64 * 64 * 3];
            memcpy(unflipped, s.img, n);
            run(&s, src, W, 3, &cases[ci].b, cases[ci].clip, out, 1, bic ? SV_INTERP_BICUBIC : SV_INTERP_BILINEAR);
            for (int y = 0; y < out; y++)
                for (int x = 0; x < out; x++)
                    CHECK(
                        !memcmp(s.img + ((size_t)y * out + x) * 3, unflipped + ((size_t)y * out + out - 1 - x) * 3, 3));
            /* pixels outside the clip rectangle are never read */
            memcpy(alt, src, sizeof src);
            const int *cl = cases[ci].clip;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    if (x < cl[0] || x >= cl[2] || y < cl[1] || y >= cl[3])
                        memset(alt + ((size_t)y * W + x) * 3, (x * 7 + y * 13) & 255, 3);
            run(&s, alt, W, 3, &cases[ci].b, cases[ci].clip, out, 1, bic ? SV_INTERP_BICUBIC : SV_INTERP_BILINEAR);
            for (int y = 0; y < out; y++)
                for (int x = 0; x < out; x++)
                    CHECK(
                        !memcmp(s.img + ((size_t)y * out + x) * 3, unflipped + ((size_t)y * out + out - 1 - x) * 3, 3));
        }
    /* bicubic and bilinear really differ on texture */
    {
        int clip[4] = {0, 0, W, H};
        sv_box b = {20, 30, 17, 13};
        static uint8_t bl[40 * 40 * 3];
        run(&s, src, W, 3, &b, clip, 40, 0, SV_INTERP_BILINEAR);
        memcpy(bl, s.img, sizeof bl);
        run(&s, src, W, 3, &b, clip, 40, 0, SV_INTERP_BICUBIC);
        int maxd = 0;
        for (size_t e = 0; e < sizeof bl; e++) maxd = abs(bl[e] - s.img[e]) > maxd ? abs(bl[e] - s.img[e]) : maxd;
        fprintf(stderr, "bicubic vs bilinear, 2.4x enlarged: max difference %d\n", maxd);
        CHECK(maxd >= 4);
    }
    /* 1 channel: a horizontal ramp enlarged 2x stays a ramp (inside), edges clamp */
    {
        enum { S = 16, O = 32 };
        static uint8_t ramp[S * S + 16];
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) ramp[y * S + x] = (uint8_t)(10 * x);
        int clip[4] = {0, 0, S, S};
        sv_box b = {0, 0, S, S};
        run(&s, ramp, S, 1, &b, clip, O, 0, SV_INTERP_BILINEAR);
        for (int y = 0; y < O; y++)
            for (int x = 0; x < O; x++) {
                double sx = (x + 0.5) / 2 - 0.5;
                double want = sx < 0 ? 0 : sx > S - 1 ? 10 * (S - 1) : 10 * sx;
                CHECK(fabs(s.img[y * O + x] - want) <= 0.5 + 1e-9);
            }
        /* a constant stays constant, shrinking or enlarging, either kernel */
        memset(ramp, 77, sizeof ramp);
        sv_box c1 = {1.5, 2.25, 13.0, 11.5}, c2 = {3, 3, 5, 5};
        for (int bic = 0; bic < 2; bic++) {
            run(&s, ramp, S, 1, &c1, clip, 5, 0, (sv_interp)bic);
            for (int i = 0; i < 25; i++) CHECK(s.img[i] == 77);
            run(&s, ramp, S, 1, &c2, clip, 23, 1, (sv_interp)bic);
            for (int i = 0; i < 23 * 23; i++) CHECK(s.img[i] == 77);
        }
    }
    /* normalisation: (v/255 - mean) / std into CHW; the vectorised body (8 pixels a step) and
     * the scalar tail give the same float for the same byte */
    {
        enum { NS = 7, NP = NS * NS };
        uint8_t px[NP * 3];
        for (int i = 0; i < NP * 3; i++) px[i] = (uint8_t)sv_rand_u64(77, (uint64_t)i);
        px[0] = px[3 * (NP - 1)] = 0;
        px[1] = px[3 * (NP - 1) + 1] = 255;
        px[2] = px[3 * (NP - 1) + 2] = 128;
        float mean[3] = {0.5f, 0.25f, 0.125f}, std[3] = {0.5f, 0.25f, 2.f}, o[NP * 3];
        sv_normalize_u8(px, NS, 3, mean, std, o);
        float op[NP * 3];
        sv_normalize_u8_portable(px, NS, 3, mean, std, op);
        CHECK(!memcmp(o, op, sizeof o));
        for (int p = 0; p < NP; p++)
            for (int ch = 0; ch < 3; ch++)
                CHECK_CLOSE(o[ch * NP + p], (px[p * 3 + ch] / 255.0 - mean[ch]) / std[ch], 1e-5);
        for (int ch = 0; ch < 3; ch++) CHECK(o[ch * NP] == o[ch * NP + NP - 1]);
        sv_normalize_u8(px, NS, 1, mean, std, o); /* 1 channel: the first NP bytes */
        for (int p = 0; p < NP; p++) CHECK_CLOSE(o[p], (px[p] / 255.0 - mean[0]) / std[0], 1e-5);
    }
    /* sv_load_image with each interpolation, train and eval: in range, and the two differ */
    {
        enum { JW = 200, JH = 150, IMG = 48 };
        static uint8_t pix[JW * JH * 3];
        sv_synth_render(3, 9, 1, JW, JH, 3, pix);
        sv_jpeg_ctx jc;
        sv_jpeg_ctx_init(&jc);
        const uint8_t *j;
        size_t len;
        CHECK_OK(sv_jpeg_encode(&jc, pix, JW, JH, 3, 92, 0, &j, &len));
        uint8_t *enc = malloc(len);
        memcpy(enc, j, len);
        float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
        static float out[2][3 * IMG * IMG];
        for (int train = 0; train < 2; train++) {
            for (int bic = 0; bic < 2; bic++) {
                sv_image_xform x = {.train = train,
                                    .key = 11,
                                    .img = IMG,
                                    .channels = 3,
                                    .scale_min = 0.08,
                                    .scale_max = 1,
                                    .ratio_min = 0.75,
                                    .ratio_max = 4.0 / 3,
                                    .hflip = 0.5,
                                    .crop_pct = 0.875,
                                    .max_pixels = 1u << 30,
                                    .mean = mean,
                                    .std = std,
                                    .interp = bic ? SV_INTERP_BICUBIC : SV_INTERP_BILINEAR};
                CHECK_OK(sv_load_image(&jc, &s, enc, len, &x, out[bic]));
                for (int i = 0; i < 3 * IMG * IMG; i++) CHECK(out[bic][i] >= -1.0001f && out[bic][i] <= 1.0001f);
            }
            double maxd = 0;
            for (int i = 0; i < 3 * IMG * IMG; i++) maxd = fmax(maxd, fabs(out[0][i] - out[1][i]));
            CHECK(maxd > 0.02);
        }
        free(enc);
        sv_jpeg_ctx_free(&jc);
    }
    /* eval of an odd-sized image whose crop is just under 2 x the output (71 x 71 at img 32,
     * crop_pct 0.875: a 63.1-pixel crop): no DCT scaling, so the pixels are a full decode's
     * resampled (Pillow's): ceil(71 / 2) = 36 once let scale 1/2 through */
    {
        enum { JS = 71, IMG = 32 };
        static uint8_t pix[JS * JS * 3];
        sv_synth_render(4, 2, 1, JS, JS, 3, pix);
        sv_jpeg_ctx jc;
        sv_jpeg_ctx_init(&jc);
        const uint8_t *j;
        size_t len;
        CHECK_OK(sv_jpeg_encode(&jc, pix, JS, JS, 3, 92, 0, &j, &len));
        uint8_t *enc = malloc(len);
        memcpy(enc, j, len);
        float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
        static float got[3 * IMG * IMG], want[3 * IMG * IMG];
        sv_image_xform x = {.img = IMG,
                            .channels = 3,
                            .crop_pct = 0.875,
                            .max_pixels = 1u << 30,
                            .mean = mean,
                            .std = std,
                            .interp = SV_INTERP_BILINEAR};
        CHECK_OK(sv_load_image(&jc, &s, enc, len, &x, got));
        int fw, fh;
        CHECK_OK(sv_jpeg_decode(&jc, enc, len, 3, 1, &fw, &fh));
        CHECK(fw == JS && fh == JS);
        sv_box b;
        sv_eval_box(JS, JS, IMG, 0.875, &b);
        CHECK(b.w < 2.0 * IMG);
        CHECK_OK(sv_resample_plan(&s, &b, 0, 0, JS, JS, IMG, 3, 0, SV_INTERP_BILINEAR));
        sv_resample_run(&s, jc.pix, 0, 0, (size_t)JS * 3);
        sv_normalize_u8(s.img, IMG, 3, mean, std, want);
        CHECK(!memcmp(got, want, sizeof got));
        free(enc);
        sv_jpeg_ctx_free(&jc);
    }
    sv_resample_scratch_free(&s);
    return 0;
}
