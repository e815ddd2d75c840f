/* Data-augmentation recipe pieces against their definitions:
 *  - RandomErasing (data/erase.h): erase rate, count = randint(1, N), box area / aspect inside
 *    timm's ranges (up to the rounding of h and w), const / rand / pixel fill statistics, and
 *    through the loader on real JPEGs: one zero rectangle per erased image, nothing in eval;
 *  - repeated augmentation (data/sampler.h): every sample of an epoch exactly K times, copies on
 *    K different ranks at world >= K, the same global sequence (and images) at world 1, 2, 3,
 *    every copy augmented differently, resume mid-epoch at another world size continues it;
 *  - timm --aa strings: good and bad strings, magnitude noise statistics, timm's level -> arg;
 *  - DeiT III 3-Augment (uniform choice; grayscale, solarize, blur as defined), ColorJitter
 *    factors and order, and the simple random crop on real JPEGs: the output is the
 *    reflect-padded image cropped at an offset in [0, 8]^2, all offsets reachable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/rng.h"
#include "data/augment3.h"
#include "data/dataset.h"
#include "data/erase.h"
#include "data/jpeg.h"
#include "data/loader.h"
#include "data/randaug.h"
#include "data/synth.h"

static int within(double x, double mean, double sd, int n) { return fabs(x - mean) <= 4.0 * sd / sqrt((double)n); }

/* ---------------- RandomErasing ---------------- */
static void erase_definition(void) {
    enum { H = 24, W = 32, C = 3, T = 20000 };
    sv_erase_opts o = {.prob = 0.6f, .mode = SV_ERASE_CONST, .max_count = 3};
    int erased = 0, counts[4] = {0}, boxes = 0;
    double la_sum = 0;
    int la_n = 0;
    for (uint64_t k = 0; k < T; k++) {
        sv_erase_box bx[SV_ERASE_MAX_COUNT];
        int cnt = 0, nb = sv_erase_plan(k, &o, H, W, bx, &cnt);
        if (cnt == 0) {
            CHECK(nb == 0);
            continue;
        }
        erased++;
        CHECK(cnt >= 1 && cnt <= 3 && nb <= cnt);
        counts[cnt]++;
        double A = (double)H * W / cnt;
        for (int i = 0; i < nb; i++) {
            int h = bx[i].h, w = bx[i].w;
            CHECK(h >= 0 && w >= 0 && h < H && w < W && bx[i].top >= 0 && bx[i].left >= 0 && bx[i].top + h <= H &&
                  bx[i].left + w <= W);
            /* h = round(sqrt(a r)), w = round(sqrt(a / r)): a in [(h-.5)(w-.5), (h+.5)(w+.5)] */
            CHECK((h + 0.5) * (w + 0.5) >= 0.02 * A - 1e-9);
            if (h >= 1 && w >= 1) {
                CHECK((h - 0.5) * (w - 0.5) <= A / 3 + 1e-9);
                CHECK((h + 0.5) / (w - 0.5) >= 0.3 - 1e-9 && (h - 0.5) / (w + 0.5) <= 1 / 0.3 + 1e-9);
            }
            if (h >= 4 && w >= 4 && cnt == 1) la_sum += log((double)h / w), la_n++;
            boxes++;
        }
    }
    fprintf(stderr, "erase: %d of %d erased, counts %d %d %d, %d boxes, mean log aspect %.3f\n", erased, T, counts[1],
            counts[2], counts[3], boxes, la_sum / la_n);
    CHECK(within(erased, 0.6 * T, sqrt(0.24) * T, T));
    for (int c = 1; c <= 3; c++) CHECK(within(counts[c], erased / 3.0, sqrt(2.0 / 9) * erased, erased));
    CHECK(fabs(la_sum / la_n) < 0.1); /* log-uniform aspect: symmetric about 1 */
    o.prob = 0;
    for (uint64_t k = 0; k < 100; k++) CHECK(sv_erase_plan(k, &o, H, W, NULL, NULL) == 0);

    /* fill values: the erased set is the union of the planned boxes */
    static float img[C * H * W];
    for (int mode = 0; mode < 3; mode++) {
        o = (sv_erase_opts){.prob = 1.f, .mode = mode, .max_count = 2};
        double s = 0, s2 = 0, n = 0;
        int const_boxes = 1;
        for (uint64_t k = 0; k < 400; k++) {
            for (int e = 0; e < C * H * W; e++) img[e] = 7.f;
            sv_random_erase(k, &o, img, C, H, W);
            sv_erase_box bx[SV_ERASE_MAX_COUNT];
            int nb = sv_erase_plan(k, &o, H, W, bx, NULL);
            for (int c = 0; c < C; c++)
                for (int y = 0; y < H; y++)
                    for (int x = 0; x < W; x++) {
                        int in = -1;
                        for (int i = 0; i < nb; i++)
                            if (y >= bx[i].top && y < bx[i].top + bx[i].h && x >= bx[i].left &&
                                x < bx[i].left + bx[i].w)
                                in = i;
                        float v = img[(c * H + y) * W + x];
                        if (in < 0) {
                            CHECK(v == 7.f);
                            continue;
                        }
                        if (mode == SV_ERASE_CONST) CHECK(v == 0.f);
                        if (mode == SV_ERASE_PIXEL) s += v, s2 += (double)v * v, n++;
                    }
            /* rand: one value per box and channel (the last box drawn wins where they overlap) */
            if (mode == SV_ERASE_RAND && nb == 1 && bx[0].h > 0 && bx[0].w > 0)
                for (int c = 0; c < C; c++) {
                    float v0 = img[(c * H + bx[0].top) * W + bx[0].left];
                    for (int y = bx[0].top; y < bx[0].top + bx[0].h; y++)
                        for (int x = bx[0].left; x < bx[0].left + bx[0].w; x++)
                            const_boxes &= img[(c * H + y) * W + x] == v0;
                    s += v0, s2 += (double)v0 * v0, n++;
                }
        }
        if (mode != SV_ERASE_CONST) {
            double mean = s / n, var = s2 / n - mean * mean;
            fprintf(stderr, "erase mode %d: %g values, mean %.4f, var %.4f\n", mode, n, mean, var);
            CHECK(n > 100 && within(mean, 0, 1, (int)n) && fabs(var - 1) < 8 * sqrt(2.0 / n) + 0.01);
            CHECK(const_boxes);
        }
    }
    CHECK(sv_erase_mode_parse("pixel") == SV_ERASE_PIXEL && sv_erase_mode_parse("rand") == SV_ERASE_RAND &&
          sv_erase_mode_parse("const") == SV_ERASE_CONST && sv_erase_mode_parse("Pixel") < 0);
}

