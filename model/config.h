/* ViT configuration and presets (docs/architecture.md; `shardvit info` prints them).
 *
 * Shapes follow timm's VisionTransformer: tokens T = 1 + R + (img/patch)^2 (class token first, then
 * R register tokens, then the patches; no class token: T = R + (img/patch)^2; pos_embed covers all
 * T tokens, or with no_embed_class only the patches),
 * hidden width of the MLP = dim * mlp_ratio. Every preset field can be overridden from the CLI
 * (--img --patch --in-chans --num-classes --dim --depth --heads --mlp-ratio). */
#ifndef SV_MODEL_CONFIG_H
#define SV_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sv_vit_config {
    char name[32]; /* preset name or "custom" */
    int img;       /* input height = width */
    int patch;     /* patch size (stride = kernel) */
    int in_chans;  /* 1 (grayscale) or 3 */
    int num_classes;
    int dim;          /* embedding width D */
    int depth;        /* number of transformer blocks */
    int heads;        /* attention heads; dim % heads == 0 */
    double mlp_ratio; /* MLP hidden = (int)(dim * mlp_ratio) */
    /* timm VisionTransformer options; all-zero is the classic ViT (class token, token pooling,
     * no LayerScale), so a zero-initialised config stays the model it always was. */
    double layer_scale; /* timm init_values: LayerScale gammas blocks.l.ls1/ls2.gamma (D), 0 = off */
    int global_pool;    /* SV_POOL_TOKEN (class token) | SV_POOL_AVG (mean of the patch tokens, fc_norm) */
    int no_class_token; /* 1: no cls_token (timm class_token=False); requires SV_POOL_AVG */
    int reg_tokens;     /* timm reg_tokens: register tokens after the class token (reg_token (1, R, D)), 0 = none */
    int no_embed_class; /* 1: timm no_embed_class=True: pos_embed covers the patch tokens only */
} sv_vit_config;

enum { SV_POOL_TOKEN = 0, SV_POOL_AVG = 1 };
#define SV_VIT_MAX_REG_TOKENS 256
#define SV_VIT_MAX_DEPTH 256 /* transformer blocks (sv_vit_config_validate) */
/* "token" | "avg" (timm's global_pool names). */
const char *sv_vit_pool_name(int pool);
/* Parse a --global-pool value; SV_ERR_INVALID names the flag and the valid values. */
sv_status sv_vit_pool_parse(const char *s, int *out);

/* Fill `out` from a preset name: vit-ti16 vit-s16 vit-b16 vit-l16 vit-h14 (224x224, 3 channels,
 * 1000 classes), vit-28 (28x28 grayscale, patch 4, dim 192, depth 6, heads 3, 10 classes:
 * Fashion-MNIST/MNIST), vit-32 (32x32 RGB, same trunk: CIFAR), or a timm alias below.
 * SV_ERR_INVALID for unknown names (the message lists the valid ones). */
sv_status sv_vit_preset(const char *name, sv_vit_config *out);
/* Space-separated list of preset names (for --help). */
const char *sv_vit_preset_names(void);
/* timm model names sv_vit_preset also accepts, each an alias of the preset with exactly its
 * shapes (vit_base_patch16_224 and deit_base_patch16_224 = vit-b16, ...; docs/training.md). The
 * i-th alias (NULL past the end), *preset (nullable) its preset. The filled config is the
 * preset's, name included. sv_vit_timm_name: the vit_* name of the preset whose shapes c has
 * (num_classes aside), or NULL. */
const char *sv_vit_timm_alias(int i, const char **preset);
/* timm's data config of such a name: its pretrained_cfg (default tag) mean, std, interpolation
 * and crop_pct, which timm's train.py normalises and evaluates with unless its flags say
 * otherwise (resolve_data_config). 1 and *out filled for a timm alias, 0 for anything else (a
 * preset name, NULL). */
typedef struct sv_vit_timm_data_cfg {
    double mean[3], std[3], crop_pct;
    const char *interp;
} sv_vit_timm_data_cfg;
int sv_vit_timm_data(const char *name, sv_vit_timm_data_cfg *out);
const char *sv_vit_timm_name(const sv_vit_config *c);

/* Check internal consistency (img % patch, dim % heads, positive sizes, limits). */
sv_status sv_vit_config_validate(const sv_vit_config *c);

/* Prefix tokens before the patch tokens (timm num_prefix_tokens): the class token (if any), then
 * the register tokens. */
static inline int sv_vit_prefix_tokens(const sv_vit_config *c) { return (c->no_class_token ? 0 : 1) + c->reg_tokens; }
static inline int sv_vit_patches(const sv_vit_config *c) {
    int g = c->img / c->patch;
    return g * g;
}
/* Tokens T = prefix + patches. */
static inline int sv_vit_tokens(const sv_vit_config *c) { return sv_vit_prefix_tokens(c) + sv_vit_patches(c); }
/* Prefix tokens with a pos_embed row: all of them (timm's default no_embed_class=False), or none
 * (no_embed_class=True); pos_embed is (1, sv_vit_pos_len, D). */
static inline int sv_vit_pos_prefix(const sv_vit_config *c) { return c->no_embed_class ? 0 : sv_vit_prefix_tokens(c); }
static inline int sv_vit_pos_len(const sv_vit_config *c) { return sv_vit_pos_prefix(c) + sv_vit_patches(c); }
static inline int sv_vit_hidden(const sv_vit_config *c) { return (int)(c->dim * c->mlp_ratio); }
static inline int sv_vit_patch_dim(const sv_vit_config *c) { return c->in_chans * c->patch * c->patch; }

/* Model FLOPs for one image, forward only: 2 x (multiply-adds of every matmul incl. the patch
 * embedding and head) + attention 2 x 2 x T^2 x D per block (QK^T and PV). A training step is
 * counted as 3 x forward (backward = 2 x forward), the usual convention for MFU. */
double sv_vit_flops_fwd(const sv_vit_config *c);

#endif
