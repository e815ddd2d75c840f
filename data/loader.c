/* Threaded batch loader: workers claim pairs of samples of the oldest unfilled batch slot,
 * decode + transform them into the slot, and the consumer takes slots strictly in sequence, so
 * the output order never depends on the thread count. */
#include "data/loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/cpus.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/jpeg.h"
#include "data/mixup.h"
#include "data/randaug.h"
#include "data/sampler.h"
#include "data/synth.h"
#include "data/transform.h"

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_OUT };
enum { MAX_SUBSTITUTE = 64 };

typedef struct slot {
    sv_batch b;
    int state;
    uint64_t seq;
    int claimed, done;
} slot;

typedef struct worker {
    struct sv_loader *l;
    pthread_t th;
    sv_jpeg_ctx jc;
    sv_resample_scratch rs;
    uint8_t *file;
    size_t file_cap;
    uint8_t *pix; /* synthetic render target */
    uint8_t *ra;  /* RandAugment scratch for synthetic samples */
    float *orig;  /* mixup elem mode: the unmixed first image of a pair */
} worker;

struct sv_loader {
    sv_loader_opts o;
    const sv_dataset *d;
    uint64_t n, G, steps;
    uint64_t n_epoch; /* positions an epoch uses: n (eval), whole optimizer steps of them (train) */
    int K, train, synthetic, mixing;
    uint64_t R;     /* aug_repeats (1 = off) */
    sv_mix_cfg mix; /* mixup/cutmix controls */
    float mean[3], std[3];
    slot *slots;
    int P;
    worker *workers;
    int nthreads;
    uint32_t *perm; /* permutation of perm_epoch */
    uint64_t perm_epoch;
    int perm_valid;
    _Atomic uint8_t *bad; /* (n) 1 once a file failed to decode */
    _Atomic uint64_t substituted, bad_files, unreadable;

    pthread_mutex_t mu;
    pthread_cond_t work_cv, ready_cv, idle_cv;
    int stop, paused, inflight;
    int fill; /* slot index being claimed, -1 none */
    uint64_t plan_seq, out_seq, plan_epoch, plan_cursor;
    /* the optimizer step being planned (step_batches): where it began, and its batches so far
     * (counted from create / seek: a resume continues at a step's start) */
    uint64_t plan_step_epoch, plan_step_cursor, plan_micro;
    int plan_done; /* eval: pass fully planned */
    int out_slot;  /* slot handed to the consumer, -1 none */
    sv_status fatal;
    char fatal_msg[512];
    uint64_t batches;
    double wait_s;
};

static void *xalloc(const sv_loader_opts *o, size_t bytes) {
    bytes = (bytes + 63) & ~(size_t)63;
    if (o->alloc) return o->alloc(o->alloc_ctx, bytes);
    return aligned_alloc(64, bytes ? bytes : 64);
}
static void xfree(const sv_loader_opts *o, void *p) {
    if (!p) return;
    if (o->free)
        o->free(o->alloc_ctx, p);
    else
        free(p);
}

sv_loader_opts sv_loader_opts_default(void) {
    sv_loader_opts o;
    memset(&o, 0, sizeof o);
    o.batch_local = 32;
    o.world = 1;
    o.img = 224;
    o.channels = 3;
    o.crop_pct = 0.875;
    o.scale_min = 0.08f;
    o.scale_max = 1.f;
    o.ratio_min = 3.f / 4.f;
    o.ratio_max = 4.f / 3.f;
    o.hflip = 0.5f;
    o.max_pixels = 89478485ull;
    o.mixup_prob = 1.f;
    o.mixup_switch_prob = 0.5f;
    o.recount = 1;
    return o;
}

sv_loader_opts sv_loader_opts_for(const sv_dataset *ds, sv_transform_mode mode, int batch_local, int rank, int world,
                                  uint64_t seed, int img, int channels) {
    sv_loader_opts o = sv_loader_opts_default();
    o.dataset = ds;
    o.mode = mode;
    o.batch_local = batch_local;
    o.rank = rank;
    o.world = world;
    o.seed = seed;
    o.img = img;
    o.channels = channels;
    o.norm = channels == 1 ? SV_NORM_HALF : SV_NORM_IMAGENET;
    return o;
}

static uint64_t sample_key(uint64_t seed, uint64_t epoch, uint64_t idx) {
    return sv_hash2(sv_hash2(sv_hash2(seed, 0xa06ull), epoch), idx);
}

