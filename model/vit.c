#include "model/vit.h"

#include <string.h>

#include "core/checked.h"
#include "core/rng.h"

#define ALIGN 256

static sv_status carve(sv_arena *a, size_t bytes, void **out) { return sv_arena_alloc(a, bytes, ALIGN, out); }

static sv_status carve_block(sv_vit *m, const sv_be_sizes *sz, sv_arena *dev, sv_block_acts *b, int with_out) {
    size_t e = sz->compute_elem;
    size_t BT = (size_t)m->B * m->T, D = m->D, Hd = m->Hd;
    SV_TRY(carve(dev, BT * D * e, &b->ln1));
    SV_TRY(carve(dev, BT * 4, (void **)&b->ln1_mean));
    SV_TRY(carve(dev, BT * 4, (void **)&b->ln1_rstd));
    SV_TRY(carve(dev, BT * 3 * D * e, &b->qkv));
    SV_TRY(carve(dev, BT * D * e, &b->att));
    SV_TRY(carve(dev, sz->attention_saved, &b->att_saved));
    SV_TRY(carve(dev, BT * D * e, &b->x_mid));
    SV_TRY(carve(dev, BT * D * e, &b->ln2));
    SV_TRY(carve(dev, BT * 4, (void **)&b->ln2_mean));
    SV_TRY(carve(dev, BT * 4, (void **)&b->ln2_rstd));
    SV_TRY(carve(dev, BT * Hd * e, &b->fc1_pre));
    SV_TRY(carve(dev, BT * Hd * e, &b->fc1_out));
    if (m->cfg.layer_scale > 0) {
        SV_TRY(carve(dev, BT * D * e, &b->ls1_in));
        SV_TRY(carve(dev, BT * D * e, &b->ls2_in));
    }
    if (with_out) SV_TRY(carve(dev, BT * D * e, &b->x_out));
    return SV_OK;
}

