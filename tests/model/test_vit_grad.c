/* Whole-model gradient tests of the ViT through the FSDP engine at world 1:
 *
 * 1. Every parameter element's gradient from sv_fsdp_forward_backward (grad_scale 1/B, label
 *    smoothing 0.1) against a central finite difference of the mean loss, the loss re-computed
 *    by a forward pass with one master element perturbed on the device. Grayscale and RGB input,
 *    and the timm variant with LayerScale gammas, average pooling (fc_norm) and no class token.
 * 2. Activation recompute and auto-wrapped units (several blocks per unit) give gradients,
 *    losses and logits bitwise identical to the plain one-unit-per-block run.
 *
 * Finite differences run in fp32, so the comparison allows the loss's rounding noise divided by
 * the step: |g - fd| <= ATOL + RTOL * |fd| elementwise, and per tensor the error norm relative to
 * the tensor's gradient norm must stay small. Max errors are printed per tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_rig.h"

#define FD_STEP 1e-3f
#define FD_RTOL 2e-2
#define FD_ATOL 2e-4
#define FD_NORM_RTOL 5e-3 /* ||g - fd|| / ||g|| per tensor */
#define SMOOTHING 0.1f

static sv_vit_config tiny_config(int in_chans, int depth) {
    sv_vit_config c = {0};
    snprintf(c.name, sizeof c.name, "custom");
    c.img = 8;
    c.patch = 4;
    c.in_chans = in_chans;
    c.num_classes = 5;
    c.dim = 12;
    c.depth = depth;
    c.heads = 3;
    c.mlp_ratio = 2.0;
    return c;
}

/* Mean loss of the current masters, in double from the fp32 logits. */
static double fd_loss(rig *r, const int32_t *labels, float *logits) {
    rig_logits(r, logits);
    return rig_xent_mean(logits, labels, r->B, r->vcfg.num_classes, SMOOTHING);
}

/* variant 0: classic ViT; 1: timm's LayerScale (init 0.3, large enough to carry signal), average
 * pooling with fc_norm and no class token (DeiT III / "avg" heads); 2: variant 1 with stochastic
 * depth, proj dropout and head dropout on (their masks are fixed functions of the sample, so the
 * loss stays a deterministic function of the weights and finite differences apply); 3: variant 1
 * with attention-probability dropout (attn_drop 0.4) alone; 4: the classic ViT with 2 register
 * tokens (timm reg_tokens) after the class token; 5: variant 1 with 3 register tokens (the average
 * pool skips them) and pos_embed for the patches only (timm no_embed_class, the reg4_gap models). */
