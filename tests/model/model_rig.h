/* A world-1 training set-up for the whole-model tests, built the way app/run.c builds a run
 * (counting-arena pass, real arena, sv_fsdp_carve, sv_vit_init, sv_fsdp_attach,
 * sv_fsdp_init_params) but on a local communicator and an fp32 CPU backend, so no MPI launcher
 * is needed.
 *
 * At world 1 each unit's gradient shard is the whole unit's fp32 gradient in flat layout and
 * each master shard the whole unit's fp32 weights; the helpers below translate between that
 * layout and the canonical order of sv_vit_param_table (concatenated tensors). */
#ifndef SV_TESTS_MODEL_RIG_H
#define SV_TESTS_MODEL_RIG_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "fsdp/fsdp.h"

typedef struct rig {
    sv_vit_config vcfg;
    sv_backend *be;
    sv_comm *world, *shard, *repl;
    sv_fsdp f;
    sv_vit m;
    void *dev_block, *host_block;
    sv_arena dev, host;
    int B;
    size_t n_total;    /* sv_vit_param_count */
    size_t *canon_off; /* [n_params] offset of tensor p in canonical concatenation */
    float *d_images;   /* (B,C,img,img) device */
    int32_t *d_labels; /* (B) device */
    float *h_flat;     /* staging of the largest unit (padded) */
} rig;

typedef struct rig_opts {
    int B;
    int recompute;
    size_t wrap_bytes; /* 0: one unit per block */
    uint64_t seed;
    int threads; /* 0 -> 1 */
} rig_opts;

static inline void rig_init(rig *r, const sv_vit_config *vcfg, const rig_opts *o) {
    memset(r, 0, sizeof *r);
    r->vcfg = *vcfg;
    r->B = o->B;
    CHECK_OK(sv_vit_config_validate(vcfg));
    sv_backend_config bc = {.device = SV_DEVICE_CPU, .compute_dtype = SV_F32, .threads = o->threads ? o->threads : 1};
    CHECK_OK(sv_backend_create(&bc, &r->be));
    sv_comm_config cc = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = 0};
    CHECK_OK(sv_comm_create_world(&cc, &r->world));
    CHECK_OK(sv_fsdp_make_comms(r->world, SV_FULL_SHARD, 0, &r->shard, &r->repl));
    sv_fsdp_config fc = {.strategy = SV_FULL_SHARD,
                         .reduce_dtype = SV_F32,
                         .accum_mode = SV_ACCUM_SHARD,
                         .wrap_bytes = o->wrap_bytes,
                         .head_zero_init = 0,
                         .seed = o->seed};
    CHECK_OK(sv_fsdp_setup(&r->f, &fc, r->be, r->world, r->shard, r->repl, vcfg));
    CHECK(r->f.world_size == 1 && r->f.shard_size == 1);

    sv_arena cd, ch;
    sv_arena_init(&cd, "count", NULL, 0);
    sv_arena_init(&ch, "count", NULL, 0);
    CHECK_OK(sv_fsdp_carve(&r->f, &cd, &ch));
    CHECK_OK(sv_vit_init(&r->m, vcfg, r->be, o->B, o->recompute, &cd, &ch));
    size_t dev_bytes = cd.used + 4096, host_bytes = ch.used + 4096;
    CHECK_OK(sv_be_alloc(r->be, dev_bytes, &r->dev_block));
    r->host_block = calloc(1, host_bytes);
    CHECK(r->host_block);
    sv_arena_init(&r->dev, "device", r->dev_block, dev_bytes);
    sv_arena_init(&r->host, "host", r->host_block, host_bytes);
    CHECK_OK(sv_fsdp_carve(&r->f, &r->dev, &r->host));
    CHECK_OK(sv_vit_init(&r->m, vcfg, r->be, o->B, o->recompute, &r->dev, &r->host));
    sv_fsdp_attach(&r->f, &r->m, NULL);
    CHECK_OK(sv_fsdp_init_params(&r->f));

    const sv_layout *L = &r->f.L;
    r->n_total = sv_vit_param_count(vcfg);
    r->canon_off = calloc((size_t)L->n_params, sizeof(size_t));
    CHECK(r->canon_off);
    size_t off = 0;
    for (int p = 0; p < L->n_params; p++) {
        r->canon_off[p] = off;
        off += L->params[p].numel;
    }
    CHECK(off == r->n_total);
    size_t maxp = 0;
    for (int u = 0; u < L->n_units; u++) {
        CHECK(L->units[u].shard == L->units[u].padded); /* world 1: the shard is the unit */
        if (L->units[u].padded > maxp) maxp = L->units[u].padded;
    }
    r->h_flat = calloc(maxp, sizeof(float));
    CHECK(r->h_flat);
    size_t img_n = (size_t)o->B * vcfg->in_chans * vcfg->img * vcfg->img;
    CHECK_OK(sv_be_alloc(r->be, img_n * 4, (void **)&r->d_images));
    CHECK_OK(sv_be_alloc(r->be, (size_t)o->B * 4, (void **)&r->d_labels));
}

