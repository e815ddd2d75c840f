#include "model/config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int img, patch, in_chans, num_classes, dim, depth, heads;
} preset;

static const preset k_presets[] = {
    {"vit-ti16", 224, 16, 3, 1000, 192, 12, 3},  {"vit-s16", 224, 16, 3, 1000, 384, 12, 6},
    {"vit-b16", 224, 16, 3, 1000, 768, 12, 12},  {"vit-l16", 224, 16, 3, 1000, 1024, 24, 16},
    {"vit-h14", 224, 14, 3, 1000, 1280, 32, 16}, {"vit-28", 28, 4, 1, 10, 192, 6, 3},
    {"vit-32", 32, 4, 3, 10, 192, 6, 3},
};

/* timm model names whose VisionTransformer has exactly the preset's shapes (same tensors, same
 * shapes: qkv bias, class token, token pooling, no LayerScale, no distillation token). The vit_*
 * name of each preset comes first: export names a matching model by it (sv_vit_timm_name).
 * tests/model/timm_aliases.py checks every row against timm.create_model. */
static const struct {
    const char *timm, *preset;
    int inet; /* timm's data config (pretrained_cfg of the default tag, timm 1.0): 1 ImageNet mean/std
                 (the fb_in1k DeiT weights), 0 mean = std = 0.5 (the augreg / in21k ViT weights); every
                 one bicubic at crop_pct 0.9 (tests/model/timm_aliases.py checks them against timm) */
} k_timm_aliases[] = {
    {"vit_tiny_patch16_224", "vit-ti16", 0},  {"vit_small_patch16_224", "vit-s16", 0},
    {"vit_base_patch16_224", "vit-b16", 0},   {"vit_large_patch16_224", "vit-l16", 0},
    {"vit_huge_patch14_224", "vit-h14", 0},   {"deit_tiny_patch16_224", "vit-ti16", 1},
    {"deit_small_patch16_224", "vit-s16", 1}, {"deit_base_patch16_224", "vit-b16", 1},
};
#define N_ALIASES (sizeof k_timm_aliases / sizeof k_timm_aliases[0])

const char *sv_vit_preset_names(void) { return "vit-ti16 vit-s16 vit-b16 vit-l16 vit-h14 vit-28 vit-32"; }

const char *sv_vit_timm_alias(int i, const char **preset) {
    if (i < 0 || (size_t)i >= N_ALIASES) return NULL;
    if (preset) *preset = k_timm_aliases[i].preset;
    return k_timm_aliases[i].timm;
}

int sv_vit_timm_data(const char *name, sv_vit_timm_data_cfg *out) {
    for (size_t i = 0; name && i < N_ALIASES; i++) {
        if (strcmp(k_timm_aliases[i].timm, name)) continue;
        static const double inet_mean[3] = {0.485, 0.456, 0.406}, inet_std[3] = {0.229, 0.224, 0.225};
        for (int c = 0; c < 3; c++) {
            out->mean[c] = k_timm_aliases[i].inet ? inet_mean[c] : 0.5;
            out->std[c] = k_timm_aliases[i].inet ? inet_std[c] : 0.5;
        }
        out->interp = "bicubic";
        out->crop_pct = 0.9;
        return 1;
    }
    return 0;
}

const char *sv_vit_timm_name(const sv_vit_config *c) {
    /* the presets are the classic ViT: LayerScale, average pooling or no class token name none */
    if (c->layer_scale > 0 || c->global_pool != SV_POOL_TOKEN || c->no_class_token || c->reg_tokens ||
        c->no_embed_class)
        return NULL;
    for (size_t i = 0; i < N_ALIASES; i++) {
        sv_vit_config p;
        if (sv_vit_preset(k_timm_aliases[i].preset, &p) != SV_OK) continue;
        if (c->img == p.img && c->patch == p.patch && c->in_chans == p.in_chans && c->dim == p.dim &&
            c->depth == p.depth && c->heads == p.heads && c->mlp_ratio == p.mlp_ratio)
            return k_timm_aliases[i].timm;
    }
    return NULL;
}

/* A name of timm's plain ViT / DeiT trunk at another size: {vit|deit}_{tiny|small|base|large|huge}_
 * patchP_IMG with nothing after the image size (the size hint applies to these only). */
static int plain_size(const char *name) {
    static const char *const fam[] = {"vit_", "deit_"}, *const sz[] = {"tiny", "small", "base", "large", "huge"};
    for (int f = 0; f < 2; f++) {
        size_t lf = strlen(fam[f]);
        if (strncmp(name, fam[f], lf)) continue;
        for (int s = 0; s < 5; s++) {
            const char *p = name + lf;
            size_t ls = strlen(sz[s]);
            if (strncmp(p, sz[s], ls) || strncmp(p + ls, "_patch", 6)) continue;
            p += ls + 6;
            if (!isdigit((unsigned char)*p)) return 0;
            while (isdigit((unsigned char)*p)) p++;
            if (*p++ != '_' || !isdigit((unsigned char)*p)) return 0;
            while (isdigit((unsigned char)*p)) p++;
            return *p == '\0';
        }
    }
    return 0;
}