static void finite_difference_case(int in_chans, int variant) {
    const int B = 3;
    sv_vit_config vc = tiny_config(in_chans, 2);
    if (variant == 4 || variant == 5) {
        vc.reg_tokens = variant == 4 ? 2 : 3;
        vc.no_embed_class = variant == 5;
        printf("variant: %d register tokens%s\n", vc.reg_tokens, vc.no_embed_class ? ", no_embed_class" : "");
    }
    if (variant && variant != 4) {
        vc.layer_scale = 0.3;
        vc.global_pool = SV_POOL_AVG;
        vc.no_class_token = 1;
        printf("variant: LayerScale 0.3, global_pool avg, no class token%s\n",
               variant == 2       ? ", drop-path 0.6, proj-drop 0.3, head drop 0.3"
                   : variant == 3 ? ", attention dropout 0.4"
                                  : "");
    }
    rig r;
    rig_opts o = {.B = B, .recompute = 0, .wrap_bytes = 0, .seed = 1234, .threads = 1};
    rig_init(&r, &vc, &o);
    size_t N = r.n_total;
    float *w = malloc(N * 4), *g = malloc(N * 4), *images = malloc((size_t)B * in_chans * 64 * 4);
    float *logits = malloc((size_t)B * vc.num_classes * 4);
    int32_t labels[3];
    CHECK(w && g && images && logits);
    rig_random_weights(&r, 99 + (uint64_t)in_chans, w);
    rig_set_masters(&r, w);
    if (variant == 2) {
        /* block 1 of 2 drops its branches with p 0.6: some samples keep them, some do not */
        sv_vit_set_drops(&r.m, &(sv_vit_drops){.drop_path = 0.6f, .proj_drop = 0.3f, .head_drop = 0.3f}, 77);
        sv_vit_set_batch(&r.m, 1, 3, 1000);
    }
    if (variant == 3) {
        sv_vit_set_drops(&r.m, &(sv_vit_drops){.attn_drop = 0.4f}, 78);
        sv_vit_set_batch(&r.m, 1, 2, 500);
    }
    rig_make_batch(&r, 7 + (uint64_t)in_chans, images, labels);
    rig_set_batch(&r, images, labels);

    double loss = rig_grad_step(&r, SMOOTHING);
    rig_get_grads(&r, g);
    double loss_host = fd_loss(&r, labels, logits);
    printf("in_chans %d: %zu parameters, mean loss %.9f (host xent of logits %.9f)\n", in_chans, N, loss, loss_host);
    CHECK(isfinite(loss) && loss > 0.1);
    CHECK_CLOSE(loss, loss_host, 1e-6 * fabs(loss_host));

    printf("%-28s %6s %11s %11s %11s %9s %9s\n", "tensor", "numel", "max|g|", "max|g-fd|", "max rel", "norm rel",
           "worst/tol");
    double worst_abs = 0, worst_norm_rel = 0, worst_ratio = 0;
    size_t checked = 0;
    int fails = 0;
    for (int p = 0; p < r.f.L.n_params; p++) {
        const sv_param_info *pi = rig_param(&r, p);
        double gmax = 0, emax = 0, relmax = 0, ratio = 0, en2 = 0, gn2 = 0;
        for (size_t i = 0; i < pi->numel; i++) {
            float w0 = w[r.canon_off[p] + i];
            float wp = w0 + FD_STEP, wm = w0 - FD_STEP;
            rig_set_master(&r, p, i, wp);
            double lp = fd_loss(&r, labels, logits);
            rig_set_master(&r, p, i, wm);
            double lm = fd_loss(&r, labels, logits);
            rig_set_master(&r, p, i, w0);
            double fd = (lp - lm) / ((double)wp - (double)wm); /* the step actually taken in fp32 */
            double ga = g[r.canon_off[p] + i], err = fabs(ga - fd);
            double tol = FD_ATOL + FD_RTOL * fabs(fd);
            if (err > tol && fails++ < 10)
                fprintf(stderr, "  MISMATCH %s[%zu]: grad %.8g, finite difference %.8g\n", pi->name, i, ga, fd);
            if (fabs(ga) > gmax) gmax = fabs(ga);
            if (err > emax) emax = err;
            if (fabs(fd) > 1e-3 && err / fabs(fd) > relmax) relmax = err / fabs(fd);
            if (err / tol > ratio) ratio = err / tol;
            en2 += err * err;
            gn2 += ga * ga;
            checked++;
        }
        double nrel = gn2 > 0 ? sqrt(en2 / gn2) : 0;
        printf("%-28s %6zu %11.3e %11.3e %11.3e %9.2e %9.3f\n", pi->name, pi->numel, gmax, emax, relmax, nrel, ratio);
        /* every tensor must receive gradient signal, or the comparison would be vacuous */
        if (!(gmax > 1e-3)) {
            fprintf(stderr, "  tensor %s has no gradient signal (max |g| = %g)\n", pi->name, gmax);
            fails++;
        }
        if (nrel > FD_NORM_RTOL) {
            fprintf(stderr, "  tensor %s: ||g - fd|| / ||g|| = %.3e > %.1e\n", pi->name, nrel, FD_NORM_RTOL);
            fails++;
        }
        if (emax > worst_abs) worst_abs = emax;
        if (nrel > worst_norm_rel) worst_norm_rel = nrel;
        if (ratio > worst_ratio) worst_ratio = ratio;
    }
    printf("in_chans %d: %zu elements checked; max |g - fd| = %.3e, max per-tensor norm rel = %.3e, "
           "max err/tol = %.3f\n",
           in_chans, checked, worst_abs, worst_norm_rel, worst_ratio);
    CHECK(checked == N);
    CHECK(fails == 0);
    free(w);
    free(g);
    free(images);
    free(logits);
    rig_free(&r);
}

typedef struct run_out {
    double loss;
    float *grads, *logits;
    int n_units;
} run_out;