sv_status sv_vit_carve(sv_vit *m, const sv_vit_config *cfg, const sv_backend_config *bc, int B, int recompute,
                       sv_arena *dev, sv_arena *host) {
    memset(m, 0, sizeof *m);
    SV_TRY(sv_vit_config_validate(cfg));
    if (B < 1) return SV_FAIL(SV_ERR_INVALID, "micro-batch per rank must be >= 1 (got %d)", B);
    m->cfg = *cfg;
    m->B = B;
    m->T = sv_vit_tokens(cfg);
    m->D = cfg->dim;
    m->Hd = sv_vit_hidden(cfg);
    m->P = sv_vit_patches(cfg);
    m->recompute = recompute;
    sv_be_sizes sz; /* one attention shape for every block */
    SV_TRY(sv_be_sizes_query(bc, B, m->T, m->D, cfg->heads, &sz));
    size_t e = sz.compute_elem;
    size_t BT = (size_t)B * m->T, D = m->D, K = cfg->num_classes;
    /* Every buffer below is at most B x T x max(3D, hidden, patch dim, classes) x 4 bytes or an
     * attention size (SIZE_MAX when that does not fit in 64 bits): a micro-batch beyond 2^64
     * bytes is refused here, its sizes are never wrapped into small ones (the arena checks the
     * sums). */
    uint64_t widest = 3 * D, most;
    if ((uint64_t)m->Hd > widest) widest = (uint64_t)m->Hd;
    if ((uint64_t)sv_vit_patch_dim(cfg) > widest) widest = (uint64_t)sv_vit_patch_dim(cfg);
    if (K > widest) widest = K;
    if (!sv_mul3_u64(BT, widest, e > 4 ? e : 4, &most) || sz.attention_saved == SIZE_MAX ||
        sz.attention_scratch == SIZE_MAX)
        return SV_FAIL(SV_ERR_OOM,
                       "the activations of micro-batch %d (%d tokens, dim %d, %d heads) exceed 2^64 bytes: a smaller "
                       "micro-batch per rank (more ranks, --accum) or a smaller model",
                       B, m->T, m->D, cfg->heads);

    SV_TRY(sv_arena_alloc(host, sizeof(sv_block_acts) * cfg->depth, 16, (void **)&m->blocks));
    if (m->blocks) memset(m->blocks, 0, sizeof(sv_block_acts) * cfg->depth);
    sv_block_acts scratch_table[1];
    for (int l = 0; l < cfg->depth; l++) {
        sv_block_acts *b = m->blocks ? &m->blocks[l] : scratch_table;
        if (recompute) {
            SV_TRY(carve(dev, BT * D * e, &b->x_out));
        } else {
            SV_TRY(carve_block(m, &sz, dev, b, 1));
        }
    }
    if (recompute) SV_TRY(carve_block(m, &sz, dev, &m->work, 0));

    SV_TRY(carve(dev, (size_t)B * m->P * sv_vit_patch_dim(cfg) * e, &m->patches));
    SV_TRY(carve(dev, (size_t)B * m->P * D * e, &m->patch_out));
    SV_TRY(carve(dev, BT * D * e, &m->x0));
    SV_TRY(carve(dev, (size_t)B * D * e, &m->cls));
    SV_TRY(carve(dev, (size_t)B * D * e, &m->cls_ln));
    SV_TRY(carve(dev, (size_t)B * 4, (void **)&m->cls_mean));
    SV_TRY(carve(dev, (size_t)B * 4, (void **)&m->cls_rstd));
    SV_TRY(carve(dev, (size_t)B * K * e, &m->logits));
    SV_TRY(carve(dev, (size_t)B * K * e, &m->d_logits));
    SV_TRY(carve(dev, (size_t)B * 4, (void **)&m->losses));
    SV_TRY(carve(dev, BT * D * e, &m->dx));
    SV_TRY(carve(dev, BT * D * e, &m->d_tmp));
    SV_TRY(carve(dev, BT * 3 * D * e, &m->d_qkv));
    SV_TRY(carve(dev, BT * m->Hd * e, &m->d_hidden));
    SV_TRY(carve(dev, (size_t)B * D * e, &m->d_cls));
    SV_TRY(carve(dev, sz.attention_scratch, &m->att_scratch));
    SV_TRY(carve(dev, BT * D * e, &m->y_tmp));
    return SV_OK;
}

sv_status sv_vit_init(sv_vit *m, const sv_vit_config *cfg, sv_backend *be, int B, int recompute, sv_arena *dev,
                      sv_arena *host) {
    SV_TRY(sv_vit_carve(m, cfg, sv_be_config(be), B, recompute, dev, host));
    m->be = be;
    return SV_OK;
}

/* Run one backend op, then give the caller's progress hook a turn. */
#define OP(m, expr) \
    do { \
        SV_TRY(expr); \
        if ((m)->progress) SV_TRY((m)->progress((m)->progress_ctx)); \
    } while (0)

/* Input of block l: the embedding for block 0, else the previous block's output. */
static const void *block_input(const sv_vit *m, int l) { return l == 0 ? m->x0 : m->blocks[l - 1].x_out; }

sv_status sv_vit_embed_fwd(sv_vit *m, const sv_root_params *rp, const float *images) {
    const sv_vit_config *c = &m->cfg;
    int BP = m->B * m->P;
    SV_TRY(sv_be_im2col(m->be, m->patches, images, m->B, c->in_chans, c->img, c->img, c->patch));
    SV_TRY(sv_be_linear_fwd(m->be, m->patch_out, NULL, m->patches, rp->t[SV_ROOT_PATCH_W], rp->t[SV_ROOT_PATCH_B], BP,
                            m->D, sv_vit_patch_dim(c)));
    /* rp->t[SV_ROOT_CLS] is NULL without a class token: tokens are the patches alone */
    SV_TRY(sv_be_embed_fwd(m->be, m->x0, m->patch_out, rp->t[SV_ROOT_CLS], rp->t[SV_ROOT_REG], m->cfg.reg_tokens,
                           rp->t[SV_ROOT_POS], m->cfg.no_embed_class, m->B, m->T, m->D));
    return SV_OK;
}

/* ---- regularisation masks ---- */