enum { SAMPLE_FATAL = -1, SAMPLE_UNREADABLE = -2 };

/* Produce sample of dataset index idx into img; returns the index used, SAMPLE_FATAL on a fatal
 * error (message in the thread's error state), or SAMPLE_UNREADABLE when idx's file is
 * unreadable and no_substitute forbids a replacement. Substitution: idx+1, idx+2, ... mod n. */
static int64_t make_sample(worker *w, uint64_t epoch, uint64_t idx, uint32_t copy, float *img, int *label) {
    sv_loader *l = w->l;
    const sv_loader_opts *o = &l->o;
    uint64_t key = sample_key(o->seed, epoch, idx);
    if (copy) key = sv_hash2(key, 0x5e9ull + copy); /* each repeated copy augments differently */
    sv_image_xform x = {.train = l->train,
                        .key = key,
                        .img = o->img,
                        .channels = o->channels,
                        .scale_min = o->scale_min,
                        .scale_max = o->scale_max,
                        .ratio_min = o->ratio_min,
                        .ratio_max = o->ratio_max,
                        .hflip = o->hflip,
                        .crop_pct = o->crop_pct,
                        .max_pixels = o->max_pixels,
                        .mean = l->mean,
                        .std = l->std,
                        .interp = (sv_interp)o->interp,
                        .randaug_n = o->randaug_n,
                        .randaug_m = o->randaug_m,
                        .aa = &o->aa,
                        .three_aug = o->three_augment,
                        .color_jitter = o->color_jitter,
                        .simple_crop = o->simple_crop,
                        .erase = {.prob = o->reprob, .mode = o->remode, .max_count = o->recount}};
    if (l->synthetic) {
        int side, ch;
        uint64_t tseed;
        sv_dataset_synth_params(l->d, &side, &ch, &tseed);
        *label = sv_dataset_label(l->d, idx);
        sv_synth_render(tseed, idx, *label, o->img, o->img, o->channels, w->pix);
        if (l->train && o->randaug_n > 0) {
            uint8_t fill[3];
            for (int c = 0; c < o->channels; c++) fill[c] = (uint8_t)(l->mean[c] * 255.f + 0.5f);
            sv_randaug(sv_hash2(key, 0x7a4dull), o->randaug_n, o->randaug_m, w->pix, o->img, o->channels, fill, w->ra);
        }
        if (l->train) {
            uint8_t fill[3];
            for (int c = 0; c < o->channels; c++) fill[c] = (uint8_t)(l->mean[c] * 255.f + 0.5f);
            sv_image_xform xs = x;
            xs.randaug_n = 0; /* applied above */
            sv_augment_u8(&xs, key, w->pix, o->img, o->channels, fill, w->ra);
        }
        size_t plane = (size_t)o->img * (size_t)o->img;
        for (int c = 0; c < o->channels; c++) {
            float a = 1.f / (255.f * l->std[c]), b = -l->mean[c] / l->std[c];
            for (size_t p = 0; p < plane; p++)
                img[(size_t)c * plane + p] = (float)w->pix[p * (size_t)o->channels + (size_t)c] * a + b;
        }
        if (l->train) sv_augment_f32(&x, key, img, o->img, o->channels);
        return (int64_t)idx;
    }
    uint64_t tries = o->no_substitute ? 1 : MAX_SUBSTITUTE; /* no_substitute: idx itself only */
    for (uint64_t t = 0; t < tries && t < l->n; t++) {
        uint64_t k = (idx + t) % l->n;
        if (atomic_load(&l->bad[k])) continue;
        size_t len = 0;
        sv_status s = sv_dataset_read(l->d, k, &w->file, &w->file_cap, &len);
        if (s == SV_OK) s = sv_load_image(&w->jc, &w->rs, w->file, len, &x, img);
        if (s == SV_OK) {
            if (t > 0) atomic_fetch_add(&l->substituted, 1);
            *label = sv_dataset_label(l->d, k);
            return (int64_t)k;
        }
        if (s == SV_ERR_OOM) return SAMPLE_FATAL;
        uint8_t was = atomic_exchange(&l->bad[k], 1);
        if (!was) {
            char name[1024];
            atomic_fetch_add(&l->bad_files, 1);
            sv_dataset_sample_name(l->d, k, name, sizeof name);
            if (o->no_substitute)
                SV_WARN("data: unreadable image %s (%s); not substituted", name, sv_err_msg());
            else
                SV_WARN("data: skipping unreadable image %s (%s); substituting the next sample", name, sv_err_msg());
        }
        sv_err_clear();
    }
    if (o->no_substitute) {
        *label = 0;
        return SAMPLE_UNREADABLE;
    }
    char name[1024];
    sv_dataset_sample_name(l->d, idx, name, sizeof name);
    if (l->n <= MAX_SUBSTITUTE)
        SV_FAIL(SV_ERR_CORRUPT, "data: every image of the data set (%llu) is unreadable", (unsigned long long)l->n);
    else
        SV_FAIL(SV_ERR_CORRUPT, "data: %d images in a row from %s are unreadable", MAX_SUBSTITUTE, name);
    return SAMPLE_FATAL;
}

