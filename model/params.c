#include "model/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"

int sv_vit_slot_present(const sv_vit_config *c, int group, int slot) {
    if (group < 0)
        return slot >= 0 && slot < SV_ROOT_NT && !(slot == SV_ROOT_CLS && c->no_class_token) &&
            !(slot == SV_ROOT_REG && c->reg_tokens == 0);
    if (slot == SV_BLK_LS1 || slot == SV_BLK_LS2) return c->layer_scale > 0;
    return slot >= 0 && slot < SV_BLK_NT;
}

int sv_vit_group_nt(const sv_vit_config *c, int group) {
    int n = 0, nt = group < 0 ? SV_ROOT_NT : SV_BLK_NT;
    for (int s = 0; s < nt; s++) n += sv_vit_slot_present(c, group, s);
    return n;
}

int sv_vit_num_params(const sv_vit_config *c) { return sv_vit_group_nt(c, -1) + c->depth * sv_vit_group_nt(c, 0); }

int sv_vit_param_index(const sv_vit_config *c, int group, int slot) {
    if (!sv_vit_slot_present(c, group, slot)) return -1;
    int before = 0; /* present slots of this group before `slot` */
    for (int s = 0; s < slot; s++) before += sv_vit_slot_present(c, group, s);
    return group < 0 ? before : sv_vit_group_nt(c, -1) + group * sv_vit_group_nt(c, 0) + before;
}

static void set(sv_param_info *p, const char *name, int group, int slot, int ndim, const int64_t *shape, int no_decay,
                sv_init_kind init, double std) {
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->numel = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->numel *= (size_t)shape[i];
    }
    p->group = group;
    p->slot = slot;
    p->no_decay = no_decay;
    p->init = init;
    p->init_std = std;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* Table entry of (group, slot) when present (the caller skips absent slots). */
static sv_param_info *entry(const sv_vit_config *c, sv_param_info *out, int group, int slot) {
    int i = sv_vit_param_index(c, group, slot);
    return i < 0 ? NULL : &out[i];
}

