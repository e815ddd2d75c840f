/* ViT parameter table: timm VisionTransformer names, shapes and layouts (docs/formats.md, docs/checkpoints.md "Export and import"), and the
 * deterministic initialisation.
 *
 * Tensors are grouped: group -1 is the "root" (patch embedding, class token, position
 * embedding, final norm, head); group l >= 0 is transformer block l. Inside a group tensors
 * have a fixed slot order (the enums below) that the FSDP flat layout and checkpoints follow.
 * Optional tensors (cls_token, reg_token, the LayerScale gammas) are left out of the table when the
 * configuration has none: the table lists present tensors only, in slot order, so the classic
 * ViT's table (and every checkpoint of it) is unchanged. Views indexed by slot (vit.h) hold
 * NULL for an absent slot. */
#ifndef SV_MODEL_PARAMS_H
#define SV_MODEL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

enum {
    SV_ROOT_PATCH_W = 0, /* patch_embed.proj.weight (D, C, p, p) */
    SV_ROOT_PATCH_B,     /* patch_embed.proj.bias (D) */
    SV_ROOT_CLS,         /* cls_token (1, 1, D); absent without a class token */
    SV_ROOT_POS,         /* pos_embed (1, T, D) */
    SV_ROOT_NORM_W,      /* norm.weight (D); named fc_norm.weight with global_pool avg (timm) */
    SV_ROOT_NORM_B,      /* norm.bias (D); fc_norm.bias with global_pool avg */
    SV_ROOT_HEAD_W,      /* head.weight (K, D) */
    SV_ROOT_HEAD_B,      /* head.bias (K) */
    SV_ROOT_REG,         /* reg_token (1, R, D); only with register tokens (last: the classic layout is unchanged) */
    SV_ROOT_NT
};

enum {
    SV_BLK_NORM1_W = 0, /* blocks.l.norm1.weight (D) */
    SV_BLK_NORM1_B,     /* blocks.l.norm1.bias (D) */
    SV_BLK_QKV_W,       /* blocks.l.attn.qkv.weight (3D, D) */
    SV_BLK_QKV_B,       /* blocks.l.attn.qkv.bias (3D) */
    SV_BLK_PROJ_W,      /* blocks.l.attn.proj.weight (D, D) */
    SV_BLK_PROJ_B,      /* blocks.l.attn.proj.bias (D) */
    SV_BLK_NORM2_W,     /* blocks.l.norm2.weight (D) */
    SV_BLK_NORM2_B,     /* blocks.l.norm2.bias (D) */
    SV_BLK_FC1_W,       /* blocks.l.mlp.fc1.weight (Hd, D) */
    SV_BLK_FC1_B,       /* blocks.l.mlp.fc1.bias (Hd) */
    SV_BLK_FC2_W,       /* blocks.l.mlp.fc2.weight (D, Hd) */
    SV_BLK_FC2_B,       /* blocks.l.mlp.fc2.bias (D) */
    SV_BLK_LS1,         /* blocks.l.ls1.gamma (D); present only with LayerScale */
    SV_BLK_LS2,         /* blocks.l.ls2.gamma (D); present only with LayerScale */
    SV_BLK_NT
};

typedef enum sv_init_kind {
    SV_INIT_ZEROS = 0,
    SV_INIT_ONES,
    SV_INIT_TRUNC_NORMAL, /* std = init_std, truncated to [-2, 2] (timm trunc_normal_) */
    SV_INIT_NORMAL,       /* std = init_std (cls_token: 1e-6) */
    SV_INIT_UNIFORM,      /* U(-init_std, init_std) (PyTorch Conv2d default for patch_embed) */
    SV_INIT_CONST,        /* every element = init_std (LayerScale gamma = init_values) */
} sv_init_kind;

typedef struct sv_param_info {
    char name[64]; /* timm name, e.g. "blocks.3.attn.qkv.weight" */
    int ndim;
    int64_t shape[4];
    size_t numel;
    int group;    /* -1 root, else block index */
    int slot;     /* SV_ROOT_* or SV_BLK_* */
    int no_decay; /* 1: no weight decay (biases, norms, pos_embed, cls_token, reg_token) */
    sv_init_kind init;
    double init_std;
} sv_param_info;

/* 1 when slot `slot` of group kind `group` (-1 root, >= 0 a block) exists in this configuration. */
int sv_vit_slot_present(const sv_vit_config *c, int group, int slot);
/* Present tensors of the root (group -1) / of one block (group >= 0). */
int sv_vit_group_nt(const sv_vit_config *c, int group);
/* Number of tensors: root + depth * block (present ones). */
int sv_vit_num_params(const sv_vit_config *c);
/* Fill out[0 .. sv_vit_num_params) in canonical order: root slots, then block 0 slots, ...
 * head_zero_init: initialise head.weight to zeros (optional timm behaviour). */
void sv_vit_param_table(const sv_vit_config *c, int head_zero_init, sv_param_info *out);
/* Index of the tensor (group, slot) in the canonical table; -1 when the slot is absent. */
int sv_vit_param_index(const sv_vit_config *c, int group, int slot);
/* Total parameter count. */
size_t sv_vit_param_count(const sv_vit_config *c);

/* Initialise elements [begin, begin + n) of tensor `p` into dst (host f32): a pure function of
 * (seed, tensor name, element index), so any rank can initialise just its shard and every world
 * size yields the same model. */
void sv_vit_param_init(uint64_t seed, const sv_param_info *p, float *dst, size_t begin, size_t n);

#endif