/* Plan the next batch into slot si (under the lock). */
static void plan_batch(sv_loader *l, int si) {
    slot *s = &l->slots[si];
    sv_batch *b = &s->b;
    int B = l->o.batch_local;
    if (l->train && (!l->perm_valid || l->perm_epoch != l->plan_epoch)) {
        sv_sampler_perm(l->o.seed, l->plan_epoch, l->perm, l->n);
        l->perm_epoch = l->plan_epoch;
        l->perm_valid = 1;
    }
    b->epoch = l->plan_epoch;
    b->cursor = l->plan_cursor;
    const uint64_t A = l->o.step_batches > 1 ? (uint64_t)l->o.step_batches : 1;
    if (l->plan_micro == 0 || l->plan_step_epoch != l->plan_epoch) { /* a step begins (epochs hold whole steps) */
        l->plan_step_epoch = l->plan_epoch;
        l->plan_step_cursor = l->plan_cursor;
        l->plan_micro = 0;
    }
    b->step_cursor = l->plan_step_cursor;
    if (++l->plan_micro == A) l->plan_micro = 0;
    b->step_in_epoch = l->plan_cursor / l->G;
    uint64_t base = l->plan_cursor + (uint64_t)l->o.rank * (uint64_t)B;
    b->n_valid = 0;
    b->n_unreadable = 0;
    for (int j = 0; j < B; j++) {
        uint64_t p = base + (uint64_t)j;
        if (p < l->n) {
            uint64_t u = p;
            uint32_t copy = 0;
            if (l->train && l->R > 1) sv_sampler_repeat(l->G, l->R, p, &u, &copy);
            b->sample_index[j] = l->train ? (int64_t)l->perm[u] : (int64_t)p;
            b->repeat[j] = copy;
            b->valid[j] = 1;
            b->n_valid++;
        } else {
            b->sample_index[j] = -1;
            b->repeat[j] = 0;
            b->valid[j] = 0;
        }
    }
    uint64_t ne = l->plan_epoch, nc = l->plan_cursor + l->G;
    if (!sv_sampler_normalise(l->train, l->n_epoch, l->G, &ne, &nc)) l->plan_done = 1;
    b->next_epoch = ne;
    b->next_cursor = nc;
    l->plan_epoch = ne;
    l->plan_cursor = nc;
    s->seq = l->plan_seq++;
    s->state = SLOT_FILLING;
    s->claimed = s->done = 0;
}

