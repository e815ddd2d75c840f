/* Sampler + loader on the in-memory synthetic source: epoch coverage at world sizes 1..4
 * (drop_last for train, exactly-once with padding for eval), resume from a cursor at another
 * world size, output independent of the thread count, and that the synthetic task is learnable
 * (a nearest-centroid classifier beats chance by far). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/loader.h"
#include "data/sampler.h"

static sv_dataset *synth(uint64_t n, int K, int img) {
    sv_dataset_opts o = sv_dataset_opts_default();
    o.synth_samples = n;
    o.synth_classes = K;
    o.synth_img = img;
    o.synth_channels = 3;
    o.synth_seed = 7;
    sv_dataset *d;
    CHECK_OK(sv_dataset_open("synthetic", &o, &d));
    CHECK(sv_dataset_len(d) == n && sv_dataset_num_classes(d) == K);
    return d;
}

static sv_loader *mk(const sv_dataset *d, int B, int rank, int world, int train, int threads) {
    sv_loader_opts o = sv_loader_opts_default();
    o.dataset = d;
    o.batch_local = B;
    o.rank = rank;
    o.world = world;
    o.seed = 11;
    o.img = 8;
    o.channels = 3;
    o.mode = train ? SV_TRANSFORM_TRAIN : SV_TRANSFORM_EVAL;
    o.threads = threads;
    o.prefetch = 3;
    sv_loader *l;
    CHECK_OK(sv_loader_create(&o, &l));
    return l;
}

/* Train: over one epoch at world W, every sample appears at most once, exactly floor(N/G)*G
 * of them, and the batch metadata chains. */
static void coverage_train(const sv_dataset *d, int B, int W) {
    uint64_t N = sv_dataset_len(d), G = (uint64_t)B * (uint64_t)W, steps = N / G;
    uint8_t *seen = calloc(N, 1);
    sv_loader *l[4];
    for (int r = 0; r < W; r++) l[r] = mk(d, B, r, W, 1, 2);
    for (uint64_t s = 0; s < steps; s++) {
        for (int r = 0; r < W; r++) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l[r], &b));
            CHECK(b && b->epoch == 0 && b->step_in_epoch == s && b->cursor == s * G && b->n_valid == B);
            for (int j = 0; j < B; j++) {
                CHECK(b->valid[j] == 1);
                int64_t i = b->sample_index[j];
                CHECK(i >= 0 && (uint64_t)i < N);
                CHECK(seen[i] == 0);
                seen[i] = 1;
                CHECK(b->labels[j] == sv_dataset_label(d, (size_t)i));
            }
        }
    }
    uint64_t total = 0;
    for (uint64_t i = 0; i < N; i++) total += seen[i];
    CHECK(total == steps * G);
    /* the next batch is epoch 1, step 0 */
    const sv_batch *b;
    CHECK_OK(sv_loader_next(l[0], &b));
    CHECK(b->epoch == 1 && b->cursor == 0);
    for (int r = 0; r < W; r++) sv_loader_destroy(l[r]);
    free(seen);
}

/* Eval: every sample exactly once over all ranks, padding marked invalid, then end of pass. */
static void coverage_eval(const sv_dataset *d, int B, int W) {
    uint64_t N = sv_dataset_len(d);
    uint8_t *seen = calloc(N, 1);
    for (int r = 0; r < W; r++) {
        sv_loader *l = mk(d, B, r, W, 0, 3);
        uint64_t nb = 0;
        for (;;) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l, &b));
            if (!b) break;
            nb++;
            int nv = 0;
            for (int j = 0; j < B; j++) {
                if (!b->valid[j]) {
                    CHECK(b->sample_index[j] == -1);
                    continue;
                }
                nv++;
                int64_t i = b->sample_index[j];
                CHECK(seen[i] == 0);
                seen[i] = 1;
            }
            CHECK(nv == b->n_valid);
        }
        CHECK(nb == sv_loader_steps_per_epoch(l));
        sv_loader_destroy(l);
    }
    for (uint64_t i = 0; i < N; i++) CHECK(seen[i] == 1);
    free(seen);
}