void sv_vit_set_drops(sv_vit *m, const sv_vit_drops *d, uint64_t seed) {
    m->drops = *d;
    m->drop_seed = seed;
}

void sv_vit_set_batch(sv_vit *m, int train, uint64_t epoch, uint64_t sample0) {
    m->drop_on = train;
    m->drop_epoch = epoch;
    m->drop_sample0 = sample0;
}

/* Mask sites of a block (and the head, as block `depth`). */
enum { SITE_PATH_ATTN = 0, SITE_PATH_MLP, SITE_PROJ_ATTN, SITE_PROJ_MLP1, SITE_PROJ_MLP2, SITE_HEAD, SITE_ATTN_PROBS };

/* The mask of (block, site) for the current micro-batch; 0 when that drop is off. */
static int drop_for(const sv_vit *m, int block, int site, sv_drop *out) {
    if (!m->drop_on) return 0;
    float rate;
    if (site == SITE_PATH_ATTN || site == SITE_PATH_MLP)
        rate = m->drops.drop_path_uniform ? m->drops.drop_path
            : m->cfg.depth > 1            ? m->drops.drop_path * (float)block / (float)(m->cfg.depth - 1)
                                          : 0.0f;
    else if (site == SITE_HEAD)
        rate = m->drops.head_drop;
    else if (site == SITE_ATTN_PROBS)
        rate = m->drops.attn_drop;
    else
        rate = m->drops.proj_drop;
    if (!(rate > 0.0f)) return 0;
    uint64_t key =
        sv_hash2(sv_hash2(sv_hash2(sv_hash_str(m->drop_seed, "drop"), m->drop_epoch), (uint64_t)block), (uint64_t)site);
    *out = (sv_drop){.key = key, .sample0 = m->drop_sample0, .keep = 1.0f - rate};
    return 1;
}

/* Forward of a branch output on its way into the residual stream, in timm's order: proj dropout,
 * LayerScale, drop path. `y` holds the branch's last linear output: with LayerScale that is
 * ls_in (kept for the backward), scaled into m->y_tmp; without, m->y_tmp itself. The branch's
 * contribution ends in m->y_tmp. */
static sv_status branch_fwd(sv_vit *m, int l, int proj_site, int path_site, void *y, const void *gamma) {
    int M = m->B * m->T, D = m->D;
    size_t per = (size_t)m->T * D;
    sv_drop d;
    if (drop_for(m, l, proj_site, &d)) OP(m, sv_be_drop(m->be, y, &d, m->B, per, 1));
    if (gamma) OP(m, sv_be_scale_cols(m->be, m->y_tmp, y, gamma, M, D));
    if (drop_for(m, l, path_site, &d)) OP(m, sv_be_drop(m->be, m->y_tmp, &d, m->B, per, per));
    return SV_OK;
}

/* Backward of branch_fwd: from d(residual stream) `dres` to d(branch output) in `work`;
 * returns the buffer to feed the branch's last linear (dres itself when nothing applies). */
static sv_status branch_bwd(sv_vit *m, int l, int proj_site, int path_site, const void *dres, void *work,
                            const void *ls_in, const void *gamma, float *d_gamma, const void **g_out) {
    int M = m->B * m->T, D = m->D;
    size_t per = (size_t)m->T * D, bytes = (size_t)M * D * sv_be_compute_elem_size(m->be);
    sv_drop dp, dq;
    int path = drop_for(m, l, path_site, &dp), proj = drop_for(m, l, proj_site, &dq);
    const void *g = dres;
    if (path) {
        OP(m, sv_be_copy(m->be, work, g, bytes));
        OP(m, sv_be_drop(m->be, work, &dp, m->B, per, per));
        g = work;
    }
    if (gamma) {
        OP(m, sv_be_scale_cols_bwd(m->be, work, d_gamma, g, ls_in, gamma, M, D));
        g = work;
    }
    if (proj) {
        if (g != work) OP(m, sv_be_copy(m->be, work, g, bytes));
        OP(m, sv_be_drop(m->be, work, &dq, m->B, per, 1));
        g = work;
    }
    *g_out = g;
    return SV_OK;
}