void sv_vit_param_table(const sv_vit_config *c, int head_zero_init, sv_param_info *out) {
    int64_t D = c->dim, K = c->num_classes, C = c->in_chans, p = c->patch;
    int64_t Hd = sv_vit_hidden(c);
    double fan_in_bound = 1.0 / sqrt((double)(C * p * p));
    const char *norm = c->global_pool == SV_POOL_AVG ? "fc_norm" : "norm";
    char n[64];
    sv_param_info *e;
#define ROOT(slot, nm, ndim, shape, nd, init, std) \
    if ((e = entry(c, out, -1, slot))) set(e, nm, -1, slot, ndim, shape, nd, init, std)
    ROOT(SV_ROOT_PATCH_W, "patch_embed.proj.weight", 4, SHAPE(D, C, p, p), 0, SV_INIT_UNIFORM, fan_in_bound);
    ROOT(SV_ROOT_PATCH_B, "patch_embed.proj.bias", 1, SHAPE(D), 1, SV_INIT_UNIFORM, fan_in_bound);
    ROOT(SV_ROOT_CLS, "cls_token", 3, SHAPE(1, 1, D), 1, SV_INIT_NORMAL, 1e-6);
    ROOT(SV_ROOT_POS, "pos_embed", 3, SHAPE(1, sv_vit_pos_len(c), D), 1, SV_INIT_TRUNC_NORMAL, 0.02);
    snprintf(n, sizeof n, "%s.weight", norm);
    ROOT(SV_ROOT_NORM_W, n, 1, SHAPE(D), 1, SV_INIT_ONES, 0);
    snprintf(n, sizeof n, "%s.bias", norm);
    ROOT(SV_ROOT_NORM_B, n, 1, SHAPE(D), 1, SV_INIT_ZEROS, 0);
    ROOT(SV_ROOT_HEAD_W, "head.weight", 2, SHAPE(K, D), 0, head_zero_init ? SV_INIT_ZEROS : SV_INIT_TRUNC_NORMAL, 0.02);
    ROOT(SV_ROOT_HEAD_B, "head.bias", 1, SHAPE(K), 1, SV_INIT_ZEROS, 0);
    ROOT(SV_ROOT_REG, "reg_token", 3, SHAPE(1, c->reg_tokens, D), 1, SV_INIT_NORMAL, 1e-6); /* timm: normal(1e-6) */
#undef ROOT
    for (int l = 0; l < c->depth; l++) {
#define BLK(slot, suffix, ndim, shape, nd, init, std) \
    if ((e = entry(c, out, l, slot))) { \
        snprintf(n, sizeof n, "blocks.%d.%s", l, suffix); \
        set(e, n, l, slot, ndim, shape, nd, init, std); \
    }
        BLK(SV_BLK_NORM1_W, "norm1.weight", 1, SHAPE(D), 1, SV_INIT_ONES, 0);
        BLK(SV_BLK_NORM1_B, "norm1.bias", 1, SHAPE(D), 1, SV_INIT_ZEROS, 0);
        BLK(SV_BLK_QKV_W, "attn.qkv.weight", 2, SHAPE(3 * D, D), 0, SV_INIT_TRUNC_NORMAL, 0.02);
        BLK(SV_BLK_QKV_B, "attn.qkv.bias", 1, SHAPE(3 * D), 1, SV_INIT_ZEROS, 0);
        BLK(SV_BLK_PROJ_W, "attn.proj.weight", 2, SHAPE(D, D), 0, SV_INIT_TRUNC_NORMAL, 0.02);
        BLK(SV_BLK_PROJ_B, "attn.proj.bias", 1, SHAPE(D), 1, SV_INIT_ZEROS, 0);
        BLK(SV_BLK_NORM2_W, "norm2.weight", 1, SHAPE(D), 1, SV_INIT_ONES, 0);
        BLK(SV_BLK_NORM2_B, "norm2.bias", 1, SHAPE(D), 1, SV_INIT_ZEROS, 0);
        BLK(SV_BLK_FC1_W, "mlp.fc1.weight", 2, SHAPE(Hd, D), 0, SV_INIT_TRUNC_NORMAL, 0.02);
        BLK(SV_BLK_FC1_B, "mlp.fc1.bias", 1, SHAPE(Hd), 1, SV_INIT_ZEROS, 0);
        BLK(SV_BLK_FC2_W, "mlp.fc2.weight", 2, SHAPE(D, Hd), 0, SV_INIT_TRUNC_NORMAL, 0.02);
        BLK(SV_BLK_FC2_B, "mlp.fc2.bias", 1, SHAPE(D), 1, SV_INIT_ZEROS, 0);
        /* timm LayerScale: gamma = init_values * ones(D); no weight decay (1-D) */
        BLK(SV_BLK_LS1, "ls1.gamma", 1, SHAPE(D), 1, SV_INIT_CONST, c->layer_scale);
        BLK(SV_BLK_LS2, "ls2.gamma", 1, SHAPE(D), 1, SV_INIT_CONST, c->layer_scale);
#undef BLK
    }
}

size_t sv_vit_param_count(const sv_vit_config *c) {
    size_t D = c->dim, K = c->num_classes, Hd = sv_vit_hidden(c);
    size_t cls = c->no_class_token ? 0 : D, ls = c->layer_scale > 0 ? 2 * D : 0, reg = (size_t)c->reg_tokens * D;
    size_t root = D * sv_vit_patch_dim(c) + D + cls + reg + (size_t)sv_vit_pos_len(c) * D + 2 * D + K * D + K;
    size_t block = 4 * D + 3 * D * D + 3 * D + D * D + D + Hd * D + Hd + D * Hd + D + ls;
    return root + (size_t)c->depth * block;
}

void sv_vit_param_init(uint64_t seed, const sv_param_info *p, float *dst, size_t begin, size_t n) {
    uint64_t key = sv_hash_str(seed, p->name);
    for (size_t i = 0; i < n; i++) {
        uint64_t idx = begin + i;
        double v = 0.0;
        switch (p->init) {
        case SV_INIT_ZEROS: v = 0.0; break;
        case SV_INIT_ONES: v = 1.0; break;
        case SV_INIT_CONST: v = p->init_std; break;
        case SV_INIT_TRUNC_NORMAL: v = sv_rand_trunc_normal(key, idx, p->init_std, -2.0, 2.0); break;
        case SV_INIT_NORMAL: v = p->init_std * sv_rand_normal(key, idx); break;
        case SV_INIT_UNIFORM: v = p->init_std * (2.0 * sv_rand_unit(key, idx) - 1.0); break;
        }
        dst[i] = (float)v;
    }
}