/* ---------------- JPEG folder helpers ---------------- */
static char root[64];
enum { IMG = 32, NJ = 12 };
static uint8_t jpix[NJ][IMG * IMG * 3]; /* the decoded files (what the loader reads) */

static void make_folder(int w, int h) {
    snprintf(root, sizeof root, "/tmp/sv_test_augment_XXXXXX");
    CHECK(mkdtemp(root));
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    static uint8_t pix[80 * 80 * 3];
    char p[200];
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "mkdir -p %s/c%d", root, k);
        CHECK(system(p) == 0);
        for (int i = 0; i < NJ / 2; i++) {
            const uint8_t *j;
            size_t len;
            sv_synth_render(4, (uint64_t)(k * 6 + i), k, w, h, 3, pix);
            CHECK_OK(sv_jpeg_encode(&jc, pix, w, h, 3, 90, 0, &j, &len));
            snprintf(p, sizeof p, "%s/c%d/%d.jpg", root, k, i);
            FILE *f = fopen(p, "wb");
            CHECK(f && fwrite(j, 1, len, f) == len);
            fclose(f);
            if (w == IMG && h == IMG) {
                int dw, dh;
                uint8_t *copy = malloc(len);
                memcpy(copy, j, len);
                CHECK_OK(sv_jpeg_decode(&jc, copy, len, 3, 1, &dw, &dh));
                CHECK(dw == IMG && dh == IMG);
                memcpy(jpix[k * 6 + i], jc.pix, sizeof jpix[0]);
                free(copy);
            }
        }
    }
    sv_jpeg_ctx_free(&jc);
}

static void remove_folder(void) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
}

static sv_loader_opts folder_opts(const sv_dataset *d, int train) {
    sv_loader_opts o = sv_loader_opts_default();
    o.dataset = d;
    o.batch_local = NJ;
    o.img = IMG;
    o.seed = 9;
    o.threads = 2;
    o.mode = train ? SV_TRANSFORM_TRAIN : SV_TRANSFORM_EVAL;
    return o;
}

static void first_batch(const sv_loader_opts *o, float *img, int64_t *idx) {
    sv_loader *l;
    CHECK_OK(sv_loader_create(o, &l));
    const sv_batch *b;
    CHECK_OK(sv_loader_next(l, &b));
    memcpy(img, b->images, (size_t)b->n * 3 * IMG * IMG * sizeof(float));
    if (idx) memcpy(idx, b->sample_index, (size_t)b->n * sizeof(int64_t));
    sv_loader_destroy(l);
}