/* The global sample sequence from (epoch, cursor) at world W: ranks' slices concatenated. */
static void global_seq(const sv_dataset *d, int B, int W, uint64_t epoch, uint64_t cursor, int steps, int64_t *out,
                       float *img0) {
    sv_loader *l[4];
    for (int r = 0; r < W; r++) {
        l[r] = mk(d, B, r, W, 1, 1 + r % 3);
        CHECK_OK(sv_loader_seek(l[r], epoch, cursor));
    }
    size_t k = 0;
    for (int s = 0; s < steps; s++)
        for (int r = 0; r < W; r++) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l[r], &b));
            if (s == 0 && r == 0 && img0) memcpy(img0, b->images, 3 * 8 * 8 * sizeof(float));
            for (int j = 0; j < B; j++) out[k++] = b->sample_index[j];
        }
    for (int r = 0; r < W; r++) sv_loader_destroy(l[r]);
}

int main(void) {
    /* permutation is a permutation and depends on the epoch */
    uint32_t p0[1000], p1[1000];
    sv_sampler_perm(3, 0, p0, 1000);
    sv_sampler_perm(3, 1, p1, 1000);
    uint8_t hit[1000] = {0};
    int same = 0;
    for (int i = 0; i < 1000; i++) {
        CHECK(p0[i] < 1000 && !hit[p0[i]]);
        hit[p0[i]] = 1;
        same += p0[i] == p1[i];
    }
    CHECK(same < 20);

    sv_dataset *d = synth(103, 10, 8); /* 103: prime, not divisible by any G below */
    for (int W = 1; W <= 4; W++) {
        coverage_train(d, 5, W);
        coverage_eval(d, 5, W);
    }

    /* gradient accumulation (step_batches A): the epoch drops its tail at the optimizer's batch
     * A*G, so it holds floor(N/(A*G))*A micro-batches and the next epoch starts after them;
     * fewer than A*G samples is an error */
    for (int A = 2; A <= 3; A++) {
        sv_loader_opts o = sv_loader_opts_default();
        o.dataset = d;
        o.batch_local = 5;
        o.img = 8;
        o.threads = 1;
        o.step_batches = A;
        sv_loader *l;
        CHECK_OK(sv_loader_create(&o, &l));
        uint64_t want = 103 / (5 * (uint64_t)A) * (uint64_t)A; /* 20 (A 2: not 103/5 = 20.6 -> 20), 18 (A 3) */
        CHECK(sv_loader_steps_per_epoch(l) == want && want % (uint64_t)A == 0);
        const sv_batch *bb;
        for (uint64_t s = 0; s < want; s++) {
            CHECK_OK(sv_loader_next(l, &bb));
            CHECK(bb->epoch == 0 && bb->step_in_epoch == s);
        }
        CHECK_OK(sv_loader_next(l, &bb));
        CHECK(bb->epoch == 1 && bb->cursor == 0);
        sv_loader_destroy(l);
        CHECK(sv_sampler_epoch_len(103, 5, (uint64_t)A) == want * 5);
    }
    {
        sv_loader_opts o = sv_loader_opts_default();
        o.dataset = d;
        o.batch_local = 40;
        o.img = 8;
        o.step_batches = 3; /* 120 > 103 samples: no whole optimizer step */
        sv_loader *l = NULL;
        CHECK(sv_loader_create(&o, &l) == SV_ERR_INVALID && !l);
        CHECK(strstr(sv_err_msg(), "optimizer step") != NULL);
    }

    /* resume: run W=2,B=6 (G=12) for 3 steps, continue at W=3,B=4 (G=12) and at W=4,B=2
     * (G=8) from the stored cursor; both must consume exactly the positions that an
     * uninterrupted single-rank run with the same G visits. */
    int64_t a[128], b[128], ref[128];
    const sv_batch *bt;
    sv_loader *l0 = mk(d, 6, 0, 2, 1, 2);
    for (int s = 0; s < 3; s++) CHECK_OK(sv_loader_next(l0, &bt));
    uint64_t ep = bt->next_epoch, cur = bt->next_cursor;
    CHECK(ep == 0 && cur == 36);
    sv_loader_destroy(l0);
    global_seq(d, 4, 3, ep, cur, 4, a, NULL); /* 48 samples */
    global_seq(d, 12, 1, 0, 0, 7, ref, NULL); /* positions 0..83 */
    for (int i = 0; i < 48; i++) CHECK(a[i] == ref[36 + i]);
    global_seq(d, 2, 4, ep, cur, 6, b, NULL); /* 48 samples at G=8 */
    for (int i = 0; i < 48; i++) CHECK(b[i] == ref[36 + i]);

    /* thread count does not change any byte of the output (train + mixup) */
    sv_dataset *d2 = synth(64, 4, 8);
    float *first = NULL;
    for (int threads = 1; threads <= 4; threads += 3) {
        sv_loader_opts o = sv_loader_opts_default();
        o.dataset = d2;
        o.batch_local = 8;
        o.img = 8;
        o.seed = 5;
        o.threads = threads;
        o.mixup_alpha = 0.8f;
        o.cutmix_alpha = 1.0f;
        o.smoothing = 0.1f;
        sv_loader *l;
        CHECK_OK(sv_loader_create(&o, &l));
        size_t per = 8 * 3 * 8 * 8 + 8 * 4;
        if (!first) first = malloc(per * 10 * sizeof(float));
        for (int s = 0; s < 10; s++) {
            CHECK_OK(sv_loader_next(l, &bt));
            CHECK(bt->soft_targets != NULL);
            for (int j = 0; j < 8; j++) { /* soft targets: rows sum to 1, >= smoothing/K */
                double sum = 0;
                for (int k = 0; k < 4; k++) {
                    CHECK(bt->soft_targets[j * 4 + k] >= 0.1f / 4 - 1e-6f);
                    sum += bt->soft_targets[j * 4 + k];
                }
                CHECK_CLOSE(sum, 1.0, 1e-5);
            }
            float *dst = first + per * (size_t)s;
            if (threads == 1) {
                memcpy(dst, bt->images, 8 * 3 * 64 * sizeof(float));
                memcpy(dst + 8 * 3 * 64, bt->soft_targets, 32 * sizeof(float));
            } else {
                CHECK(memcmp(dst, bt->images, 8 * 3 * 64 * sizeof(float)) == 0);
                CHECK(memcmp(dst + 8 * 3 * 64, bt->soft_targets, 32 * sizeof(float)) == 0);
            }
        }
        sv_loader_destroy(l);
    }
    free(first);

    /* learnable: nearest class centroid on 16x16 synthetic images, 10 classes */
    sv_dataset *d3 = synth(1200, 10, 16);
    sv_loader_opts o = sv_loader_opts_default();
    o.dataset = d3;
    o.batch_local = 100;
    o.img = 16;
    o.mode = SV_TRANSFORM_EVAL;
    o.threads = 2;
    sv_loader *l;
    CHECK_OK(sv_loader_create(&o, &l));
    enum { D = 3 * 16 * 16 };
    static double cent[10][D];
    int cnt[10] = {0}, correct = 0, tested = 0;
    for (int s = 0; s < 12; s++) {
        CHECK_OK(sv_loader_next(l, &bt));
        for (int j = 0; j < 100; j++) {
            const float *x = bt->images + (size_t)j * D;
            int y = bt->labels[j];
            if (s < 8) {
                for (int e = 0; e < D; e++) cent[y][e] += x[e];
                cnt[y]++;
                continue;
            }
            if (s == 8 && j == 0)
                for (int k = 0; k < 10; k++) {
                    CHECK(cnt[k] > 0);
                    for (int e = 0; e < D; e++) cent[k][e] /= cnt[k];
                }
            int best = 0;
            double bd = 1e300;
            for (int k = 0; k < 10; k++) {
                double dd = 0;
                for (int e = 0; e < D; e++) dd += (x[e] - cent[k][e]) * (x[e] - cent[k][e]);
                if (dd < bd) bd = dd, best = k;
            }
            correct += best == y;
            tested++;
        }
    }
    fprintf(stderr, "synthetic nearest-centroid accuracy %.3f (chance 0.1)\n", (double)correct / tested);
    CHECK(tested == 400 && correct > 0.6 * tested);
    sv_loader_destroy(l);
    sv_dataset_close(d);
    sv_dataset_close(d2);
    sv_dataset_close(d3);
    return 0;
}
