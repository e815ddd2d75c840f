/* ViT forward/backward, layer by layer, through the compute backend only (docs/architecture.md).
 *
 * The model does not own parameters: FSDP gathers a unit's weights and hands the model views
 * (sv_root_params / sv_block_params, compute dtype) plus fp32 gradient views into the unit's
 * full gradient buffer (sv_root_grads / sv_block_grads, ACCUMULATED into). The model owns the
 * activations of one micro-batch, carved from the run's arena by sv_vit_init.
 *
 * A training micro-step is, in order:
 *   sv_vit_embed_fwd; sv_vit_block_fwd(l) for l = 0..depth-1; sv_vit_head_fwd (loss + d_logits);
 *   sv_vit_head_bwd; sv_vit_block_bwd(l) for l = depth-1..0; sv_vit_embed_bwd.
 * Evaluation runs the forward calls only (sv_vit_head_fwd with no targets).
 *
 * With recompute (activation checkpointing), each block keeps only its input; sv_vit_block_bwd
 * re-runs that block's forward into shared work buffers with the same (still gathered)
 * parameters, so recompute never triggers an extra all-gather. */
#ifndef SV_MODEL_VIT_H
#define SV_MODEL_VIT_H

#include "core/arena.h"
#include "model/backend/backend.h"
#include "model/config.h"
#include "model/params.h"

typedef struct {
    const void *t[SV_ROOT_NT];
} sv_root_params;
typedef struct {
    float *t[SV_ROOT_NT];
} sv_root_grads;
typedef struct {
    const void *t[SV_BLK_NT];
} sv_block_params;
typedef struct {
    float *t[SV_BLK_NT];
} sv_block_grads;

/* Per-block saved activations (compute dtype unless noted). */
typedef struct sv_block_acts {
    void *ln1;       /* (B,T,D) */
    float *ln1_mean; /* (B*T) f32 */
    float *ln1_rstd; /* (B*T) f32 */
    void *qkv;       /* (B,T,3D) */
    void *att;       /* (B,T,D) attention output before proj */
    void *att_saved; /* backend-defined (sv_be_attention_saved_bytes) */
    void *x_mid;     /* (B,T,D) x + proj(att) */
    void *ln2;       /* (B,T,D) */
    float *ln2_mean; /* (B*T) f32 */
    float *ln2_rstd; /* (B*T) f32 */
    void *fc1_pre;   /* (B,T,Hd) pre-GELU */
    void *fc1_out;   /* (B,T,Hd) GELU output (after dropout when proj_drop is on) */
    void *ls1_in;    /* (B,T,D) attention branch before LayerScale (only with LayerScale) */
    void *ls2_in;    /* (B,T,D) MLP branch before LayerScale (only with LayerScale) */
    void *x_out;     /* (B,T,D) block output (always kept: next block's input) */
} sv_block_acts;

/* Training-time regularisation with timm's names and placement (docs/training.md); 0 = off.
 * drop_path: stochastic depth on both residual branches, block l at drop_path * l / (depth - 1)
 * (timm's linear rule), or at drop_path in every block with drop_path_uniform (DeiT III's
 * models_v2 rule, its dpr_constant), per sample; proj_drop: dropout after attn.proj, after the MLP
 * activation and after mlp.fc2 (timm proj_drop_rate); head_drop: dropout of the pooled
 * features before the head (timm drop_rate); attn_drop: dropout of the attention probabilities
 * (timm attn_drop_rate: softmax, then dropout, then times v), per (sample, head, query, key);
 * CPU backend only (the CUDA attention refuses it). */
typedef struct sv_vit_drops {
    float drop_path, proj_drop, head_drop, attn_drop;
    int drop_path_uniform;
} sv_vit_drops;

/* Training loss of sv_vit_head_fwd: softmax cross-entropy (default) or timm's
 * BinaryCrossEntropy (bce: per-class sigmoid, mean over classes unless bce_sum; targets
 * binarised at bce_thresh when >= 0, as timm's target.gt(thresh); < 0: as they are). Set it
 * (-1: off) whenever bce is on: a zeroed struct binarises at 0. */
typedef struct sv_vit_loss {
    int bce, bce_sum;
    float bce_thresh;
} sv_vit_loss;