static inline void rig_free(rig *r) {
    sv_fsdp_free(&r->f);
    sv_be_free(r->be, r->d_images);
    sv_be_free(r->be, r->d_labels);
    sv_be_free(r->be, r->dev_block);
    free(r->host_block);
    free(r->canon_off);
    free(r->h_flat);
    sv_comm_destroy(r->repl);
    sv_comm_destroy(r->shard);
    sv_comm_destroy(r->world);
    sv_backend_destroy(r->be);
    memset(r, 0, sizeof *r);
}

static inline const sv_param_info *rig_param(const rig *r, int p) { return &r->f.L.params[p]; }

/* Unit and flat element offset of element i of tensor p. */
static inline void rig_locate(const rig *r, int p, size_t i, int *unit, size_t *flat) {
    const sv_layout *L = &r->f.L;
    for (int u = 0; u < L->n_units; u++) {
        const sv_unit *un = &L->units[u];
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &L->entries[un->first_entry + k];
            if (e->param != p) continue;
            CHECK(i < e->numel);
            *unit = u;
            *flat = e->offset + i;
            return;
        }
    }
    CHECK(!"tensor not in layout");
}

/* Copy every unit's flat f32 buffer (`masters` 1: master, 0: grad) into canonical order. */
static inline void rig_download_flat(rig *r, int masters, float *dst) {
    const sv_layout *L = &r->f.L;
    for (int u = 0; u < L->n_units; u++) {
        const sv_unit *un = &L->units[u];
        CHECK_OK(sv_be_download(r->be, r->h_flat, masters ? r->f.us[u].master : r->f.us[u].grad, un->shard * 4));
        for (size_t j = un->numel; j < un->padded; j++) CHECK(r->h_flat[j] == 0.0f); /* padding stays zero */
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &L->entries[un->first_entry + k];
            memcpy(dst + r->canon_off[e->param], r->h_flat + e->offset, e->numel * 4);
        }
    }
}
static inline void rig_get_grads(rig *r, float *dst) { rig_download_flat(r, 0, dst); }
static inline void rig_get_masters(rig *r, float *dst) { rig_download_flat(r, 1, dst); }

/* Overwrite every master from canonical order (padding left zero). */
static inline void rig_set_masters(rig *r, const float *src) {
    const sv_layout *L = &r->f.L;
    for (int u = 0; u < L->n_units; u++) {
        const sv_unit *un = &L->units[u];
        memset(r->h_flat, 0, un->padded * 4);
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &L->entries[un->first_entry + k];
            memcpy(r->h_flat + e->offset, src + r->canon_off[e->param], e->numel * 4);
        }
        CHECK_OK(sv_be_upload(r->be, r->f.us[u].master, r->h_flat, un->shard * 4));
    }
}

static inline float rig_get_master(rig *r, int p, size_t i) {
    int u;
    size_t fl;
    rig_locate(r, p, i, &u, &fl);
    float v;
    CHECK_OK(sv_be_download(r->be, &v, r->f.us[u].master + fl, 4));
    return v;
}
static inline void rig_set_master(rig *r, int p, size_t i, float v) {
    int u;
    size_t fl;
    rig_locate(r, p, i, &u, &fl);
    CHECK_OK(sv_be_upload(r->be, r->f.us[u].master + fl, &v, 4));
}

