/* Single-core data-pipeline throughput on a synthetic 500x375 JPEG set:
 *   plain TurboJPEG full-size RGB decode (the reference), and sv_load_image with
 *   RandomResizedCrop(224) + flip + normalise (bilinear; bicubic; + RandAugment n=2 m=9) and
 *   the eval transform (resize 256 + center crop 224).
 * Usage: bench_data [DIR [N [REPS [ONLY]]]] — DIR is made with `prep synthetic` settings when it has
 * no train/ tree (default /tmp/shardvit_bench_jpeg, N = 400 images, REPS = 7). Each rep runs
 * every pipeline once (interleaved, so load changes hit all alike); the best rep counts. Time
 * is the thread's CPU time, which other processes on a shared machine disturb less than wall
 * time. ONLY = index of one pipeline to run (for perf). Compare with
 * bench/data/bench_torchvision.py DIR on the same files. The same images with restart markers
 * (region decodes read only the intervals over the crop, docs/data.md "Restart markers"):
 * `shardvit prep synthetic --restart-mcus 4 --quality 90 --per-class 40 --test-per-class 0 --out DIR`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>

#include "core/rng.h"
#include "data/dataset.h"
#include "data/prep.h"
#include "data/transform.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* An integer argument in [lo, hi] (strict: "abc", "5x" refused). */
static int int_arg(const char *s, long lo, long hi, int *v) {
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || *end || x < lo || x > hi) return 0;
    *v = (int)x;
    return 1;
}