typedef struct sv_vit {
    sv_vit_config cfg;
    sv_backend *be;
    int B, T, D, Hd, P; /* micro-batch per rank, tokens, width, MLP hidden, patches */
    int recompute;
    sv_block_acts *blocks;      /* [depth] (host array, carved from the host arena) */
    sv_block_acts work;         /* shared intermediates when recompute is on */
    void *patches;              /* (B*P, C*p*p) */
    void *patch_out;            /* (B*P, D) */
    void *x0;                   /* (B,T,D) embedding output = block 0 input */
    void *cls;                  /* (B,D) token 0 of the last block output */
    void *cls_ln;               /* (B,D) */
    float *cls_mean, *cls_rstd; /* (B) */
    void *logits;               /* (B,K) */
    void *d_logits;             /* (B,K) */
    float *losses;              /* (B) per-sample loss (device) */
    /* backward scratch */
    void *dx;          /* (B,T,D) gradient of the residual stream */
    void *d_tmp;       /* (B,T,D) */
    void *d_qkv;       /* (B,T,3D) */
    void *d_hidden;    /* (B,T,Hd) */
    void *d_cls;       /* (B,D) */
    void *att_scratch; /* backend attention scratch */
    void *y_tmp;       /* (B,T,D) forward temporary (proj / fc2 output) */
    sv_vit_drops drops;
    sv_vit_loss loss;
    uint64_t drop_seed;    /* sv_vit_set_drops */
    int drop_on;           /* sv_vit_set_batch: the drops apply to the current micro-batch */
    uint64_t drop_epoch;   /* epoch of the current micro-batch */
    uint64_t drop_sample0; /* global sample index of row 0 of the current micro-batch */
    /* Called between the ops of a block (forward and backward) when set: lets the caller drive
     * communication that overlaps compute (FSDP polls its in-flight collectives). */
    sv_status (*progress)(void *ctx);
    void *progress_ctx;
} sv_vit;

/* Carve all activation buffers for micro-batch B from `dev` (device arena) and the block table
 * from `host` (host arena), sized by sv_be_sizes_query of the backend configuration `bc`; the
 * model has no backend afterwards (m->be NULL: it can only be counted, never run). With
 * base == NULL arenas this only counts bytes (the planner: no backend instance needed). */
sv_status sv_vit_carve(sv_vit *m, const sv_vit_config *cfg, const sv_backend_config *bc, int B, int recompute,
                       sv_arena *dev, sv_arena *host);
/* sv_vit_carve with be's configuration, then the model computes through be. */
sv_status sv_vit_init(sv_vit *m, const sv_vit_config *cfg, sv_backend *be, int B, int recompute, sv_arena *dev,
                      sv_arena *host);

/* Set the regularisation rates (all 0 = off) and the seed their masks derive from. */
void sv_vit_set_drops(sv_vit *m, const sv_vit_drops *d, uint64_t seed);
/* Before each training micro-step: the masks of row b are a pure function of (seed, epoch,
 * sample0 + b, block, site), so they do not depend on the world size, the micro-batching or
 * recompute. train = 0 (evaluation) turns every drop off. */
void sv_vit_set_batch(sv_vit *m, int train, uint64_t epoch, uint64_t sample0);

/* images (B,C,img,img) f32 device. */
sv_status sv_vit_embed_fwd(sv_vit *m, const sv_root_params *rp, const float *images);
sv_status sv_vit_block_fwd(sv_vit *m, int l, const sv_block_params *bp);
/* Computes logits; with targets (labels (B) int32 device, or soft (B,K) f32 device) also
 * per-sample losses into m->losses and d_logits scaled by grad_scale. Targets NULL: logits only. */
sv_status sv_vit_head_fwd(sv_vit *m, const sv_root_params *rp, const int32_t *labels, const float *soft,
                          float smoothing, float grad_scale);
sv_status sv_vit_head_bwd(sv_vit *m, const sv_root_params *rp, const sv_root_grads *rg);
sv_status sv_vit_block_bwd(sv_vit *m, int l, const sv_block_params *bp, const sv_block_grads *bg);
sv_status sv_vit_embed_bwd(sv_vit *m, const sv_root_params *rp, const sv_root_grads *rg);

#endif