/* Forward of one block l from input x into acts `a` (x_out receives the output). */
static sv_status block_forward(sv_vit *m, int l, const void *x, sv_block_acts *a, void *x_out,
                               const sv_block_params *bp) {
    sv_backend *be = m->be;
    int M = m->B * m->T, D = m->D, Hd = m->Hd;
    size_t n = (size_t)M * D;
    sv_drop d;
    /* with LayerScale the branch outputs are kept (ls*_in) for the gammas' gradient */
    const void *g1 = bp->t[SV_BLK_LS1], *g2 = bp->t[SV_BLK_LS2];
    void *y1 = g1 ? a->ls1_in : m->y_tmp, *y2 = g2 ? a->ls2_in : m->y_tmp;
    OP(m,
       sv_be_layernorm_fwd(be, a->ln1, a->ln1_mean, a->ln1_rstd, x, bp->t[SV_BLK_NORM1_W], bp->t[SV_BLK_NORM1_B], M,
                           D));
    OP(m, sv_be_linear_fwd(be, a->qkv, NULL, a->ln1, bp->t[SV_BLK_QKV_W], bp->t[SV_BLK_QKV_B], M, 3 * D, D));
    int ad = drop_for(m, l, SITE_ATTN_PROBS, &d); /* attention-probability dropout */
    OP(m,
       sv_be_attention_fwd_drop(be, a->att, a->att_saved, m->att_scratch, a->qkv, m->B, m->T, D, m->cfg.heads,
                                ad ? &d : NULL));
    OP(m, sv_be_linear_fwd(be, y1, NULL, a->att, bp->t[SV_BLK_PROJ_W], bp->t[SV_BLK_PROJ_B], M, D, D));
    SV_TRY(branch_fwd(m, l, SITE_PROJ_ATTN, SITE_PATH_ATTN, y1, g1));
    OP(m, sv_be_residual_add(be, a->x_mid, x, m->y_tmp, n));
    OP(m,
       sv_be_layernorm_fwd(be, a->ln2, a->ln2_mean, a->ln2_rstd, a->x_mid, bp->t[SV_BLK_NORM2_W], bp->t[SV_BLK_NORM2_B],
                           M, D));
    OP(m, sv_be_linear_fwd(be, a->fc1_out, a->fc1_pre, a->ln2, bp->t[SV_BLK_FC1_W], bp->t[SV_BLK_FC1_B], M, Hd, D));
    if (drop_for(m, l, SITE_PROJ_MLP1, &d)) OP(m, sv_be_drop(be, a->fc1_out, &d, m->B, (size_t)m->T * Hd, 1));
    OP(m, sv_be_linear_fwd(be, y2, NULL, a->fc1_out, bp->t[SV_BLK_FC2_W], bp->t[SV_BLK_FC2_B], M, D, Hd));
    SV_TRY(branch_fwd(m, l, SITE_PROJ_MLP2, SITE_PATH_MLP, y2, g2));
    OP(m, sv_be_residual_add(be, x_out, a->x_mid, m->y_tmp, n));
    return SV_OK;
}

sv_status sv_vit_block_fwd(sv_vit *m, int l, const sv_block_params *bp) {
    SV_ASSERT(l >= 0 && l < m->cfg.depth);
    sv_block_acts *a = m->recompute ? &m->work : &m->blocks[l];
    return block_forward(m, l, block_input(m, l), a, m->blocks[l].x_out, bp);
}

