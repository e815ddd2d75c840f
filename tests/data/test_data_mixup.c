/* Mixup / CutMix controls (data/mixup.h) through the loader on the synthetic source: for every
 * pair the soft targets sum to 1 and their lambda explains the images exactly (a blend
 * lam a + (1 - lam) b, or the partner's pixels inside one box whose area is 1 - lam);
 * mode batch: one lambda and kind per global batch; pair: one per pair, shared by both members;
 * elem: one per element, mixed with the partner's unmixed image; --mixup-prob 0 / 0.5 and
 * --mixup-switch-prob 0 / 1 give the fractions they define; --mixup-off-epoch stops mixing at
 * that epoch (smoothed one-hot targets); --cutmix-minmax boxes have sides in
 * [int(S min), int(S max)); world 2 gives the same batches as world 1; the default mode is the
 * historic mixing bit for bit (written out from its definition); soft-target rows take
 * the model's class count when it exceeds the dataset's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "data/loader.h"
#include "data/mixup.h"

enum { N = 512, K = 10, S = 16, C = 3, B = 16, ISZ = C * S * S };
static const float SMOOTH = 0.1f;

static sv_dataset *ds;

static sv_loader_opts base(int world, int rank) {
    sv_loader_opts o = sv_loader_opts_default();
    o.dataset = ds;
    o.batch_local = B / world;
    o.world = world;
    o.rank = rank;
    o.img = S;
    o.channels = C;
    o.seed = 3;
    o.threads = 2;
    o.smoothing = SMOOTH;
    return o;
}

/* steps global batches of (world-1 layout) images, targets and labels */
static void run(const sv_loader_opts *o0, int steps, float *img, float *tgt, int32_t *lab, uint64_t *epoch) {
    int W = o0->world;
    for (int r = 0; r < W; r++) {
        sv_loader_opts o = *o0;
        o.rank = r;
        sv_loader *l;
        CHECK_OK(sv_loader_create(&o, &l));
        for (int s = 0; s < steps; s++) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l, &b));
            size_t g0 = (size_t)s * B + (size_t)r * (size_t)o.batch_local;
            memcpy(img + g0 * ISZ, b->images, (size_t)o.batch_local * ISZ * sizeof(float));
            if (tgt) {
                CHECK(b->soft_targets);
                memcpy(tgt + g0 * K, b->soft_targets, (size_t)o.batch_local * K * sizeof(float));
            } else {
                CHECK(!b->soft_targets);
            }
            memcpy(lab + g0, b->labels, (size_t)o.batch_local * sizeof(int32_t));
            if (epoch) epoch[s] = b->epoch;
        }
        sv_loader_destroy(l);
    }
}

/* kind of mixing that turned a into m with partner p, checked against lam: 0 none, 1 blend, 2 box */
static int classify(const float *a, const float *p, const float *m, double lam, int *box_area) {
    if (!memcmp(a, m, ISZ * sizeof(float))) {
        CHECK_CLOSE(lam, 1.0, 1e-6);
        return 0;
    }
    int y0 = S, y1 = -1, x0 = S, x1 = -1, exact = 1;
    for (int e = 0; e < ISZ; e++) {
        if (m[e] != a[e] && m[e] != p[e]) exact = 0;
        if (m[e] != a[e]) {
            int y = (e / S) % S, x = e % S;
            y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1, x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1;
        }
    }
    if (exact) { /* box: the partner's pixels inside, ours outside */
        for (int c = 0; c < C; c++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    int e = (c * S + y) * S + x, in = y >= y0 && y <= y1 && x >= x0 && x <= x1;
                    CHECK(m[e] == (in ? p[e] : a[e]));
                }
        int area = (y1 - y0 + 1) * (x1 - x0 + 1);
        if (box_area) *box_area = area;
        /* the bounding box of the changed pixels may be smaller than the box where a == p */
        CHECK(1.0 - lam >= (double)area / (S * S) - 1e-6);
        CHECK(1.0 - lam <= (double)(area + 4 * S) / (S * S) + 1e-6);
        return 2;
    }
    for (int e = 0; e < ISZ; e++)
        CHECK_CLOSE(m[e], lam * a[e] + (1 - lam) * p[e], 1e-5 * (1 + fabs(a[e]) + fabs(p[e])));
    return 1;
}