static run_out run_variant(const sv_vit_config *vc, int recompute, size_t wrap_bytes, const float *w,
                           const float *images, const int32_t *labels) {
    rig r;
    rig_opts o = {.B = 3, .recompute = recompute, .wrap_bytes = wrap_bytes, .seed = 5, .threads = 1};
    rig_init(&r, vc, &o);
    rig_set_masters(&r, w);
    rig_set_batch(&r, images, labels);
    run_out out = {0};
    out.loss = rig_grad_step(&r, SMOOTHING);
    out.grads = malloc(r.n_total * 4);
    out.logits = malloc((size_t)r.B * vc->num_classes * 4);
    CHECK(out.grads && out.logits);
    rig_get_grads(&r, out.grads);
    /* logits of the training forward (left in the model by the micro-step) */
    CHECK_OK(sv_be_download(r.be, out.logits, r.m.logits, (size_t)r.B * vc->num_classes * 4));
    out.n_units = r.f.L.n_units;
    rig_free(&r);
    return out;
}

static void check_same(const char *what, const run_out *a, const run_out *b, size_t N, int K) {
    size_t diff = 0;
    for (size_t i = 0; i < N; i++) diff += memcmp(&a->grads[i], &b->grads[i], 4) != 0;
    int logit_diff = memcmp(a->logits, b->logits, (size_t)3 * K * 4) != 0;
    printf("  %-34s units %d: loss %.9f, %zu of %zu gradient elements differ, logits %s\n", what, b->n_units, b->loss,
           diff, N, logit_diff ? "differ" : "identical");
    CHECK(memcmp(&a->loss, &b->loss, sizeof a->loss) == 0);
    CHECK(!logit_diff);
    CHECK(diff == 0);
}

static void bitwise_variants_case(int in_chans, int depth) {
    sv_vit_config vc = tiny_config(in_chans, depth);
    rig r; /* only for the weights and batch */
    rig_opts o = {.B = 3, .seed = 5, .threads = 1};
    rig_init(&r, &vc, &o);
    size_t N = r.n_total;
    float *w = malloc(N * 4), *images = malloc((size_t)3 * in_chans * 64 * 4);
    int32_t labels[3];
    rig_random_weights(&r, 31, w);
    rig_make_batch(&r, 32, images, labels);
    size_t block_bytes = 0;
    for (int k = 0; k < SV_BLK_NT; k++)
        if (sv_vit_slot_present(&vc, 0, k)) block_bytes += rig_param(&r, sv_vit_param_index(&vc, 0, k))->numel * 4;
    rig_free(&r);

    printf("in_chans %d, depth %d: recompute / auto-wrap against one unit per block\n", in_chans, depth);
    run_out base = run_variant(&vc, 0, 0, w, images, labels);
    CHECK(base.n_units == 1 + depth);
    run_out v;
    v = run_variant(&vc, 1, 0, w, images, labels);
    check_same("recompute", &base, &v, N, vc.num_classes);
    free(v.grads), free(v.logits);
    v = run_variant(&vc, 0, (size_t)1 << 30, w, images, labels);
    CHECK(v.n_units == 2); /* every block in one unit */
    check_same("auto-wrap (all blocks)", &base, &v, N, vc.num_classes);
    free(v.grads), free(v.logits);
    v = run_variant(&vc, 1, (size_t)1 << 30, w, images, labels);
    check_same("auto-wrap (all blocks) + recompute", &base, &v, N, vc.num_classes);
    free(v.grads), free(v.logits);
    if (depth >= 3) {
        v = run_variant(&vc, 0, 2 * block_bytes, w, images, labels);
        CHECK(v.n_units == 1 + (depth + 1) / 2); /* units of two blocks, the last one shorter */
        check_same("auto-wrap (2 blocks per unit)", &base, &v, N, vc.num_classes);
        free(v.grads), free(v.logits);
    }
    free(base.grads), free(base.logits);
    free(w);
    free(images);
}

int main(void) {
    finite_difference_case(1, 0);
    finite_difference_case(3, 0);
    finite_difference_case(3, 1);
    finite_difference_case(3, 2);
    finite_difference_case(3, 3);
    finite_difference_case(1, 4);
    finite_difference_case(3, 5);
    bitwise_variants_case(1, 2);
    bitwise_variants_case(3, 3);
    printf("test_vit_grad: OK\n");
    return 0;
}