sv_status sv_vit_preset(const char *name, sv_vit_config *out) {
    for (size_t i = 0; i < N_ALIASES; i++)
        if (!strcmp(k_timm_aliases[i].timm, name)) name = k_timm_aliases[i].preset;
    for (size_t i = 0; i < sizeof k_presets / sizeof k_presets[0]; i++) {
        const preset *p = &k_presets[i];
        if (strcmp(p->name, name) != 0) continue;
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", p->name);
        out->img = p->img;
        out->patch = p->patch;
        out->in_chans = p->in_chans;
        out->num_classes = p->num_classes;
        out->dim = p->dim;
        out->depth = p->depth;
        out->heads = p->heads;
        out->mlp_ratio = 4.0;
        return SV_OK;
    }
    char timm[512] = "";
    for (size_t i = 0, n = 0; i < N_ALIASES && n < sizeof timm; i++)
        n += (size_t)snprintf(timm + n, sizeof timm - n, "%s%s", i ? " " : "", k_timm_aliases[i].timm);
    const char *why = !strncmp(name, "deit3_", 6)
        ? "; timm's deit3_* models are a preset with --layer-scale and --no-embed-class (deit3_small_patch16_224 = "
          "vit-s16 --layer-scale 1e-6 --no-embed-class)"
        : strstr(name, "distilled") ? "; timm's distilled DeiT models add a distillation token and head"
        : strstr(name, "_reg") && strstr(name, "_gap")
        ? "; timm's *_regN_gap_* models are a preset with --reg-tokens N --class-token 0 --global-pool avg "
          "--no-embed-class (and --img, --layer-scale where timm sets them)"
        : plain_size(name) ? "; other timm sizes are a listed name with --img/--patch (vit_base_patch16_384 = "
                             "vit_base_patch16_224 --img 384)"
        : !strncmp(name, "vit_", 4) || !strncmp(name, "deit_", 5)
        ? "; timm's variants with other blocks, norms or heads (such as *_clip_*, *_miil, *_siglip_*) are not "
          "shardvit's ViT (docs/training.md \"Pretrained weights and resolution changes\")"
        : "";
    return SV_FAIL(SV_ERR_INVALID, "unknown model '%s' (choose one of: %s; or a timm name: %s%s)", name,
                   sv_vit_preset_names(), timm, why);
}

sv_status sv_vit_config_validate(const sv_vit_config *c) {
    if (c->img < 1 || c->img > 4096) return SV_FAIL(SV_ERR_INVALID, "--img %d out of range [1, 4096]", c->img);
    if (c->patch < 1 || c->patch > c->img || c->img % c->patch)
        return SV_FAIL(SV_ERR_INVALID, "--patch %d must divide --img %d", c->patch, c->img);
    if (c->in_chans != 1 && c->in_chans != 3)
        return SV_FAIL(SV_ERR_INVALID, "--in-chans %d must be 1 or 3", c->in_chans);
    if (c->num_classes < 1 || c->num_classes > 1000000)
        return SV_FAIL(SV_ERR_INVALID, "--num-classes %d out of range [1, 1000000]", c->num_classes);
    if (c->dim < 1 || c->dim > 16384) return SV_FAIL(SV_ERR_INVALID, "--dim %d out of range [1, 16384]", c->dim);
    if (c->depth < 1 || c->depth > SV_VIT_MAX_DEPTH)
        return SV_FAIL(SV_ERR_INVALID, "--depth %d out of range [1, %d]", c->depth, SV_VIT_MAX_DEPTH);
    if (c->heads < 1 || c->dim % c->heads)
        return SV_FAIL(SV_ERR_INVALID, "--heads %d must divide --dim %d", c->heads, c->dim);
    if (!(c->layer_scale >= 0.0) || c->layer_scale > 1e3)
        return SV_FAIL(SV_ERR_INVALID, "--layer-scale %g out of range [0, 1000] (0 = off)", c->layer_scale);
    if (c->global_pool != SV_POOL_TOKEN && c->global_pool != SV_POOL_AVG)
        return SV_FAIL(SV_ERR_INVALID, "global pool %d is neither token nor avg", c->global_pool);
    if (c->reg_tokens < 0 || c->reg_tokens > SV_VIT_MAX_REG_TOKENS)
        return SV_FAIL(SV_ERR_INVALID, "--reg-tokens %d out of range [0, %d]", c->reg_tokens, SV_VIT_MAX_REG_TOKENS);
    if (c->no_embed_class != 0 && c->no_embed_class != 1)
        return SV_FAIL(SV_ERR_INVALID, "no_embed_class %d is neither 0 nor 1", c->no_embed_class);
    if (c->no_class_token && c->global_pool != SV_POOL_AVG)
        return SV_FAIL(SV_ERR_INVALID, "--class-token 0 needs --global-pool avg (token pooling reads the class token)");
    if (!(c->mlp_ratio > 0.0) || c->mlp_ratio > 64.0 || sv_vit_hidden(c) < 1)
        return SV_FAIL(SV_ERR_INVALID, "--mlp-ratio %g out of range (0, 64]", c->mlp_ratio);
    return SV_OK;
}

double sv_vit_flops_fwd(const sv_vit_config *c) {
    double T = sv_vit_tokens(c), D = c->dim, Hd = sv_vit_hidden(c), P = sv_vit_patches(c);
    double patch = P * D * sv_vit_patch_dim(c);
    double block = T * (D * 3 * D + D * D + 2 * D * Hd) + 2 * T * T * D;
    double head = D * c->num_classes;
    return 2.0 * (patch + c->depth * block + head);
}

const char *sv_vit_pool_name(int pool) { return pool == SV_POOL_AVG ? "avg" : "token"; }

sv_status sv_vit_pool_parse(const char *s, int *out) {
    if (!strcmp(s, "token"))
        *out = SV_POOL_TOKEN;
    else if (!strcmp(s, "avg"))
        *out = SV_POOL_AVG;
    else
        return SV_FAIL(SV_ERR_INVALID, "--global-pool '%s': choose token or avg", s);
    return SV_OK;
}