static double lam_of(const float *t, int y, int yo) {
    double s = 0;
    for (int k = 0; k < K; k++) s += t[k];
    CHECK_CLOSE(s, 1.0, 1e-5);
    float off = SMOOTH / K, on = 1.f - SMOOTH + off;
    if (y == yo) return -1; /* not recoverable */
    for (int k = 0; k < K; k++)
        if (k != y && k != yo) CHECK_CLOSE(t[k], off, 1e-7);
    double lam = (t[y] - off) / (on - off);
    CHECK_CLOSE(t[yo], off + (on - off) * (1 - lam), 1e-6);
    return lam;
}

/* The historic mixing, written out from its definition (docs/data.md): pair key
 * hash(hash(hash(seed, 0x313), epoch), position), CutMix when unit(key, 0) < 0.5 (both on),
 * lambda = Beta on counters >= 16, box centre u64(key, 200/201) % S, half-extents cut/2, blend
 * lam a + (1 - lam) b in float. Default flags must reproduce it bit for bit. */
static void legacy_pair(float *a, float *b, uint64_t seed, uint64_t epoch, uint64_t p, float ma, float ca,
                        double *lam_out) {
    uint64_t key = sv_hash2(sv_hash2(sv_hash2(seed, 0x313ull), epoch), p);
    int cut = ca > 0 && (ma <= 0 || sv_rand_unit(key, 0) < 0.5);
    double lam = sv_rand_beta(key, 16, cut ? ca : ma);
    if (!cut) {
        float l = (float)lam, m = 1.f - l;
        for (int e = 0; e < ISZ; e++) {
            float va = a[e], vb = b[e];
            a[e] = l * va + m * vb;
            b[e] = l * vb + m * va;
        }
    } else {
        int side = (int)(S * sqrt(1.0 - lam));
        int cy = (int)(sv_rand_u64(key, 200) % S), cx = (int)(sv_rand_u64(key, 201) % S);
        int y0 = cy - side / 2 < 0 ? 0 : cy - side / 2, y1 = cy + side / 2 > S ? S : cy + side / 2;
        int x0 = cx - side / 2 < 0 ? 0 : cx - side / 2, x1 = cx + side / 2 > S ? S : cx + side / 2;
        for (int c = 0; c < C; c++)
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++) {
                    int e = (c * S + y) * S + x;
                    float t = a[e];
                    a[e] = b[e];
                    b[e] = t;
                }
        lam = 1.0 - (double)(y1 - y0) * (x1 - x0) / (S * S);
    }
    *lam_out = lam;
}

static float raw[64 * B * ISZ], mix[64 * B * ISZ], tgt[64 * B * K], mix2[64 * B * ISZ], tgt2[64 * B * K];
static int32_t lab[64 * B], lab2[64 * B];

typedef struct stats {
    int pairs, kinds[3], elem_diff;
    double batch_lam[64];
    int batch_kind[64], batch_mismatch;
} stats;