static void erase_loader(void) {
    make_folder(80, 60);
    sv_dataset *d;
    CHECK_OK(sv_dataset_open(root, NULL, &d));
    enum { ISZ = 3 * IMG * IMG };
    static float a[NJ * ISZ], b[NJ * ISZ];
    for (int train = 0; train < 2; train++) {
        sv_loader_opts o = folder_opts(d, train);
        first_batch(&o, a, NULL);
        o.reprob = 1.f;
        o.remode = SV_ERASE_CONST;
        o.recount = 1;
        first_batch(&o, b, NULL);
        if (!train) {
            CHECK(!memcmp(a, b, sizeof a)); /* evaluation never erases */
            continue;
        }
        int rects = 0;
        for (int j = 0; j < NJ; j++) {
            const float *p = a + (size_t)j * ISZ, *q = b + (size_t)j * ISZ;
            int y0 = IMG, y1 = -1, x0 = IMG, x1 = -1;
            for (int e = 0; e < ISZ; e++)
                if (p[e] != q[e]) {
                    int y = (e / IMG) % IMG, x = e % IMG;
                    y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1, x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1;
                }
            if (y1 < 0) continue; /* an empty box */
            for (int c = 0; c < 3; c++)
                for (int y = 0; y < IMG; y++)
                    for (int x = 0; x < IMG; x++) {
                        int e = (c * IMG + y) * IMG + x, in = y >= y0 && y <= y1 && x >= x0 && x <= x1;
                        CHECK(in ? q[e] == 0.f : q[e] == p[e]);
                    }
            int h = y1 - y0 + 1, w = x1 - x0 + 1;
            CHECK((h - 0.5) * (w - 0.5) <= IMG * IMG / 3.0 && (h + 0.5) * (w + 0.5) >= 0.02 * IMG * IMG);
            rects++;
        }
        fprintf(stderr, "erase through the loader: %d of %d images hold one zero rectangle\n", rects, NJ);
        CHECK(rects >= NJ - 2);
    }
    sv_dataset_close(d);
    remove_folder();
}

/* ---------------- repeated augmentation ---------------- */
enum { RN = 120, RK = 3, RG = 12, RSTEPS = 10, RISZ = 3 * 8 * 8 };
static sv_dataset *rds;

typedef struct rseq {
    int64_t idx[4 * RSTEPS * RG];
    uint32_t copy[4 * RSTEPS * RG];
    int rank[4 * RSTEPS * RG];
    uint64_t epoch[4 * RSTEPS * RG];
    float img[4 * RSTEPS * RG * RISZ];
} rseq;

/* steps global batches from (epoch, cursor) at world W into s (global order) */
static void rseq_run(int W, uint64_t epoch, uint64_t cursor, int steps, rseq *s) {
    for (int r = 0; r < W; r++) {
        sv_loader_opts o = sv_loader_opts_default();
        o.dataset = rds;
        o.batch_local = RG / W;
        o.rank = r;
        o.world = W;
        o.seed = 21;
        o.img = 8;
        o.threads = 2;
        o.aug_repeats = RK;
        o.randaug_n = 2; /* so that copies can differ */
        o.randaug_m = 9;
        o.reprob = 0.5f;
        o.remode = SV_ERASE_PIXEL;
        sv_loader *l;
        CHECK_OK(sv_loader_create(&o, &l));
        if (epoch || cursor) CHECK_OK(sv_loader_seek(l, epoch, cursor));
        for (int st = 0; st < steps; st++) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l, &b));
            for (int j = 0; j < b->n; j++) {
                size_t g = (size_t)st * RG + (size_t)r * (size_t)b->n + (size_t)j;
                s->idx[g] = b->sample_index[j];
                s->copy[g] = b->repeat[j];
                s->rank[g] = r;
                s->epoch[g] = b->epoch;
                memcpy(s->img + g * RISZ, b->images + (size_t)j * RISZ, RISZ * sizeof(float));
            }
        }
        sv_loader_destroy(l);
    }
}