sv_status sv_vit_head_fwd(sv_vit *m, const sv_root_params *rp, const int32_t *labels, const float *soft,
                          float smoothing, float grad_scale) {
    sv_backend *be = m->be;
    int B = m->B, D = m->D, K = m->cfg.num_classes;
    const void *last = m->blocks[m->cfg.depth - 1].x_out;
    sv_drop d;
    if (m->cfg.global_pool == SV_POOL_AVG) {
        /* timm: norm = Identity, mean of the patch tokens, then fc_norm (slot NORM) */
        SV_TRY(sv_be_token_mean(be, m->cls, last, B, m->T, D, sv_vit_prefix_tokens(&m->cfg)));
    } else {
        /* timm normalises every token and then pools token 0; normalising only token 0 is the
         * same function with T times less work. */
        SV_TRY(sv_be_cls_select(be, m->cls, last, B, m->T, D));
    }
    SV_TRY(sv_be_layernorm_fwd(be, m->cls_ln, m->cls_mean, m->cls_rstd, m->cls, rp->t[SV_ROOT_NORM_W],
                               rp->t[SV_ROOT_NORM_B], B, D));
    if (drop_for(m, m->cfg.depth, SITE_HEAD, &d)) SV_TRY(sv_be_drop(be, m->cls_ln, &d, B, (size_t)D, 1));
    SV_TRY(sv_be_linear_fwd(be, m->logits, NULL, m->cls_ln, rp->t[SV_ROOT_HEAD_W], rp->t[SV_ROOT_HEAD_B], B, K, D));
    if (!labels && !soft) return SV_OK;
    if (m->loss.bce)
        return sv_be_sigmoid_bce(be, m->losses, m->d_logits, m->logits, labels, soft, B, K, smoothing,
                                 m->loss.bce_thresh, m->loss.bce_sum, grad_scale);
    SV_TRY(sv_be_softmax_xent(be, m->losses, m->d_logits, m->logits, labels, soft, B, K, smoothing, grad_scale));
    return SV_OK;
}

sv_status sv_vit_head_bwd(sv_vit *m, const sv_root_params *rp, const sv_root_grads *rg) {
    sv_backend *be = m->be;
    int B = m->B, D = m->D, K = m->cfg.num_classes;
    size_t e = sv_be_compute_elem_size(be);
    sv_drop d;
    SV_TRY(sv_be_linear_bwd(be, m->d_tmp, rg->t[SV_ROOT_HEAD_W], rg->t[SV_ROOT_HEAD_B], m->d_logits, m->cls_ln,
                            rp->t[SV_ROOT_HEAD_W], NULL, B, K, D));
    if (drop_for(m, m->cfg.depth, SITE_HEAD, &d)) SV_TRY(sv_be_drop(be, m->d_tmp, &d, B, (size_t)D, 1));
    SV_TRY(sv_be_zero(be, m->d_cls, (size_t)B * D * e));
    SV_TRY(sv_be_layernorm_bwd(be, m->d_cls, rg->t[SV_ROOT_NORM_W], rg->t[SV_ROOT_NORM_B], m->d_tmp, m->cls,
                               rp->t[SV_ROOT_NORM_W], m->cls_mean, m->cls_rstd, B, D));
    SV_TRY(sv_be_zero(be, m->dx, (size_t)B * m->T * D * e));
    if (m->cfg.global_pool == SV_POOL_AVG)
        SV_TRY(sv_be_token_mean_bwd(be, m->dx, m->d_cls, B, m->T, D, sv_vit_prefix_tokens(&m->cfg)));
    else
        SV_TRY(sv_be_cls_select_bwd(be, m->dx, m->d_cls, B, m->T, D));
    return SV_OK;
}

