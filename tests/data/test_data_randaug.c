/* RandAugment (data/randaug.h): every op on tiny hand-made images against values worked out by
 * hand from the op's definition; magnitude 0 leaves the magnitude-driven ops as the identity;
 * sv_randaug is a pure function of its key; through the loader (JPEG folder and synthetic
 * sources, bicubic) batches are identical at 1 and 3 worker threads and per sample identical at
 * world sizes 1 and 2, and RandAugment changes the images. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/loader.h"
#include "data/randaug.h"
#include "data/synth.h"

enum { S = 20 };
static uint8_t img[S * S * 3], orig[S * S * 3], scratch[S * S * 3];
static const uint8_t fill3[3] = {1, 2, 3};

static uint8_t *px(uint8_t *im, int side, int c, int x, int y) { return im + ((size_t)y * side + x) * c; }

static void random_image(uint64_t seed, int n) {
    for (int i = 0; i < n; i++) img[i] = (uint8_t)sv_rand_u64(seed, (uint64_t)i);
    memcpy(orig, img, (size_t)n);
}

static void op(sv_ra_op o, double m, int neg, int side, int c) {
    sv_randaug_apply(o, m, neg, img, side, c, fill3, scratch);
}

int main(void) {
    /* Invert, Posterize, Solarize, SolarizeAdd on chosen values (1 channel) */
    {
        const uint8_t v[8] = {0, 20, 100, 120, 127, 128, 0xB7, 255};
        memcpy(img, v, 8);
        op(SV_RA_INVERT, 0, 0, 2, 2); /* 2x2 image of 2 channels = the 8 bytes */
        for (int i = 0; i < 8; i++) CHECK(img[i] == 255 - v[i]);
        memcpy(img, v, 8);
        op(SV_RA_POSTERIZE, 10, 0, 2, 2); /* keep 4 bits */
        CHECK(img[6] == 0xB0 && img[7] == 0xF0 && img[1] == 16 && img[4] == 0x70);
        memcpy(img, v, 8);
        op(SV_RA_POSTERIZE, 5, 0, 2, 2); /* keep 8 - round(2) = 6 bits */
        CHECK(img[6] == 0xB4 && img[7] == 0xFC && img[1] == 20 && img[4] == 0x7C);
        /* timm's posterize outside 1..7 bits (a timm-mapped layer past magnitude 10): 8 or more
         * keep the image, 0 or fewer clear it (Pillow's mask covers every bit) */
        for (int bits = -30; bits <= 30; bits++) {
            memcpy(img, v, 8);
            sv_randaug_layer_apply(&(sv_ra_layer){SV_RA_POSTERIZE, bits, SV_RA_NEAREST}, img, 2, 2, fill3, scratch);
            for (int i = 0; i < 8 && (bits <= 0 || bits >= 8); i++) CHECK(img[i] == (bits >= 8 ? v[i] : 0));
        }
        memcpy(img, v, 8);
        op(SV_RA_SOLARIZE, 5, 0, 2, 2); /* threshold 128: v >= 128 inverted */
        CHECK(img[4] == 127 && img[5] == 127 && img[6] == 255 - 0xB7 && img[7] == 0 && img[2] == 100);
        memcpy(img, v, 8);
        op(SV_RA_SOLARIZE_ADD, 10, 0, 2, 2); /* +110 below 128, clipped */
        CHECK(img[0] == 110 && img[1] == 130 && img[2] == 210 && img[3] == 230 && img[4] == 237 && img[5] == 128 &&
              img[7] == 255);
    }
    /* Translate by k = 0.45 * (m/10) * side = 9 pixels (m = 10, side 20): out(x) = in(x + 9) */
    for (int neg = 0; neg < 2; neg++)
        for (int axis = 0; axis < 2; axis++) {
            random_image(1, S * S * 3);
            op(axis ? SV_RA_TRANSLATE_Y : SV_RA_TRANSLATE_X, 10, neg, S, 3);
            int k = neg ? -9 : 9;
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    int sx = axis ? x : x + k, sy = axis ? y + k : y;
                    const uint8_t *want = sx >= 0 && sx < S && sy >= 0 && sy < S ? px(orig, S, 3, sx, sy) : fill3;
                    CHECK(!memcmp(px(img, S, 3, x, y), want, 3));
                }
        }
    /* Rotate 90 degrees (m = 30) counter-clockwise about the centre: out(x, y) = in(S-1-y, x);
     * negated (clockwise): out(x, y) = in(y, S-1-x). Exact through the general affine path. */
    for (int neg = 0; neg < 2; neg++) {
        random_image(2, S * S * 3);
        op(SV_RA_ROTATE, 30, neg, S, 3);
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++)
                CHECK(
                    !memcmp(px(img, S, 3, x, y), neg ? px(orig, S, 3, y, S - 1 - x) : px(orig, S, 3, S - 1 - y, x), 3));
    }
    /* ShearX 0.3 (m = 10): row y samples x + 0.3 (y + 0.5) rounded down from the pixel centre:
     * row 0 shift 0, row 2 shift 1 (0.75 + 0.5), row 7 shift 2 (2.25 + 0.5) */
    {
        random_image(3, S * S);
        op(SV_RA_SHEAR_X, 10, 0, S, 1);
        int rows[3] = {0, 2, 7}, shift[3] = {0, 1, 2};
        for (int r = 0; r < 3; r++)
            for (int x = 0; x < S; x++) {
                int sx = x + shift[r];
                CHECK(img[rows[r] * S + x] == (sx < S ? orig[rows[r] * S + sx] : fill3[0]));
            }
        random_image(3, S * S);
        op(SV_RA_SHEAR_Y, 10, 1, S, 1); /* negated: column x samples y - 0.3 (x + 0.5) */
        for (int y = 0; y < S; y++) {
            CHECK(img[y * S + 0] == orig[y * S + 0]);
            CHECK(img[y * S + 2] == (y - 1 >= 0 ? orig[(y - 1) * S + 2] : fill3[0]));
        }
    }
    /* Equalize on a 2-level image (32 x 32): the levels go to 0 and 255 */
    {
        static uint8_t big[32 * 32 * 3], sc[32 * 32 * 3];
        for (int i = 0; i < 32 * 32; i++) {
            big[3 * i] = i % 2 ? 200 : 10;
            big[3 * i + 1] = i < 512 ? 50 : 60;
            big[3 * i + 2] = 77; /* one level: unchanged */
        }
        sv_randaug_apply(SV_RA_EQUALIZE, 0, 0, big, 32, 3, fill3, sc);
        for (int i = 0; i < 32 * 32; i++) {
            CHECK(big[3 * i] == (i % 2 ? 255 : 0));
            CHECK(big[3 * i + 1] == (i < 512 ? 0 : 255));
            CHECK(big[3 * i + 2] == 77);
        }
    }
    /* AutoContrast: [50, 150] -> [0, 255]; 100 -> int(100 * 2.55 - 127.5) = 127 */
    {
        uint8_t v[4] = {50, 150, 100, 75};
        memcpy(img, v, 4);
        op(SV_RA_AUTOCONTRAST, 0, 0, 2, 1);
        CHECK(img[0] == 0 && img[1] == 255 && img[2] == 127 && img[3] == 63);
    }
    /* Brightness: factor 1.9 (m = 10) and 0.1 (negated) */
    {
        uint8_t v[4] = {100, 200, 0, 10};
        memcpy(img, v, 4);
        op(SV_RA_BRIGHTNESS, 10, 0, 2, 1);
        CHECK(img[0] == 190 && img[1] == 255 && img[2] == 0 && img[3] == 19);
        memcpy(img, v, 4);
        op(SV_RA_BRIGHTNESS, 10, 1, 2, 1);
        CHECK(img[0] == 10 && img[1] == 20 && img[2] == 0 && img[3] == 1);
    }
    /* Contrast 0.1 towards the mean grey (100) */
    {
        uint8_t v[4] = {0, 200, 0, 200};
        memcpy(img, v, 4);
        op(SV_RA_CONTRAST, 10, 1, 2, 1);
        CHECK(img[0] == 90 && img[1] == 110 && img[2] == 90 && img[3] == 110);
    }
    /* Color 0.1: grey pixels stay, pure red moves to its luma 76: 76 + 0.1 (255 - 76) = 93.9 */
    {
        uint8_t v[12] = {255, 0, 0, 90, 90, 90, 0, 0, 0, 255, 255, 255};
        memcpy(img, v, 12);
        op(SV_RA_COLOR, 10, 1, 2, 3);
        CHECK(img[0] == 93 && img[1] == 68 && img[2] == 68);
        CHECK(!memcmp(img + 3, v + 3, 9));
        memcpy(img, v, 4);
        op(SV_RA_COLOR, 10, 1, 2, 1); /* 1 channel: identity */
        CHECK(!memcmp(img, v, 4));
    }
    /* Sharpness 0.1 on a single bright pixel in a 5 x 5 black image: SMOOTH gives
     * 5*255/13 = 98 at the centre and 255/13 = 20 beside it; blend 0.1 toward the original */
    {
        memset(img, 0, 25);
        img[12] = 255;
        op(SV_RA_SHARPNESS, 10, 1, 5, 1);
        CHECK(img[12] == 113 && img[7] == 18 && img[11] == 18 && img[6] == 18 && img[0] == 0);
    }
    /* magnitude 0: everything magnitude-driven is the identity, either sign */
    for (int o = 0; o < SV_RA_NUM_OPS; o++) {
        if (o == SV_RA_AUTOCONTRAST || o == SV_RA_EQUALIZE || o == SV_RA_INVERT) continue;
        for (int neg = 0; neg < 2; neg++) {
            random_image(4 + (uint64_t)o, S * S * 3);
            op((sv_ra_op)o, 0, neg, S, 3);
            if (memcmp(img, orig, S * S * 3))
                fprintf(stderr, "%s at magnitude 0 is not the identity\n", sv_randaug_op_name((sv_ra_op)o));
            CHECK(!memcmp(img, orig, S * S * 3));
        }
    }
    /* sv_randaug: a pure function of the key; n = 0 is the identity */
    {
        static uint8_t a[S * S * 3];
        random_image(9, S * S * 3);
        sv_randaug(42, 0, 9, img, S, 3, fill3, scratch);
        CHECK(!memcmp(img, orig, sizeof a));
        sv_randaug(42, 3, 9, img, S, 3, fill3, scratch);
        memcpy(a, img, sizeof a);
        memcpy(img, orig, sizeof a);
        sv_randaug(42, 3, 9, img, S, 3, fill3, scratch);
        CHECK(!memcmp(img, a, sizeof a));
        int changed = 0;
        for (uint64_t k = 0; k < 20; k++) {
            memcpy(img, orig, sizeof a);
            sv_randaug(k, 2, 9, img, S, 3, fill3, scratch);
            changed += memcmp(img, orig, sizeof a) != 0;
        }
        CHECK(changed >= 15); /* Identity twice in a row is 1/256 */
    }

    /* through the loader: a JPEG folder and the synthetic source */
    char root[] = "/tmp/sv_test_randaug_XXXXXX";
    CHECK(mkdtemp(root));
    {
        sv_jpeg_ctx jc;
        sv_jpeg_ctx_init(&jc);
        static uint8_t pix[80 * 60 * 3];
        char p[4200];
        for (int k = 0; k < 2; k++) {
            snprintf(p, sizeof p, "mkdir -p %s/c%d", root, k);
            CHECK(system(p) == 0);
            for (int i = 0; i < 6; i++) {
                const uint8_t *j;
                size_t len;
                sv_synth_render(4, (uint64_t)(k * 6 + i), k, 80, 60, 3, pix);
                CHECK_OK(sv_jpeg_encode(&jc, pix, 80, 60, 3, 90, 0, &j, &len));
                snprintf(p, sizeof p, "%s/c%d/%d.jpg", root, k, i);
                FILE *f = fopen(p, "wb");
                CHECK(f && fwrite(j, 1, len, f) == len);
                fclose(f);
            }
        }
        sv_jpeg_ctx_free(&jc);
    }
    for (int src = 0; src < 2; src++) {
        sv_dataset *d;
        sv_dataset_opts dopts = sv_dataset_opts_default();
        dopts.synth_samples = 12;
        dopts.synth_classes = 2;
        dopts.synth_img = 32;
        CHECK_OK(sv_dataset_open(src ? "synthetic" : root, &dopts, &d));
        enum { B = 12, IMG = 32 };
        size_t isz = 3 * IMG * IMG;
        static float ref[B * 3 * IMG * IMG], plain[B * 3 * IMG * IMG];
        int64_t ref_idx[B];
        for (int cfg = 0; cfg < 4; cfg++) { /* 0: 1 thread, 1: 3 threads, 2: world 2, 3: no RandAugment */
            sv_loader_opts o = sv_loader_opts_default();
            o.dataset = d;
            o.batch_local = cfg == 2 ? B / 2 : B;
            o.world = cfg == 2 ? 2 : 1;
            o.img = IMG;
            o.seed = 5;
            o.threads = cfg == 1 ? 3 : 1;
            o.interp = SV_INTERP_BICUBIC;
            o.randaug_n = cfg == 3 ? 0 : 2;
            o.randaug_m = 9;
            for (int r = 0; r < o.world; r++) {
                o.rank = r;
                sv_loader *l;
                CHECK_OK(sv_loader_create(&o, &l));
                const sv_batch *b;
                CHECK_OK(sv_loader_next(l, &b));
                for (int j = 0; j < b->n; j++) {
                    int g = r * o.batch_local + j;
                    if (cfg == 0) {
                        ref_idx[g] = b->sample_index[j];
                        memcpy(ref + (size_t)g * isz, b->images + (size_t)j * isz, isz * sizeof(float));
                    } else if (cfg == 3) {
                        CHECK(b->sample_index[j] == ref_idx[g]);
                        memcpy(plain + (size_t)g * isz, b->images + (size_t)j * isz, isz * sizeof(float));
                    } else {
                        CHECK(b->sample_index[j] == ref_idx[g]);
                        CHECK(!memcmp(ref + (size_t)g * isz, b->images + (size_t)j * isz, isz * sizeof(float)));
                    }
                }
                sv_loader_destroy(l);
            }
        }
        int differ = 0;
        for (int g = 0; g < B; g++)
            differ += memcmp(ref + (size_t)g * isz, plain + (size_t)g * isz, isz * sizeof(float)) != 0;
        fprintf(stderr, "%s: RandAugment changed %d of %d samples\n", src ? "synthetic" : "folder", differ, B);
        CHECK(differ >= B / 2);
        sv_dataset_close(d);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    return 0;
}