static void repeats(void) {
    sv_dataset_opts dopt = sv_dataset_opts_default();
    dopt.synth_samples = RN;
    dopt.synth_classes = 4;
    dopt.synth_img = 8;
    dopt.synth_channels = 3;
    CHECK_OK(sv_dataset_open("synthetic", &dopt, &rds));
    static rseq ref, s;
    rseq_run(1, 0, 0, 2 * RSTEPS, &ref); /* two epochs at world 1 */
    for (int e = 0; e < 2; e++) {
        int cnt[RN] = {0}, copies[RN] = {0}, distinct = 0;
        for (int g = e * RSTEPS * RG; g < (e + 1) * RSTEPS * RG; g++) {
            CHECK(ref.epoch[g] == (uint64_t)e && ref.copy[g] < RK);
            cnt[ref.idx[g]]++;
            copies[ref.idx[g]] |= 1 << ref.copy[g];
        }
        for (int i = 0; i < RN; i++) {
            CHECK(cnt[i] == 0 || (cnt[i] == RK && copies[i] == (1 << RK) - 1));
            distinct += cnt[i] > 0;
        }
        CHECK(distinct == RSTEPS * RG / RK); /* DeiT: the epoch keeps its length, n / K samples K times */
    }
    /* every copy is augmented differently */
    int same = 0, pairs = 0;
    for (int g = 0; g < RSTEPS * RG; g++)
        for (int h = g + 1; h < RSTEPS * RG; h++)
            if (ref.idx[g] == ref.idx[h]) {
                pairs++;
                same += !memcmp(ref.img + (size_t)g * RISZ, ref.img + (size_t)h * RISZ, RISZ * sizeof(float));
            }
    fprintf(stderr, "repeats: %d copy pairs, %d identical\n", pairs, same);
    CHECK(pairs == RSTEPS * RG / RK * 3 && same <= pairs / 20);
    /* world 2 and 3: the same global sequence, images included; at world 3 the copies sit on 3 ranks */
    for (int W = 2; W <= 3; W++) {
        rseq_run(W, 0, 0, 2 * RSTEPS, &s);
        CHECK(!memcmp(ref.idx, s.idx, sizeof ref.idx) && !memcmp(ref.copy, s.copy, sizeof ref.copy));
        CHECK(!memcmp(ref.img, s.img, sizeof ref.img));
        if (W == 3)
            for (int st = 0; st < RSTEPS; st++)
                for (int g = st * RG; g < (st + 1) * RG; g++) {
                    int ranks = 0, n = 0;
                    for (int h = st * RG; h < (st + 1) * RG; h++)
                        if (s.idx[h] == s.idx[g]) ranks |= 1 << s.rank[h], n++;
                    CHECK(n == RK && ranks == 7); /* all copies in the same step, on ranks 0, 1, 2 */
                }
    }
    /* resume mid-epoch at another world size: world 2 from (0, 6 G) continues world 1's sequence
     * through the epoch boundary, images included */
    rseq_run(2, 0, 6 * RG, 8, &s);
    CHECK(!memcmp(ref.idx + 6 * RG, s.idx, 8 * RG * sizeof(int64_t)));
    CHECK(!memcmp(ref.copy + 6 * RG, s.copy, 8 * RG * sizeof(uint32_t)));
    CHECK(!memcmp(ref.img + (size_t)6 * RG * RISZ, s.img, (size_t)8 * RG * RISZ * sizeof(float)));
    rseq_run(3, 1, 2 * RG, 3, &s);
    CHECK(!memcmp(ref.idx + 12 * RG, s.idx, 3 * RG * sizeof(int64_t)));
    CHECK(!memcmp(ref.img + (size_t)12 * RG * RISZ, s.img, (size_t)3 * RG * RISZ * sizeof(float)));
    /* the global micro-batch must be a multiple of K */
    sv_loader_opts o = sv_loader_opts_default();
    o.dataset = rds;
    o.batch_local = 4;
    o.img = 8;
    o.aug_repeats = 3;
    sv_loader *l = NULL;
    CHECK(sv_loader_create(&o, &l) == SV_ERR_INVALID && !l);
    CHECK(strstr(sv_err_msg(), "aug-repeats") != NULL);
    sv_err_clear();
    sv_dataset_close(rds);
}