static void analyse(const sv_loader_opts *o, int steps, stats *st) {
    memset(st, 0, sizeof *st);
    for (int s = 0; s < steps; s++) {
        st->batch_lam[s] = -2;
        st->batch_kind[s] = -1;
        for (int j = 0; j < B; j += 2) {
            size_t g = (size_t)s * B + (size_t)j;
            const float *a = raw + g * ISZ, *b = a + ISZ, *ma = mix + g * ISZ, *mb = ma + ISZ;
            int ya = lab[g], yb = lab[g + 1];
            double la = lam_of(tgt + g * K, ya, yb), lb = lam_of(tgt + (g + 1) * K, yb, ya);
            if (la < 0) continue;
            int ka = classify(a, b, ma, la, NULL), kb = classify(b, a, mb, lb, NULL);
            st->pairs++;
            st->kinds[ka]++;
            if (o->mixup_mode != SV_MIX_ELEM) {
                CHECK(ka == kb);
                CHECK_CLOSE(la, lb, 1e-6);
            } else {
                st->elem_diff += fabs(la - lb) > 1e-6;
            }
            if (o->mixup_mode == SV_MIX_BATCH) {
                if (st->batch_kind[s] < 0) st->batch_kind[s] = ka, st->batch_lam[s] = la;
                st->batch_mismatch += st->batch_kind[s] != ka || fabs(st->batch_lam[s] - la) > 1e-6;
            }
        }
    }
}