static const char usage[] =
    "usage: bench_data [DIR [N [REPS [ONLY]]]]\n"
    "  DIR   image set (DIR/train, an ImageFolder tree); made with `prep synthetic` settings when\n"
    "        DIR does not exist or is empty (default /tmp/shardvit_bench_jpeg)\n"
    "  N     images (default 400), REPS repetitions, best counts (default 7)\n"
    "  ONLY  run only pipeline ONLY (0 plain decode, 1 bilinear, 2 bicubic, 3 RandAugment, 4 eval,\n"
    "        5 region decode alone; for profiling)\n";

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (argv[i][0] == '-' || !argv[i][0]) {
            fprintf(stderr, "bench_data: unknown option or empty argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    if (argc > 5) {
        fprintf(stderr, "bench_data: too many arguments\n%s", usage);
        return 2;
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp/shardvit_bench_jpeg";
    int N = 400, reps = 7, only = -1; /* only: run this pipeline alone (for profiling) */
    if ((argc > 2 && !int_arg(argv[2], 1, 1 << 24, &N)) || (argc > 3 && !int_arg(argv[3], 1, 1 << 20, &reps)) ||
        (argc > 4 && !int_arg(argv[4], 0, 5, &only))) {
        fprintf(stderr, "bench_data: N and REPS must be positive integers, ONLY one of 0..5\n%s", usage);
        return 2;
    }
    char train[4200];
    snprintf(train, sizeof train, "%s/train", dir);
    struct stat st;
    if (stat(train, &st) != 0) {
        sv_prep_opts o = sv_prep_opts_default();
        o.out = dir;
        o.classes = 10;
        o.per_class = (N + 9) / 10;
        o.test_per_class = 0;
        o.quality = 90;
        if (sv_prep_synthetic(&o) != SV_OK) {
            fprintf(stderr, "prep: %s\n", sv_err_msg());
            return 1;
        }
    }
    sv_dataset *d;
    if (sv_dataset_open(train, NULL, &d) != SV_OK) {
        fprintf(stderr, "%s\n", sv_err_msg());
        return 1;
    }
    size_t n = sv_dataset_len(d) < (size_t)N ? sv_dataset_len(d) : (size_t)N;
    uint8_t **files = calloc(n, sizeof *files);
    size_t *lens = calloc(n, sizeof *lens);
    for (size_t i = 0; i < n; i++) {
        size_t cap = 0;
        if (sv_dataset_read(d, i, &files[i], &cap, &lens[i]) != SV_OK) {
            fprintf(stderr, "bench_data: file %zu: %s\n", i, sv_err_msg());
            return 1;
        }
    }
    tjhandle h = tjInitDecompress();
    uint8_t *pix = malloc(4096 * 4096 * 3);
    float *out = malloc(3 * 224 * 224 * sizeof(float));
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    sv_resample_scratch rs = {0};
    float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    enum { NP = 6 };
    const char *names[NP] = {"plain libjpeg-turbo full-size RGB decode",
                             "decode + RRC224 + flip + normalize (bilinear)",
                             "decode + RRC224 + flip + normalize (bicubic)",
                             "decode + RRC224 + flip + RandAugment(2, 9) + normalize",
                             "decode + resize 256 + center crop 224 + normalize (eval)",
                             "  (part) region decode of the RRC224 crops alone"};
    double best[NP] = {0};
    for (int rep = 0; rep < reps; rep++)
        for (int p = 0; p < NP; p++) {
            if (only >= 0 && p != only) continue;
            double t0 = cpu_now();
            for (size_t i = 0; i < n; i++) {
                if (p == 0) {
                    int w = 0, hh = 0, ss, cs;
                    if (tjDecompressHeader3(h, files[i], lens[i], &w, &hh, &ss, &cs) != 0 ||
                        (size_t)w * (size_t)hh > 4096u * 4096u ||
                        tjDecompress2(h, files[i], lens[i], pix, w, 0, hh, TJPF_RGB, 0) != 0) {
                        fprintf(stderr, "bench_data: file %zu of %s: TurboJPEG: %s\n", i, train,
                                (size_t)w * (size_t)hh > 4096u * 4096u ? "image larger than 4096x4096 pixels"
                                                                       : tjGetErrorStr2(h));
                        return 1;
                    }
                    continue;
                }
                if (p == 5) { /* what sv_load_image decodes for the bilinear RRC rows, without the rest */
                    int w, hh, comps;
                    sv_box b;
                    sv_jpeg_region r;
                    if (sv_jpeg_region_open(&jc, files[i], lens[i], &w, &hh, &comps) != SV_OK) return 1;
                    sv_rrc_box(sv_hash2((uint64_t)rep, i), w, hh, 0.08, 1, 0.75, 4.0 / 3, &b);
                    if (sv_resample_plan(&rs, &b, (int)b.x, (int)b.y, (int)(b.x + b.w), (int)(b.y + b.h), 224, 3, 0,
                                         SV_INTERP_BILINEAR) != SV_OK ||
                        sv_jpeg_region_decode(&jc, 3, 1, rs.x0, rs.y0, rs.x1, rs.y1, &r) != SV_OK) {
                        fprintf(stderr, "bench_data: file %zu of %s: %s\n", i, train, sv_err_msg());
                        return 1;
                    }
                    continue;
                }
                sv_image_xform x = {.train = p != 4,
                                    .key = sv_hash2((uint64_t)rep, i),
                                    .img = 224,
                                    .channels = 3,
                                    .scale_min = 0.08,
                                    .scale_max = 1,
                                    .ratio_min = 0.75,
                                    .ratio_max = 4.0 / 3,
                                    .hflip = 0.5,
                                    .crop_pct = 0.875,
                                    .max_pixels = 89478485ull,
                                    .mean = mean,
                                    .std = std,
                                    .interp = p == 2 ? SV_INTERP_BICUBIC : SV_INTERP_BILINEAR,
                                    .randaug_n = p == 3 ? 2 : 0,
                                    .randaug_m = 9};
                if (sv_load_image(&jc, &rs, files[i], lens[i], &x, out) != SV_OK) {
                    fprintf(stderr, "bench_data: file %zu of %s: %s\n", i, train, sv_err_msg());
                    return 1;
                }
            }
            double r = (double)n / (cpu_now() - t0);
            if (r > best[p]) best[p] = r;
        }
    printf("images: %zu from %s, best of %d (thread CPU time)\n", n, train, reps);
    for (int p = 0; p < NP; p++)
        if (best[p] > 0)
            printf("%-56s: %8.1f img/s/core (%3.0f%% of plain decode)\n", names[p], best[p],
                   best[0] > 0 ? 100.0 * best[p] / best[0] : 0.0);
    sv_jpeg_ctx_free(&jc);
    sv_resample_scratch_free(&rs);
    tjDestroy(h);
    free(pix);
    free(out);
    for (size_t i = 0; i < n; i++) free(files[i]);
    free(files);
    free(lens);
    sv_dataset_close(d);
    return 0;
}