static inline void rig_set_batch(rig *r, const float *images, const int32_t *labels) {
    size_t img_n = (size_t)r->B * r->vcfg.in_chans * r->vcfg.img * r->vcfg.img;
    CHECK_OK(sv_be_upload(r->be, r->d_images, images, img_n * 4));
    CHECK_OK(sv_be_upload(r->be, r->d_labels, labels, (size_t)r->B * 4));
}

/* Deterministic batch from `key`: images N(0,1), labels uniform in [0, K). */
static inline void rig_make_batch(const rig *r, uint64_t key, float *images, int32_t *labels) {
    size_t img_n = (size_t)r->B * r->vcfg.in_chans * r->vcfg.img * r->vcfg.img;
    for (size_t i = 0; i < img_n; i++) images[i] = (float)sv_rand_normal(sv_hash2(key, 1), i);
    for (int b = 0; b < r->B; b++)
        labels[b] = (int32_t)(sv_rand_u64(sv_hash2(key, 2), (uint64_t)b) % (uint64_t)r->vcfg.num_classes);
}

/* Replace the (timm) initial weights with a well-conditioned random model whose biases,
 * norm parameters, cls token and position embedding are all far from their trivial init
 * values, so every gradient path carries signal. Canonical order into `dst`. */
static inline void rig_random_weights(const rig *r, uint64_t seed, float *dst) {
    const sv_layout *L = &r->f.L;
    for (int p = 0; p < L->n_params; p++) {
        const sv_param_info *pi = &L->params[p];
        uint64_t key = sv_hash_str(seed, pi->name);
        double fan_in = pi->ndim >= 2 ? (double)pi->numel / (double)pi->shape[0] : 1.0;
        int is_norm_w = strstr(pi->name, "norm") && strstr(pi->name, ".weight");
        for (size_t i = 0; i < pi->numel; i++) {
            double z = sv_rand_normal(key, i), v;
            if (is_norm_w)
                v = 1.0 + 0.3 * z;
            else if (pi->ndim >= 2 && strcmp(pi->name, "pos_embed") && strcmp(pi->name, "cls_token") &&
                     strcmp(pi->name, "reg_token"))
                v = z / sqrt(fan_in); /* weights: unit-variance outputs */
            else
                v = 0.3 * z; /* biases, norm biases, cls_token, reg_token, pos_embed */
            dst[r->canon_off[p] + i] = (float)v;
        }
    }
}

/* Mean smoothed cross-entropy of the host logits (B,K), in double. */
static inline double rig_xent_mean(const float *logits, const int32_t *labels, int B, int K, double s) {
    double tot = 0.0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * K;
        double mx = z[0];
        for (int k = 1; k < K; k++) mx = z[k] > mx ? z[k] : mx;
        double se = 0.0;
        for (int k = 0; k < K; k++) se += exp((double)z[k] - mx);
        double lse = mx + log(se);
        for (int k = 0; k < K; k++) {
            double t = (k == labels[b] ? 1.0 - s : 0.0) + s / K;
            tot += t * (lse - (double)z[k]);
        }
    }
    return tot / B;
}

/* Forward only; logits (B,K) to host. */
static inline void rig_logits(rig *r, float *logits) {
    CHECK_OK(sv_fsdp_forward(&r->f, r->d_images));
    CHECK_OK(sv_be_download(r->be, logits, r->m.logits, (size_t)r->B * r->vcfg.num_classes * 4));
}

/* Zeroed gradients, one micro-step with grad_scale 1/B: gradients of the MEAN loss. Returns
 * the mean loss. */
static inline double rig_grad_step(rig *r, float smoothing) {
    double loss_sum = 0.0;
    CHECK_OK(sv_fsdp_zero_grad(&r->f));
    CHECK_OK(sv_fsdp_forward_backward(&r->f, r->d_images, r->d_labels, NULL, smoothing, 1.0f / (float)r->B, 0, 1));
    float *losses = malloc((size_t)r->B * sizeof(float)); /* per-sample losses, left on the device */
    CHECK(losses != NULL);
    CHECK_OK(sv_be_download(r->be, losses, r->m.losses, (size_t)r->B * 4));
    for (int i = 0; i < r->B; i++) loss_sum += losses[i];
    free(losses);
    return loss_sum / r->B;
}

#endif