/* ---------------- timm --aa ---------------- */
static void aa(void) {
    sv_randaug_timm t;
    CHECK_OK(sv_randaug_timm_parse("rand-m9-mstd0.5-inc1", &t));
    CHECK(t.m == 9 && t.n == 2 && t.mstd == 0.5 && t.p == 0.5 && t.inc == 1 && t.mmax == 0);
    CHECK_OK(sv_randaug_timm_parse("rand-n3-mmax20-p1-m15-inc0-mstd101", &t));
    CHECK(t.m == 15 && t.n == 3 && isinf(t.mstd) && t.p == 1 && t.inc == 0 && t.mmax == 20);
    CHECK_OK(sv_randaug_timm_parse("rand", &t));
    CHECK(t.m == 10 && t.n == 2 && t.mstd == 0 && t.p == 0.5 && t.inc == 0);
    static const char *const bad[] = {
        "",          "rand-",    "rand-m",    "rand-m9.5",     "rand-mx",  "rand-q3",
        "rand-m9-",  "rand--m9", "rand-inc2", "rand-p1.5",     "rand-n0",  "rand-mstd-1",
        "augmix-m5", "randm9",   "rand-m31",  "rand-tweights", "rand-m9 ", "rand-mstd0.5x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(sv_randaug_timm_parse(bad[i], &t) == SV_ERR_INVALID);
        CHECK(strstr(sv_err_msg(), "--aa") != NULL);
        sv_err_clear();
    }
    /* magnitude noise: N(m, mstd) clipped to [0, 10] (or mmax); uniform in [0, m] for mstd > 100 */
    enum { T = 40000 };
    sv_randaug_timm a = {.n = 2, .m = 5, .mstd = 1, .p = 1};
    double s = 0, s2 = 0;
    int clip = 0;
    for (uint64_t k = 0; k < T; k++) {
        double v = sv_randaug_timm_magnitude(&a, k, k % 3);
        s += v, s2 += v * v;
    }
    fprintf(stderr, "aa noise m5 mstd1: mean %.4f var %.4f\n", s / T, s2 / T - (s / T) * (s / T));
    CHECK(within(s / T, 5, 1, T) && fabs(s2 / T - (s / T) * (s / T) - 1) < 0.05);
    a.m = 9.5;
    a.mstd = 1;
    for (uint64_t k = 0; k < T; k++) {
        double v = sv_randaug_timm_magnitude(&a, k, 1);
        CHECK(v >= 0 && v <= 10);
        clip += v == 10;
    }
    CHECK(within(clip, 0.3085 * T, sqrt(0.3085 * 0.6915) * T, T)); /* P(N(9.5, 1) > 10) */
    a.mmax = 20;
    clip = 0;
    for (uint64_t k = 0; k < T; k++) clip += sv_randaug_timm_magnitude(&a, k, 1) >= 10;
    CHECK(within(clip, 0.3085 * T, sqrt(0.3085 * 0.6915) * T, T));
    a = (sv_randaug_timm){.n = 2, .m = 8, .mstd = INFINITY, .p = 1};
    s = 0;
    double mx = 0;
    for (uint64_t k = 0; k < T; k++) {
        double v = sv_randaug_timm_magnitude(&a, k, 0);
        s += v;
        mx = v > mx ? v : mx;
    }
    CHECK(within(s / T, 4, 8 / sqrt(12.0), T) && mx <= 8 && mx > 7.9);
    a.mstd = 0;
    CHECK(sv_randaug_timm_magnitude(&a, 1, 0) == 8);
    /* timm level -> arg at a few magnitudes */
    CHECK(sv_randaug_timm_arg(SV_RA_POSTERIZE, 10, 1, 0, 32) == 0 &&
          sv_randaug_timm_arg(SV_RA_POSTERIZE, 0, 1, 0, 32) == 4);
    CHECK(sv_randaug_timm_arg(SV_RA_POSTERIZE, 9, 0, 0, 32) == 3);
    CHECK(sv_randaug_timm_arg(SV_RA_SOLARIZE, 0, 1, 0, 32) == 256 &&
          sv_randaug_timm_arg(SV_RA_SOLARIZE, 9, 0, 0, 32) == 230);
    CHECK(sv_randaug_timm_arg(SV_RA_SOLARIZE, 9, 1, 0, 32) == 26 &&
          sv_randaug_timm_arg(SV_RA_SOLARIZE_ADD, 10, 1, 0, 32) == 110);
    CHECK_CLOSE(sv_randaug_timm_arg(SV_RA_COLOR, 5, 0, 0, 32), 1.0, 1e-12);
    CHECK_CLOSE(sv_randaug_timm_arg(SV_RA_CONTRAST, 9, 1, 1, 32), 1 - 0.81, 1e-12);
    CHECK_CLOSE(sv_randaug_timm_arg(SV_RA_BRIGHTNESS, 10, 1, 1, 32), 0.1, 1e-12);
    CHECK_CLOSE(sv_randaug_timm_arg(SV_RA_ROTATE, 9, 1, 1, 32), -27, 1e-12);
    CHECK_CLOSE(sv_randaug_timm_arg(SV_RA_TRANSLATE_X, 10, 0, 0, 32), 0.45 * 32, 1e-12);
    CHECK_CLOSE(sv_randaug_timm_arg(SV_RA_SHEAR_Y, 5, 0, 1, 32), -0.15, 1e-12);
    int seen[SV_RA_NUM_OPS] = {0};
    for (int i = 0; i < SV_RA_TIMM_NUM_OPS; i++) seen[sv_randaug_timm_op(i)]++;
    CHECK(seen[SV_RA_IDENTITY] == 0);
    for (int op = 1; op < SV_RA_NUM_OPS; op++) CHECK(seen[op] == 1);
    /* p = 0 leaves the image alone; p = 1 changes it; a pure function of the key */
    enum { SIDE = 16 };
    static uint8_t img[SIDE * SIDE * 3], orig[SIDE * SIDE * 3], scr[SIDE * SIDE * 3], img2[SIDE * SIDE * 3];
    const uint8_t fill[3] = {124, 116, 104};
    for (int i = 0; i < SIDE * SIDE * 3; i++) orig[i] = (uint8_t)sv_rand_u64(77, (uint64_t)i);
    CHECK_OK(sv_randaug_timm_parse("rand-m9-n3-p0", &t));
    memcpy(img, orig, sizeof img);
    sv_randaug_timm_run(&t, 5, img, SIDE, 3, fill, scr);
    CHECK(!memcmp(img, orig, sizeof img));
    CHECK_OK(sv_randaug_timm_parse("rand-m9-n3-p1-mstd0.5-inc1", &t));
    int changed = 0;
    for (uint64_t k = 0; k < 20; k++) {
        memcpy(img, orig, sizeof img);
        sv_randaug_timm_run(&t, k, img, SIDE, 3, fill, scr);
        memcpy(img2, orig, sizeof img2);
        sv_randaug_timm_run(&t, k, img2, SIDE, 3, fill, scr);
        CHECK(!memcmp(img, img2, sizeof img));
        changed += memcmp(img, orig, sizeof img) != 0;
    }
    CHECK(changed >= 18);
}

