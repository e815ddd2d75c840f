/* timm tensors adapted to another image / patch size (ckpt/ckpt_adapt.h). */
#include "ckpt/ckpt_adapt.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/checked.h"
#include "core/log.h"
#include "ckpt/checkpoint.h"
#include "model/resample.h"

/* T = prefix + g*g positions (class token, if any, + a square grid)? */
static int pos_grid(int64_t T, int prefix, int64_t *g_out) {
    uint64_t g;
    if (T < prefix + 1 || !sv_exact_sqrt_u64((uint64_t)T - (uint64_t)prefix, &g)) return 0;
    *g_out = (int64_t)g;
    return 1;
}

sv_status sv_ckpt_adapt_kind(const sv_st_file *sf, const sv_st_tensor *t, const sv_param_info *p,
                             const sv_vit_config *c, sv_adapt_kind *kind) {
    *kind = SV_ADAPT_NONE;
    if (p->group != -1) return SV_OK;
    const int prefix = sv_vit_pos_prefix(c); /* positions before the grid */
    if (p->slot == SV_ROOT_POS && t->ndim == 3 && t->shape[0] == 1 && t->shape[2] == c->dim &&
        t->shape[1] >= prefix + 1) {
        int64_t g;
        if (!pos_grid(t->shape[1], prefix, &g)) return SV_OK;
        if (g > SV_CKPT_MAX_POS_GRID)
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s: tensor pos_embed has shape (1, %lld, %lld): its %lldx%lld patch grid is larger "
                           "than the %dx%d that import resamples",
                           sf->path, (long long)t->shape[1], (long long)t->shape[2], (long long)g, (long long)g,
                           SV_CKPT_MAX_POS_GRID, SV_CKPT_MAX_POS_GRID);
        *kind = SV_ADAPT_POS;
    } else if (p->slot == SV_ROOT_PATCH_W && t->ndim == 4 && t->shape[0] == c->dim && t->shape[1] == c->in_chans &&
               t->shape[2] == t->shape[3] && t->shape[2] >= 1) {
        if (t->shape[2] > SV_PATCH_RESAMPLE_MAX || c->patch > SV_PATCH_RESAMPLE_MAX)
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s: tensor patch_embed.proj.weight has patch %lldx%lld: patch embeddings are "
                           "resampled between patch sizes up to %d (this model: %d)",
                           sf->path, (long long)t->shape[2], (long long)t->shape[3], SV_PATCH_RESAMPLE_MAX, c->patch);
        *kind = SV_ADAPT_PATCH;
    }
    return SV_OK;
}

sv_status sv_ckpt_adapt_read(const sv_st_file *sf, const sv_st_tensor *t, const sv_param_info *p,
                             const sv_vit_config *c, sv_adapt_kind kind, const char *who, float **out) {
    *out = NULL;
    uint64_t bytes;
    if (!sv_mul_u64(t->numel, sizeof(float), &bytes) || bytes > SIZE_MAX)
        return SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s does not fit in memory", sf->path, p->name);
    float *in = malloc((size_t)bytes), *res = malloc(p->numel * sizeof *res);
    sv_status st =
        in && res ? SV_OK : SV_FAIL(SV_ERR_OOM, "resampling %s (%llu floats)", p->name, (unsigned long long)t->numel);
    if (st == SV_OK) st = sv_safetensors_read_f32(sf, t, 0, t->numel, in);
    if (st == SV_OK) st = sv_ckpt_values_finite(sf, t, in, t->numel);
    int from = 0, to = 0;
    if (st == SV_OK && kind == SV_ADAPT_POS) {
        int64_t g = 0;
        const int prefix = sv_vit_pos_prefix(c); /* positions before the grid */
        pos_grid(t->shape[1], prefix, &g);
        from = (int)g, to = c->img / c->patch;
        if ((uint64_t)(prefix + (int64_t)to * to) * (uint64_t)c->dim != p->numel)
            st = SV_FAIL(SV_ERR_INVALID, "pos_embed: the model has %zu values, not %d + %d^2 positions of %d", p->numel,
                         prefix, to, c->dim);
        if (st == SV_OK) st = sv_vit_resample_pos_embed(in, from, res, to, c->dim, prefix, 1);
    } else if (st == SV_OK && kind == SV_ADAPT_PATCH) {
        from = (int)t->shape[2], to = c->patch;
        st = sv_vit_resample_patch_embed(in, from, res, to, (long long)c->dim * c->in_chans, 1);
    } else if (st == SV_OK) {
        st = SV_FAIL(SV_ERR_INVALID, "%s: tensor %s cannot be resampled", sf->path, p->name);
    }
    free(in);
    if (st != SV_OK) {
        free(res);
        sv_err_frame(__FILE__, __LINE__);
        return st;
    }
    if (kind == SV_ADAPT_POS)
        SV_INFO("%s: pos_embed grid %dx%d resampled to %dx%d (timm resample_abs_pos_embed: bicubic, antialias, "
                "prefix positions kept)",
                who, from, from, to, to);
    else
        SV_INFO("%s: patch_embed.proj.weight patch %dx%d resampled to %dx%d (timm resample_patch_embed: pseudo-inverse "
                "of the bicubic antialiased resize)",
                who, from, from, to, to);
    *out = res;
    return SV_OK;
}