int main(void) {
    sv_dataset_opts dopt = sv_dataset_opts_default();
    dopt.synth_samples = N;
    dopt.synth_classes = K;
    dopt.synth_img = S;
    dopt.synth_channels = C;
    dopt.synth_seed = 5;
    CHECK_OK(sv_dataset_open("synthetic", &dopt, &ds));
    enum { STEPS = 40 }; /* N / B = 32 steps per epoch: 8 steps of epoch 1 */
    sv_loader_opts o = base(1, 0);
    run(&o, STEPS, raw, NULL, lab, NULL);

    stats st;
    /* pair mode (the default), both enabled: each pair one lambda; about half CutMix */
    o = base(1, 0);
    o.mixup_alpha = 0.8f;
    o.cutmix_alpha = 1.0f;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    CHECK(!memcmp(lab, lab2, sizeof lab));
    analyse(&o, STEPS, &st);
    fprintf(stderr, "pair: %d pairs, none %d, mixup %d, cutmix %d\n", st.pairs, st.kinds[0], st.kinds[1], st.kinds[2]);
    CHECK(st.pairs > 200 && st.kinds[1] > st.pairs / 3 && st.kinds[2] > st.pairs / 3);
    /* the default (pair) mode is the historic mixing, bit for bit */
    for (int g = 0; g < STEPS * B; g += 2) {
        static float la[ISZ], lb[ISZ];
        memcpy(la, raw + (size_t)g * ISZ, sizeof la);
        memcpy(lb, raw + (size_t)(g + 1) * ISZ, sizeof lb);
        double lam;
        legacy_pair(la, lb, o.seed, (uint64_t)g / N, (uint64_t)g % N, o.mixup_alpha, o.cutmix_alpha, &lam);
        CHECK(!memcmp(la, mix + (size_t)g * ISZ, sizeof la) && !memcmp(lb, mix + (size_t)(g + 1) * ISZ, sizeof lb));
        float off = SMOOTH / K, on = 1.f - SMOOTH + off, t[K];
        for (int k = 0; k < K; k++) t[k] = off;
        t[lab[g]] += (on - off) * (float)lam;
        t[lab[g + 1]] += (on - off) * (float)(1 - lam);
        CHECK(!memcmp(t, tgt + (size_t)g * K, sizeof t));
    }
    /* ... and world 2 gives the same batches */
    sv_loader_opts o2 = o;
    o2.world = 2;
    o2.batch_local = B / 2;
    run(&o2, STEPS, mix2, tgt2, lab2, NULL);
    CHECK(!memcmp(mix, mix2, sizeof mix) && !memcmp(tgt, tgt2, sizeof tgt));

    /* batch mode: one decision per global batch, same at world 2 */
    o.mixup_mode = SV_MIX_BATCH;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    analyse(&o, STEPS, &st);
    int nk[3] = {0, 0, 0}, distinct = 0;
    for (int s = 0; s < STEPS; s++) {
        if (st.batch_kind[s] >= 0) nk[st.batch_kind[s]]++;
        distinct += s > 0 && fabs(st.batch_lam[s] - st.batch_lam[s - 1]) > 1e-6;
    }
    fprintf(stderr, "batch: mismatches %d, batches mixup %d cutmix %d, lambda changes %d\n", st.batch_mismatch, nk[1],
            nk[2], distinct);
    CHECK(st.batch_mismatch == 0 && nk[1] >= 8 && nk[2] >= 8 && distinct >= STEPS - 3);
    o2.mixup_mode = SV_MIX_BATCH;
    run(&o2, STEPS, mix2, tgt2, lab2, NULL);
    CHECK(!memcmp(mix, mix2, sizeof mix) && !memcmp(tgt, tgt2, sizeof tgt));
    /* ... and with accumulation: micro-batches of B/2, 2 per optimizer step, mix as the batch of B
     * does (one draw per optimizer step, not per micro-batch), bit for bit */
    {
        sv_loader_opts oa = o;
        oa.batch_local = B / 2;
        oa.step_batches = 2;
        sv_loader *l;
        CHECK_OK(sv_loader_create(&oa, &l));
        for (int s = 0; s < 2 * STEPS; s++) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l, &b));
            size_t g0 = (size_t)s * (B / 2);
            memcpy(mix2 + g0 * ISZ, b->images, (size_t)(B / 2) * ISZ * sizeof(float));
            memcpy(tgt2 + g0 * K, b->soft_targets, (size_t)(B / 2) * K * sizeof(float));
        }
        sv_loader_destroy(l);
        CHECK(!memcmp(mix, mix2, sizeof mix) && !memcmp(tgt, tgt2, sizeof tgt));
        /* a resume continues at a step's start wherever its cursor lies (a checkpoint of a run with
         * another --batch-size): the two batches after the seek share their step's cursor, the
         * next two the next one (keyed per step, never half a step each) */
        CHECK_OK(sv_loader_create(&oa, &l));
        CHECK_OK(sv_loader_seek(l, 0, B / 2));
        uint64_t sc[4];
        for (int s = 0; s < 4; s++) {
            const sv_batch *b;
            CHECK_OK(sv_loader_next(l, &b));
            sc[s] = b->step_cursor;
            CHECK(b->cursor == (uint64_t)(B / 2) * (uint64_t)(s + 1));
        }
        sv_loader_destroy(l);
        CHECK(sc[0] == B / 2 && sc[1] == B / 2 && sc[2] == B / 2 + B && sc[3] == B / 2 + B);
    }

    /* elem mode: each element its own lambda, mixed with the partner's unmixed image */
    o.mixup_mode = SV_MIX_ELEM;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    analyse(&o, STEPS, &st);
    fprintf(stderr, "elem: %d pairs, lambdas differ within %d, mixup %d cutmix %d\n", st.pairs, st.elem_diff,
            st.kinds[1], st.kinds[2]);
    CHECK(st.elem_diff > st.pairs * 9 / 10 && st.kinds[1] > st.pairs / 4 && st.kinds[2] > st.pairs / 4);

    /* --mixup-prob: 0 never mixes (targets smoothed one-hot), 0.5 about half of the pairs */
    o = base(1, 0);
    o.mixup_alpha = 0.8f;
    o.mixup_prob = 0.f;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    analyse(&o, STEPS, &st);
    CHECK(st.kinds[0] == st.pairs && !memcmp(raw, mix, sizeof raw));
    o.mixup_prob = 0.5f;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    analyse(&o, STEPS, &st);
    fprintf(stderr, "prob 0.5: unmixed %d of %d\n", st.kinds[0], st.pairs);
    CHECK(fabs(st.kinds[0] - 0.5 * st.pairs) < 4 * sqrt(0.25 * st.pairs) && st.kinds[2] == 0);

    /* --mixup-switch-prob: 0 = only mixup, 1 = only cutmix */
    o = base(1, 0);
    o.mixup_alpha = 0.8f;
    o.cutmix_alpha = 1.f;
    o.mixup_switch_prob = 0.f;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    analyse(&o, STEPS, &st);
    CHECK(st.kinds[2] == 0 && st.kinds[1] == st.pairs);
    o.mixup_switch_prob = 1.f;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    analyse(&o, STEPS, &st);
    fprintf(stderr, "switch 1: none %d mixup %d cutmix %d\n", st.kinds[0], st.kinds[1], st.kinds[2]);
    CHECK(st.kinds[1] == 0 && st.kinds[0] <= st.pairs / 20); /* boxes of side < 2 are empty (lambda 1) */

    /* --mixup-off-epoch 1: epoch 0 mixes, epoch 1 does not (smoothed one-hot targets) */
    o = base(1, 0);
    o.mixup_alpha = 0.8f;
    o.mixup_off_epoch = 1;
    uint64_t ep[STEPS];
    run(&o, STEPS, mix, tgt, lab2, ep);
    int mixed0 = 0;
    for (int s = 0; s < STEPS; s++) {
        size_t g = (size_t)s * B;
        int same = !memcmp(raw + g * ISZ, mix + g * ISZ, (size_t)B * ISZ * sizeof(float));
        if (ep[s] >= 1) {
            CHECK(same);
            for (int j = 0; j < B; j++)
                for (int k = 0; k < K; k++)
                    CHECK_CLOSE(tgt[(g + j) * K + k], k == lab[g + j] ? 1 - SMOOTH + SMOOTH / K : SMOOTH / K, 1e-7);
        } else {
            mixed0 += !same;
        }
    }
    CHECK(ep[STEPS - 1] == 1 && mixed0 == N / B);

    /* --cutmix-minmax 0.25,0.75: box sides in [4, 12) */
    o = base(1, 0);
    o.cutmix_minmax[0] = 0.25f;
    o.cutmix_minmax[1] = 0.75f;
    run(&o, STEPS, mix, tgt, lab2, NULL);
    int boxes = 0, amin = S * S, amax = 0;
    for (int s = 0; s < STEPS; s++)
        for (int j = 0; j < B; j += 2) {
            size_t g = (size_t)s * B + (size_t)j;
            double la = lam_of(tgt + g * K, lab[g], lab[g + 1]);
            if (la < 0) continue;
            int area = 0;
            CHECK(classify(raw + g * ISZ, raw + (g + 1) * ISZ, mix + g * ISZ, la, &area) == 2);
            /* lambda is exact here: 1 - h w / S^2 with h, w in [4, 12) */
            int hw = (int)lround((1 - la) * S * S), ok = 0;
            for (int h = 4; h < 12; h++) ok |= hw % h == 0 && hw / h >= 4 && hw / h < 12;
            CHECK(ok);
            amin = area < amin ? area : amin, amax = area > amax ? area : amax;
            boxes++;
        }
    fprintf(stderr, "minmax: %d boxes, changed area %d..%d\n", boxes, amin, amax);
    CHECK(boxes > 200 && amax <= 11 * 11 && amax >= 81);
    /* soft-target rows as wide as the model's classes when it has more than the dataset */
    o = base(1, 0);
    o.mixup_alpha = 0.8f;
    o.num_classes = K + 3;
    {
        sv_loader *l;
        CHECK_OK(sv_loader_create(&o, &l));
        const sv_batch *b;
        CHECK_OK(sv_loader_next(l, &b));
        for (int j = 0; j < B; j++) {
            double sum = 0;
            for (int k = 0; k < K + 3; k++) sum += b->soft_targets[j * (K + 3) + k];
            CHECK_CLOSE(sum, 1.0, 1e-5);
            for (int k = K; k < K + 3; k++) CHECK_CLOSE(b->soft_targets[j * (K + 3) + k], SMOOTH / (K + 3), 1e-7);
        }
        sv_loader_destroy(l);
        o.num_classes = K - 1;
        CHECK(sv_loader_create(&o, &l) == SV_ERR_INVALID);
        sv_err_clear();
    }
    sv_dataset_close(ds);
    return 0;
}