/* --aa-interp: bilinear / bicubic at whole-pixel shifts and the identity reproduce the source
 * exactly (Pillow's filters at fraction 0), differ from nearest at a fractional shift; random
 * draws both, per layer, deterministically, and leaves the other draws (ops, arguments) alone.
 * (Byte equality with Pillow / timm: tests/data/ra_interp_check.py.) */
static void aa_interp(void) {
    enum { SIDE = 20, N = SIDE * SIDE * 3 };
    static uint8_t orig[N], a[N], b[N], scr[N];
    const uint8_t fill[3] = {124, 116, 104};
    for (int i = 0; i < N; i++) orig[i] = (uint8_t)sv_rand_u64(91, (uint64_t)i);
    sv_ra_interp f;
    CHECK_OK(sv_randaug_interp_parse("random", &f));
    CHECK(f == SV_RA_RANDOM && !strcmp(sv_randaug_interp_name(SV_RA_BICUBIC), "bicubic"));
    CHECK(sv_randaug_interp_parse("lanczos", &f) == SV_ERR_INVALID);
    sv_err_clear();
    for (int fi = SV_RA_BILINEAR; fi <= SV_RA_BICUBIC; fi++) {
        sv_ra_layer id = {SV_RA_ROTATE, 0, (sv_ra_interp)fi}, sh = {SV_RA_TRANSLATE_X, 3, (sv_ra_interp)fi};
        memcpy(a, orig, N);
        sv_randaug_layer_apply(&id, a, SIDE, 3, fill, scr);
        CHECK(!memcmp(a, orig, N));
        memcpy(a, orig, N), memcpy(b, orig, N);
        sv_randaug_layer_apply(&sh, a, SIDE, 3, fill, scr);
        sh.interp = SV_RA_NEAREST;
        sv_randaug_layer_apply(&sh, b, SIDE, 3, fill, scr);
        CHECK(!memcmp(a, b, N));                                                 /* whole pixels: as nearest */
        CHECK(!memcmp(a, orig + 9, 3 * (SIDE - 3)) && a[3 * (SIDE - 1)] == 124); /* row 0 moved left, filled */
        sv_ra_layer fr = {SV_RA_TRANSLATE_X, 2.5, (sv_ra_interp)fi};
        memcpy(a, orig, N), memcpy(b, orig, N);
        sv_randaug_layer_apply(&fr, a, SIDE, 3, fill, scr);
        fr.interp = SV_RA_NEAREST;
        sv_randaug_layer_apply(&fr, b, SIDE, 3, fill, scr);
        CHECK(memcmp(a, b, N) != 0);
    }
    sv_randaug_timm t;
    CHECK_OK(sv_randaug_timm_parse("rand-n6-m9-p1", &t));
    int drawn[4] = {0}, geometric = 0;
    for (uint64_t key = 0; key < 200; key++) {
        sv_ra_layer r[6], n[6], r2[6];
        t.interp = SV_RA_RANDOM;
        int k = sv_randaug_timm_plan(&t, key, SIDE, r);
        CHECK(k == 6 && sv_randaug_timm_plan(&t, key, SIDE, r2) == 6);
        for (int i = 0; i < k; i++) CHECK(r[i].op == r2[i].op && r[i].arg == r2[i].arg && r[i].interp == r2[i].interp);
        t.interp = SV_RA_NEAREST;
        CHECK(sv_randaug_timm_plan(&t, key, SIDE, n) == 6);
        for (int i = 0; i < k; i++) {
            CHECK(r[i].op == n[i].op && r[i].arg == n[i].arg && n[i].interp == SV_RA_NEAREST);
            int geo = r[i].op == SV_RA_ROTATE || r[i].op == SV_RA_SHEAR_X || r[i].op == SV_RA_SHEAR_Y ||
                r[i].op == SV_RA_TRANSLATE_X || r[i].op == SV_RA_TRANSLATE_Y;
            geometric += geo;
            drawn[r[i].interp]++;
            CHECK(geo ? r[i].interp == SV_RA_BILINEAR || r[i].interp == SV_RA_BICUBIC : r[i].interp == SV_RA_NEAREST);
        }
        t.interp = SV_RA_RANDOM; /* run = plan applied in order */
        memcpy(a, orig, N), memcpy(b, orig, N);
        sv_randaug_timm_run(&t, key, a, SIDE, 3, fill, scr);
        for (int i = 0; i < k; i++) sv_randaug_layer_apply(&r[i], b, SIDE, 3, fill, scr);
        CHECK(!memcmp(a, b, N));
    }
    CHECK(geometric > 300 && drawn[SV_RA_BILINEAR] > geometric / 3 && drawn[SV_RA_BICUBIC] > geometric / 3);
}