static void fill_pair(worker *w, slot *s, int j0, int cnt) {
    sv_loader *l = w->l;
    sv_batch *b = &s->b;
    size_t isz = (size_t)l->o.channels * (size_t)l->o.img * (size_t)l->o.img;
    for (int j = j0; j < j0 + cnt; j++) {
        float *img = b->images + (size_t)j * isz;
        if (!b->valid[j]) {
            memset(img, 0, isz * sizeof(float));
            b->labels[j] = 0;
            continue;
        }
        int label = 0;
        int64_t used = make_sample(w, b->epoch, (uint64_t)b->sample_index[j], b->repeat[j], img, &label);
        if (used == SAMPLE_UNREADABLE) { /* no_substitute: a hole the caller sees (valid 0, index kept) */
            memset(img, 0, isz * sizeof(float));
            b->labels[j] = 0;
            pthread_mutex_lock(&l->mu); /* the slot's counters; read by the consumer under it */
            b->valid[j] = 0;
            b->n_valid--;
            b->n_unreadable++;
            pthread_mutex_unlock(&l->mu);
            atomic_fetch_add(&l->unreadable, 1);
            continue;
        }
        if (used < 0) {
            pthread_mutex_lock(&l->mu);
            if (l->fatal == SV_OK) {
                l->fatal = SV_ERR_CORRUPT;
                snprintf(l->fatal_msg, sizeof l->fatal_msg, "%s", sv_err_msg());
            }
            pthread_mutex_unlock(&l->mu);
            memset(img, 0, isz * sizeof(float));
            used = b->sample_index[j];
        }
        b->sample_index[j] = used;
        b->labels[j] = label;
    }
    if (!l->mixing) return;
    /* pair (j0, j0+1) = global positions (p, p+1), p even when cursor and batch_local are */
    uint64_t p = b->cursor + (uint64_t)l->o.rank * (uint64_t)l->o.batch_local + (uint64_t)j0;
    float *ia = b->images + (size_t)j0 * isz, *ib = ia + isz;
    int S = l->o.img, C = l->o.channels, cut_a = 0, cut_b = 0;
    double lam_a = 1.0, lam_b = 1.0;
    sv_mix_box box_a = {0}, box_b = {0};
    uint64_t ep = b->epoch;
    if (l->o.mixup_off_epoch > 0 && ep >= (uint64_t)l->o.mixup_off_epoch) {
        /* timm mixup_enabled = False: lambda 1, smoothed one-hot targets */
    } else if (l->mix.mode == SV_MIX_ELEM) {
        uint64_t ka = sv_hash2(sv_hash2(sv_hash2(l->o.seed, 0x315ull), ep), p),
                 kb = sv_hash2(sv_hash2(sv_hash2(l->o.seed, 0x315ull), ep), p + 1);
        sv_mix_draw(&l->mix, ka, &cut_a, &lam_a);
        sv_mix_draw(&l->mix, kb, &cut_b, &lam_b);
        if (cut_a) lam_a = sv_mix_box_draw(&l->mix, ka, S, lam_a, &box_a);
        if (cut_b) lam_b = sv_mix_box_draw(&l->mix, kb, S, lam_b, &box_b);
        memcpy(w->orig, ia, isz * sizeof(float));
        if (cut_a || lam_a != 1.0) sv_mix_into(ia, ib, C, S, cut_a, &box_a, lam_a);
        if (cut_b || lam_b != 1.0) sv_mix_into(ib, w->orig, C, S, cut_b, &box_b, lam_b);
    } else {
        /* batch mode: one draw per optimizer step (keyed on where the step began), so --accum A
         * mixes as the A-times bigger batch does (docs/training.md) */
        uint64_t key = l->mix.mode == SV_MIX_BATCH
            ? sv_hash2(sv_hash2(sv_hash2(l->o.seed, 0x314ull), ep), b->step_cursor)
            : sv_hash2(sv_hash2(sv_hash2(l->o.seed, 0x313ull), ep), p);
        sv_mix_draw(&l->mix, key, &cut_a, &lam_a);
        if (cut_a) lam_a = sv_mix_box_draw(&l->mix, key, S, lam_a, &box_a);
        if (cut_a || lam_a != 1.0) sv_mix_pair(ia, ib, C, S, cut_a, &box_a, lam_a);
        lam_b = lam_a;
    }
    float off = l->o.smoothing / (float)l->K, on = 1.f - l->o.smoothing + off;
    int ya = b->labels[j0], yb = b->labels[j0 + 1];
    float *ta = b->soft_targets + (size_t)j0 * (size_t)l->K, *tb = ta + l->K;
    for (int k = 0; k < l->K; k++) ta[k] = tb[k] = off;
    ta[ya] += (on - off) * (float)lam_a;
    ta[yb] += (on - off) * (float)(1 - lam_a);
    tb[yb] += (on - off) * (float)lam_b;
    tb[ya] += (on - off) * (float)(1 - lam_b);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    sv_loader *l = w->l;
    int B = l->o.batch_local;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        if (l->paused) {
            pthread_cond_wait(&l->work_cv, &l->mu);
            continue;
        }
        if (l->fill >= 0 && l->slots[l->fill].claimed < B) {
            slot *s = &l->slots[l->fill];
            int j0 = s->claimed, cnt = B - j0 < 2 ? B - j0 : 2;
            s->claimed += cnt;
            l->inflight++;
            pthread_mutex_unlock(&l->mu);
            fill_pair(w, s, j0, cnt);
            pthread_mutex_lock(&l->mu);
            l->inflight--;
            s->done += cnt;
            if (s->done == B) {
                s->state = SLOT_READY;
                pthread_cond_broadcast(&l->ready_cv);
            }
            if (l->inflight == 0) pthread_cond_broadcast(&l->idle_cv);
            continue;
        }
        int next = (int)(l->plan_seq % (uint64_t)l->P);
        if (!l->plan_done && l->slots[next].state == SLOT_FREE) {
            plan_batch(l, next);
            l->fill = next;
            pthread_cond_broadcast(&l->work_cv);
            continue;
        }
        l->fill = -1;
        pthread_cond_wait(&l->work_cv, &l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

uint64_t sv_loader_steps_per_epoch(const sv_loader *l) { return l->steps; }

sv_status sv_loader_create(const sv_loader_opts *o, sv_loader **out) {
    *out = NULL;
    if (!o->dataset) return SV_FAIL(SV_ERR_INVALID, "loader: no dataset");
    if (o->world < 1 || o->rank < 0 || o->rank >= o->world)
        return SV_FAIL(SV_ERR_INVALID, "loader: rank %d / world %d out of range", o->rank, o->world);
    if (o->batch_local < 1) return SV_FAIL(SV_ERR_INVALID, "loader: batch_local %d must be >= 1", o->batch_local);
    if (o->img < 1 || o->img > 1024) return SV_FAIL(SV_ERR_INVALID, "loader: img %d not in 1..1024", o->img);
    if (o->channels != 1 && o->channels != 3)
        return SV_FAIL(SV_ERR_INVALID, "loader: channels %d not 1 or 3", o->channels);
    sv_mix_cfg mix = {.mixup_alpha = o->mixup_alpha,
                      .cutmix_alpha = o->cutmix_alpha,
                      .prob = o->mixup_prob,
                      .switch_prob = o->mixup_switch_prob,
                      .minmax_lo = o->cutmix_minmax[0],
                      .minmax_hi = o->cutmix_minmax[1],
                      .mode = o->mixup_mode};
    int mixing = o->mode == SV_TRANSFORM_TRAIN && sv_mix_enabled(&mix);
    if (!(o->mixup_prob >= 0 && o->mixup_prob <= 1) || !(o->mixup_switch_prob >= 0 && o->mixup_switch_prob <= 1) ||
        o->mixup_mode < SV_MIX_PAIR || o->mixup_mode > SV_MIX_ELEM || o->mixup_off_epoch < 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "loader: mixup prob %g / switch prob %g (both in [0, 1]) / mode %d / off epoch %d",
                       o->mixup_prob, o->mixup_switch_prob, o->mixup_mode, o->mixup_off_epoch);
    if (o->cutmix_minmax[1] > 0 &&
        !(o->cutmix_minmax[0] >= 0 && o->cutmix_minmax[0] < o->cutmix_minmax[1] && o->cutmix_minmax[1] <= 1))
        return SV_FAIL(SV_ERR_INVALID, "loader: cutmix minmax [%g, %g] needs 0 <= min < max <= 1", o->cutmix_minmax[0],
                       o->cutmix_minmax[1]);
    if (!(o->reprob >= 0 && o->reprob <= 1) || o->remode < SV_ERASE_CONST || o->remode > SV_ERASE_PIXEL ||
        (o->reprob > 0 && (o->recount < 1 || o->recount > SV_ERASE_MAX_COUNT)))
        return SV_FAIL(SV_ERR_INVALID, "loader: random erasing prob %g (in [0, 1]) / mode %d / count %d (1..%d)",
                       o->reprob, o->remode, o->recount, SV_ERASE_MAX_COUNT);
    if (!(o->color_jitter >= 0 && o->color_jitter <= 1) || o->aa.n < 0 || o->aa.n > 16)
        return SV_FAIL(SV_ERR_INVALID, "loader: color jitter %g (in [0, 1]) / --aa ops %d (0..16)", o->color_jitter,
                       o->aa.n);
    if (o->mode == SV_TRANSFORM_TRAIN && o->simple_crop && o->img < 9)
        return SV_FAIL(SV_ERR_INVALID, "loader: the simple random crop (reflect padding 4) needs img >= 9, got %d",
                       o->img);
    if (o->aug_repeats < 0 || o->aug_repeats > 64)
        return SV_FAIL(SV_ERR_INVALID, "loader: aug repeats %d not in 0..64", o->aug_repeats);
    if (o->mode == SV_TRANSFORM_TRAIN && o->aug_repeats > 1 &&
        ((uint64_t)o->batch_local * (uint64_t)o->world) % (uint64_t)o->aug_repeats)
        return SV_FAIL(SV_ERR_INVALID,
                       "loader: --aug-repeats %d needs the global micro-batch (%d per rank x %d ranks = %llu) to be a "
                       "multiple of it",
                       o->aug_repeats, o->batch_local, o->world,
                       (unsigned long long)o->batch_local * (unsigned long long)o->world);
    if (o->no_substitute && o->mode != SV_TRANSFORM_EVAL)
        return SV_FAIL(SV_ERR_INVALID,
                       "loader: no_substitute is for evaluation (training substitutes unreadable "
                       "files to keep batches full)");
    if (mixing && o->batch_local % 2)
        return SV_FAIL(SV_ERR_INVALID,
                       "loader: mixup/cutmix pair neighbouring samples and need an even per-rank batch, got %d",
                       o->batch_local);
    if (o->num_classes > 0 && o->num_classes < sv_dataset_num_classes(o->dataset))
        return SV_FAIL(SV_ERR_INVALID, "loader: %d soft-target classes < the dataset's %d", o->num_classes,
                       sv_dataset_num_classes(o->dataset));
    if (o->smoothing < 0 || o->smoothing >= 1)
        return SV_FAIL(SV_ERR_INVALID, "loader: smoothing %g not in [0, 1)", o->smoothing);
    if (o->interp != SV_INTERP_BILINEAR && o->interp != SV_INTERP_BICUBIC)
        return SV_FAIL(SV_ERR_INVALID, "loader: interp %d not 0 (bilinear) or 1 (bicubic)", o->interp);
    if (o->randaug_n < 0 || o->randaug_n > 16 || !(o->randaug_m >= 0 && o->randaug_m <= 30))
        return SV_FAIL(SV_ERR_INVALID, "loader: RandAugment n %d / magnitude %g out of range (n 0..16, m 0..30)",
                       o->randaug_n, o->randaug_m);
    for (int c = 0; o->mean && o->std && c < o->channels && c < 3; c++)
        if (!(o->std[c] > 0) || !(o->mean[c] == o->mean[c]))
            return SV_FAIL(SV_ERR_INVALID, "loader: mean %g / std %g of channel %d (std must be > 0)", o->mean[c],
                           o->std[c], c);
    if (o->mode == SV_TRANSFORM_EVAL && (o->crop_pct <= 0 || o->crop_pct > 1))
        return SV_FAIL(SV_ERR_INVALID, "loader: crop_pct %g not in (0, 1]", o->crop_pct);
    if (o->mode == SV_TRANSFORM_TRAIN &&
        !(o->scale_min > 0 && o->scale_min <= o->scale_max && o->scale_max <= 1 && o->ratio_min > 0 &&
          o->ratio_min <= o->ratio_max))
        return SV_FAIL(SV_ERR_INVALID, "loader: scale [%g, %g] / ratio [%g, %g] out of range", o->scale_min,
                       o->scale_max, o->ratio_min, o->ratio_max);
    uint64_t n = sv_dataset_len(o->dataset), G = (uint64_t)o->batch_local * (uint64_t)o->world;
    if (n == 0) return SV_FAIL(SV_ERR_INVALID, "loader: empty dataset");
    uint64_t A = o->step_batches > 1 ? (uint64_t)o->step_batches : 1;
    if (o->mode == SV_TRANSFORM_TRAIN && A == 1 && n < G)
        return SV_FAIL(SV_ERR_INVALID, "loader: %llu samples < one global batch of %llu (batch %d x world %d)",
                       (unsigned long long)n, (unsigned long long)G, o->batch_local, o->world);
    if (o->mode == SV_TRANSFORM_TRAIN && n / A < G)
        return SV_FAIL(SV_ERR_INVALID,
                       "loader: %llu samples < one optimizer step's global batch of %llu (batch %d x world %d x %llu "
                       "accumulated batches)",
                       (unsigned long long)n, (unsigned long long)(G * A), o->batch_local, o->world,
                       (unsigned long long)A);
    sv_loader *l = calloc(1, sizeof *l);
    if (!l) return SV_FAIL(SV_ERR_OOM, "loader");
    l->o = *o;
    l->d = o->dataset;
    l->n = n;
    l->G = G;
    l->K = o->num_classes > 0 ? o->num_classes : sv_dataset_num_classes(o->dataset);
    l->train = o->mode == SV_TRANSFORM_TRAIN;
    l->n_epoch = l->train ? sv_sampler_epoch_len(n, G, A) : n;
    l->steps = sv_sampler_steps(l->train, l->n_epoch, G);
    l->synthetic = sv_dataset_kind_of(o->dataset) == SV_DATASET_SYNTHETIC;
    l->mixing = mixing;
    l->mix = mix;
    l->R = l->train && o->aug_repeats > 1 ? (uint64_t)o->aug_repeats : 1;
    for (int c = 0; c < 3; c++) {
        static const float im[3] = {0.485f, 0.456f, 0.406f}, is[3] = {0.229f, 0.224f, 0.225f};
        l->mean[c] = o->norm == SV_NORM_HALF ? 0.5f : o->channels == 1 ? 0.449f : im[c];
        l->std[c] = o->norm == SV_NORM_HALF ? 0.5f : o->channels == 1 ? 0.226f : is[c];
        if (o->mean && o->std && c < o->channels) l->mean[c] = o->mean[c], l->std[c] = o->std[c];
    }
    l->nthreads = o->threads > 0 ? o->threads : sv_cpus_usable();
    l->P = o->prefetch > 0 ? o->prefetch : (l->nthreads / 2 + 2 > 2 ? l->nthreads / 2 + 2 : 2);
    l->fill = -1;
    l->out_slot = -1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work_cv, NULL);
    pthread_cond_init(&l->ready_cv, NULL);
    pthread_cond_init(&l->idle_cv, NULL);
    l->slots = calloc((size_t)l->P, sizeof *l->slots);
    l->workers = calloc((size_t)l->nthreads, sizeof *l->workers);
    l->perm = l->train ? malloc(n * sizeof *l->perm) : NULL;
    l->bad = calloc(n, 1);
    if (!l->slots || !l->workers || (l->train && !l->perm) || !l->bad) {
        sv_loader_destroy(l);
        return SV_FAIL(SV_ERR_OOM, "loader: bookkeeping for %llu samples", (unsigned long long)n);
    }
    int B = o->batch_local;
    size_t isz = (size_t)o->channels * (size_t)o->img * (size_t)o->img;
    for (int i = 0; i < l->P; i++) {
        sv_batch *b = &l->slots[i].b;
        b->n = B;
        b->channels = o->channels;
        b->img = o->img;
        b->images = xalloc(o, (size_t)B * isz * sizeof(float));
        b->labels = xalloc(o, (size_t)B * sizeof(int32_t));
        b->valid = xalloc(o, (size_t)B);
        b->sample_index = malloc((size_t)B * sizeof(int64_t));
        b->repeat = calloc((size_t)B, sizeof(uint32_t));
        b->soft_targets = mixing ? xalloc(o, (size_t)B * (size_t)l->K * sizeof(float)) : NULL;
        if (!b->images || !b->labels || !b->valid || !b->sample_index || !b->repeat || (mixing && !b->soft_targets)) {
            sv_loader_destroy(l);
            return SV_FAIL(SV_ERR_OOM, "loader: batch slot %d (%zu bytes of images)", i, (size_t)B * isz * 4);
        }
    }
    for (int t = 0; t < l->nthreads; t++) {
        worker *w = &l->workers[t];
        w->l = l;
        sv_jpeg_ctx_init(&w->jc);
        w->pix = malloc(isz);
        w->ra = malloc(isz);
        w->orig = mixing && o->mixup_mode == SV_MIX_ELEM ? malloc(isz * sizeof(float)) : NULL;
        int pe = 0;
        const int bufs = w->pix && w->ra && (!mixing || o->mixup_mode != SV_MIX_ELEM || w->orig);
        if (!bufs || (pe = pthread_create(&w->th, NULL, worker_main, w)) != 0) {
            l->nthreads = t; /* only join what started */
            free(w->pix);
            free(w->ra);
            free(w->orig);
            w->pix = w->ra = NULL;
            w->orig = NULL;
            sv_loader_destroy(l);
            if (!bufs)
                return SV_FAIL(SV_ERR_OOM,
                               "loader: cannot allocate the image buffers of worker %d (fewer --workers or a smaller "
                               "--batch-size need less)",
                               t);
            return SV_FAIL(SV_ERR_IO, "loader: cannot start worker thread %d: %s (fewer --workers need fewer threads)",
                           t, strerror(pe));
        }
    }
    *out = l;
    return SV_OK;
}

sv_status sv_loader_next(sv_loader *l, const sv_batch **b) {
    *b = NULL;
    double t0 = sv_now_s();
    pthread_mutex_lock(&l->mu);
    if (l->out_slot >= 0) {
        l->slots[l->out_slot].state = SLOT_FREE;
        l->out_slot = -1;
        pthread_cond_broadcast(&l->work_cv);
    }
    sv_status st = SV_OK;
    for (;;) {
        if (l->fatal != SV_OK) {
            st = SV_FAIL(l->fatal, "%s", l->fatal_msg);
            break;
        }
        if (l->plan_done && l->out_seq == l->plan_seq) break; /* eval pass complete */
        slot *s = &l->slots[l->out_seq % (uint64_t)l->P];
        if (s->state == SLOT_READY && s->seq == l->out_seq) {
            s->state = SLOT_OUT;
            l->out_slot = (int)(l->out_seq % (uint64_t)l->P);
            l->out_seq++;
            l->batches++;
            *b = &s->b;
            break;
        }
        pthread_cond_wait(&l->ready_cv, &l->mu);
    }
    l->wait_s += sv_now_s() - t0;
    pthread_mutex_unlock(&l->mu);
    return st;
}

sv_status sv_loader_seek(sv_loader *l, uint64_t epoch, uint64_t cursor) {
    if (cursor >= l->n)
        return SV_FAIL(SV_ERR_INVALID, "loader seek: cursor %llu >= dataset length %llu", (unsigned long long)cursor,
                       (unsigned long long)l->n);
    pthread_mutex_lock(&l->mu);
    l->paused = 1;
    while (l->inflight > 0) pthread_cond_wait(&l->idle_cv, &l->mu);
    for (int i = 0; i < l->P; i++) l->slots[i].state = SLOT_FREE;
    l->out_slot = -1;
    l->fill = -1;
    l->plan_seq = l->out_seq = 0;
    l->plan_micro = 0; /* the next batch begins an optimizer step */
    l->plan_epoch = epoch;
    l->plan_cursor = cursor;
    l->plan_done = !sv_sampler_normalise(l->train, l->n_epoch, l->G, &l->plan_epoch, &l->plan_cursor);
    l->paused = 0;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    return SV_OK;
}

void sv_loader_stats_get(const sv_loader *l, sv_loader_stats *s) {
    sv_loader *m = (sv_loader *)l; /* the lock is logically const */
    pthread_mutex_lock(&m->mu);
    s->substituted = atomic_load(&m->substituted);
    s->bad_files = atomic_load(&m->bad_files);
    s->unreadable = atomic_load(&m->unreadable);
    s->batches = m->batches;
    s->wait_s = m->wait_s;
    pthread_mutex_unlock(&m->mu);
}

void sv_loader_destroy(sv_loader *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    for (int t = 0; t < l->nthreads && l->workers; t++) {
        pthread_join(l->workers[t].th, NULL);
        sv_jpeg_ctx_free(&l->workers[t].jc);
        sv_resample_scratch_free(&l->workers[t].rs);
        free(l->workers[t].file);
        free(l->workers[t].pix);
        free(l->workers[t].ra);
        free(l->workers[t].orig);
    }
    for (int i = 0; i < l->P && l->slots; i++) {
        sv_batch *b = &l->slots[i].b;
        xfree(&l->o, b->images);
        xfree(&l->o, b->labels);
        xfree(&l->o, b->valid);
        xfree(&l->o, b->soft_targets);
        free(b->sample_index);
        free(b->repeat);
    }
    free(l->slots);
    free(l->workers);
    free(l->perm);
    free((void *)l->bad);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->work_cv);
    pthread_cond_destroy(&l->ready_cv);
    pthread_cond_destroy(&l->idle_cv);
    free(l);
}