sv_status sv_vit_block_bwd(sv_vit *m, int l, const sv_block_params *bp, const sv_block_grads *bg) {
    SV_ASSERT(l >= 0 && l < m->cfg.depth);
    sv_backend *be = m->be;
    int M = m->B * m->T, D = m->D, Hd = m->Hd;
    const void *x = block_input(m, l);
    sv_block_acts *a = &m->blocks[l];
    if (m->recompute) {
        /* Re-run the forward with the weights that are still gathered; x_out goes to a scratch
         * buffer so the saved output (next block's input) is untouched. */
        a = &m->work;
        SV_TRY(block_forward(m, l, x, a, m->d_tmp, bp));
    }
    /* m->dx holds d(x_out). MLP branch: x_out = x_mid + dp(ls2(drop(fc2(drop(gelu(fc1(ln2(x_mid)))))))) */
    const void *g;
    sv_drop d;
    SV_TRY(branch_bwd(m, l, SITE_PROJ_MLP2, SITE_PATH_MLP, m->dx, m->y_tmp, a->ls2_in, bp->t[SV_BLK_LS2],
                      bg->t[SV_BLK_LS2], &g));
    OP(m,
       sv_be_linear_bwd(be, m->d_hidden, bg->t[SV_BLK_FC2_W], bg->t[SV_BLK_FC2_B], (void *)g, a->fc1_out,
                        bp->t[SV_BLK_FC2_W], NULL, M, D, Hd));
    if (drop_for(m, l, SITE_PROJ_MLP1, &d)) OP(m, sv_be_drop(be, m->d_hidden, &d, m->B, (size_t)m->T * Hd, 1));
    OP(m,
       sv_be_linear_bwd(be, m->d_tmp, bg->t[SV_BLK_FC1_W], bg->t[SV_BLK_FC1_B], m->d_hidden, a->ln2,
                        bp->t[SV_BLK_FC1_W], a->fc1_pre, M, Hd, D));
    OP(m,
       sv_be_layernorm_bwd(be, m->dx, bg->t[SV_BLK_NORM2_W], bg->t[SV_BLK_NORM2_B], m->d_tmp, a->x_mid,
                           bp->t[SV_BLK_NORM2_W], a->ln2_mean, a->ln2_rstd, M, D));
    /* m->dx now holds d(x_mid). Attention branch: x_mid = x + dp(ls1(drop(proj(attn(qkv(ln1(x))))))). */
    SV_TRY(branch_bwd(m, l, SITE_PROJ_ATTN, SITE_PATH_ATTN, m->dx, m->y_tmp, a->ls1_in, bp->t[SV_BLK_LS1],
                      bg->t[SV_BLK_LS1], &g));
    OP(m,
       sv_be_linear_bwd(be, m->d_tmp, bg->t[SV_BLK_PROJ_W], bg->t[SV_BLK_PROJ_B], (void *)g, a->att,
                        bp->t[SV_BLK_PROJ_W], NULL, M, D, D));
    sv_drop ad;
    int ad_on = drop_for(m, l, SITE_ATTN_PROBS, &ad); /* the forward's mask, drawn again */
    OP(m,
       sv_be_attention_bwd_drop(be, m->d_qkv, m->att_scratch, m->d_tmp, a->qkv, a->att, a->att_saved, m->B, m->T, D,
                                m->cfg.heads, ad_on ? &ad : NULL));
    OP(m,
       sv_be_linear_bwd(be, m->d_tmp, bg->t[SV_BLK_QKV_W], bg->t[SV_BLK_QKV_B], m->d_qkv, a->ln1, bp->t[SV_BLK_QKV_W],
                        NULL, M, 3 * D, D));
    OP(m,
       sv_be_layernorm_bwd(be, m->dx, bg->t[SV_BLK_NORM1_W], bg->t[SV_BLK_NORM1_B], m->d_tmp, x, bp->t[SV_BLK_NORM1_W],
                           a->ln1_mean, a->ln1_rstd, M, D));
    return SV_OK; /* m->dx holds d(x): the previous block's d(x_out) */
}

sv_status sv_vit_embed_bwd(sv_vit *m, const sv_root_params *rp, const sv_root_grads *rg) {
    const sv_vit_config *c = &m->cfg;
    SV_TRY(sv_be_embed_bwd(m->be, m->d_tmp, rg->t[SV_ROOT_CLS], rg->t[SV_ROOT_REG], m->cfg.reg_tokens,
                           rg->t[SV_ROOT_POS], m->cfg.no_embed_class, m->dx, m->B, m->T, m->D));
    SV_TRY(sv_be_linear_bwd(m->be, NULL, rg->t[SV_ROOT_PATCH_W], rg->t[SV_ROOT_PATCH_B], m->d_tmp, m->patches,
                            rp->t[SV_ROOT_PATCH_W], NULL, m->B * m->P, m->D, sv_vit_patch_dim(c)));
    return SV_OK;
}