/* ---------------- three-augment, colour jitter ---------------- */
static uint8_t luma(const uint8_t *p) {
    return (uint8_t)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
}

static void three(void) {
    enum { T = 30000, SIDE = 24, NP = SIDE * SIDE * 3 };
    int n[3] = {0};
    double rs = 0;
    for (uint64_t k = 0; k < T; k++) {
        double r;
        sv_aug3_op op = sv_three_augment_choice(k, &r);
        CHECK(op >= 0 && op < 3 && r >= 0.1 && r <= 2.0);
        n[op]++;
        rs += r;
    }
    for (int i = 0; i < 3; i++) CHECK(within(n[i], T / 3.0, sqrt(2.0 / 9) * T, T));
    CHECK(within(rs / T, 1.05, 1.9 / sqrt(12.0), T));
    static uint8_t orig[NP], img[NP], scr[NP];
    for (int i = 0; i < NP; i++) orig[i] = (uint8_t)sv_rand_u64(3, (uint64_t)i);
    int done[3] = {0};
    for (uint64_t k = 0; k < 30; k++) {
        double r;
        sv_aug3_op op = sv_three_augment_choice(k, &r);
        memcpy(img, orig, NP);
        sv_three_augment(k, img, SIDE, 3, scr);
        done[op]++;
        if (op == SV_AUG3_GRAY)
            for (int p = 0; p < SIDE * SIDE; p++)
                CHECK(img[3 * p] == luma(orig + 3 * p) && img[3 * p + 1] == img[3 * p] && img[3 * p + 2] == img[3 * p]);
        if (op == SV_AUG3_SOLARIZE)
            for (int i = 0; i < NP; i++) CHECK(img[i] == (orig[i] >= 128 ? 255 - orig[i] : orig[i]));
        if (op == SV_AUG3_BLUR) { /* smoothing: the variance of the noise image drops */
            double v0 = 0, v1 = 0;
            for (int i = 0; i < NP; i++)
                v0 += (orig[i] - 127.5) * (orig[i] - 127.5), v1 += (img[i] - 127.5) * (img[i] - 127.5);
            CHECK(r > 0.8 ? v1 < 0.8 * v0 : v1 <= v0);
        }
    }
    CHECK(done[0] && done[1] && done[2]);
    /* blur: a constant image stays; a step becomes the Gaussian's CDF */
    memset(img, 100, NP);
    sv_gaussian_blur(img, SIDE, 3, 1.7, scr);
    for (int i = 0; i < NP; i++) CHECK(img[i] == 100);
    enum { G1 = 41 };
    static uint8_t g[G1 * G1], gs[G1 * G1];
    for (int y = 0; y < G1; y++)
        for (int x = 0; x < G1; x++) g[y * G1 + x] = x < 20 ? 0 : 200;
    sv_gaussian_blur(g, G1, 1, 1.5, gs);
    /* a step blurred by a Gaussian is 200 Phi((x + 0.5 - 20) / sigma) away from the borders */
    for (int x = 14; x < 26; x++) {
        double want = 200 * 0.5 * erfc(-(x - 19.5) / (1.5 * sqrt(2.0)));
        CHECK(fabs(g[20 * G1 + x] - want) <= 2.0);
    }
    /* colour jitter: factors in [1 - b, 1 + b], every order, b = 0 is the identity */
    int orders[27] = {0}, nord = 0;
    for (uint64_t k = 0; k < 600; k++) {
        double f[3];
        int ord[3];
        memcpy(img, orig, NP);
        sv_color_jitter(k, 0.3, img, SIDE, 3, scr, f, ord);
        for (int i = 0; i < 3; i++) CHECK(f[i] >= 0.7 && f[i] <= 1.3);
        CHECK(ord[0] != ord[1] && ord[1] != ord[2] && ord[0] != ord[2]);
        int code = ord[0] * 9 + ord[1] * 3 + ord[2];
        nord += !orders[code];
        orders[code] = 1;
    }
    CHECK(nord == 6);
    memcpy(img, orig, NP);
    sv_color_jitter(5, 0, img, SIDE, 3, scr, NULL, NULL);
    CHECK(!memcmp(img, orig, NP));
    /* a jitter is its three ImageEnhance steps with the drawn factors in the drawn order */
    {
        double f[3];
        int ord[3];
        memcpy(img, orig, NP);
        sv_color_jitter(11, 0.3, img, SIDE, 3, scr, f, ord);
        static uint8_t ref[NP];
        memcpy(ref, orig, NP);
        static const sv_ra_op ops[3] = {SV_RA_BRIGHTNESS, SV_RA_CONTRAST, SV_RA_COLOR};
        for (int i = 0; i < 3; i++) sv_image_enhance(ops[ord[i]], f[ord[i]], ref, SIDE, 3, scr);
        CHECK(!memcmp(img, ref, NP));
    }
}

/* ---------------- simple random crop on real JPEGs ---------------- */
static long reflect(long v, long n) { return v < 0 ? -v : v >= n ? 2 * (n - 1) - v : v; }

static void simple_crop(void) {
    make_folder(IMG, IMG);
    sv_dataset *d;
    CHECK_OK(sv_dataset_open(root, NULL, &d));
    enum { ISZ = 3 * IMG * IMG, EPOCHS = 12 };
    static float img[NJ * ISZ];
    int64_t idx[NJ];
    int seen_top[9] = {0}, seen_left[9] = {0}, flipped = 0;
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    for (int flip = 0; flip < 2; flip++)
        for (int e = 0; e < EPOCHS; e++) {
            sv_loader_opts o = folder_opts(d, 1);
            o.simple_crop = 1;
            o.hflip = flip ? 1.f : -1.f;
            o.seed = 100 + (uint64_t)e;
            first_batch(&o, img, idx);
            for (int j = 0; j < NJ; j++) {
                const uint8_t *src = jpix[idx[j]];
                const float *q = img + (size_t)j * ISZ;
                int found = 0;
                for (int top = 0; top <= 8 && !found; top++)
                    for (int left = 0; left <= 8 && !found; left++) {
                        int ok = 1;
                        for (int c = 0; c < 3 && ok; c++)
                            for (int y = 0; y < IMG && ok; y++)
                                for (int x = 0; x < IMG && ok; x++) {
                                    int xs = flip ? IMG - 1 - x : x;
                                    long sy = reflect(top - 4 + y, IMG), sx = reflect(left - 4 + xs, IMG);
                                    double v = (q[(c * IMG + y) * IMG + x] * sd[c] + mean[c]) * 255.0;
                                    ok = fabs(v - src[(sy * IMG + sx) * 3 + c]) < 0.01;
                                }
                        if (ok) {
                            found = 1;
                            seen_top[top]++;
                            seen_left[left]++;
                            flipped += flip;
                        }
                    }
                CHECK(found);
            }
        }
    for (int t = 0; t <= 8; t++) CHECK(seen_top[t] > 0 && seen_left[t] > 0);
    CHECK(flipped == EPOCHS * NJ);
    fprintf(stderr, "simple crop: %d crops matched reflect-padded offsets, every top and left offset 0..8 seen\n",
            2 * EPOCHS * NJ);
    /* the box the crop uses: torchvision Resize sizes and offsets in range */
    for (uint64_t k = 0; k < 2000; k++) {
        long nw, nh, top, left;
        double box[4];
        sv_simple_crop_box(k, 300, 200, 32, &nw, &nh, &top, &left, box);
        CHECK(nh == 32 && nw == 48 && top >= 0 && top <= 8 && left >= 0 && left <= 24);
        CHECK_CLOSE(box[0], (left - 4) * 300.0 / 48, 1e-9);
        CHECK_CLOSE(box[2], 32 * 300.0 / 48, 1e-9);
    }
    sv_dataset_close(d);
    remove_folder();
}

int main(void) {
    erase_definition();
    erase_loader();
    repeats();
    aa();
    aa_interp();
    three();
    simple_crop();
    return 0;
}
