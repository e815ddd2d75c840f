/* shardvit model: adapting pretrained embeddings to another image or patch size, as timm does
 * when it loads weights into a model of another shape (timm/models/vision_transformer.py
 * checkpoint_filter_fn: --init-from and import in ckpt/ckpt_timm.c, eval/predict --weights at
 * another --img in eval/weights.c; both through ckpt/ckpt_adapt.h).
 *
 * Interpolation is PyTorch's F.interpolate(mode="bicubic", align_corners=False) on a square
 * grid, separable (rows then columns), either
 *   antialias = 1 (timm's default, _upsample_bicubic2d_aa): output sample o of an in -> out
 *     resize, scale s = in / out, centre c = s * (o + 0.5); the filter is Keys' cubic with
 *     a = -0.5, stretched by s when s > 1 (support 2 * max(s, 1) input samples on each side);
 *     input samples j with |j + 0.5 - c| inside the support, clipped to [0, in), weighted
 *     w_j = cubic((j + 0.5 - c) / max(s, 1)), normalised to sum 1. Downsampling low-passes first;
 *     upsampling is the a = -0.5 cubic (normalised at the borders).
 *   antialias = 0 (upsample_bicubic2d): source x = s * (o + 0.5) - 0.5, the four samples
 *     floor(x) - 1 .. floor(x) + 2 clamped to the border, Keys' cubic with a = -0.75.
 * Weights and sums are in double; results are rounded to float once. */
#ifndef SV_MODEL_RESAMPLE_H
#define SV_MODEL_RESAMPLE_H

#include "core/status.h"

/* The in -> out resize matrix R (out x in, row-major, double) of one axis: resizing a vector v
 * gives R v. in, out >= 1; SV_ERR_OOM when its scratch cannot be allocated. */
sv_status sv_resize_matrix(int in, int out, int antialias, double *R);

/* timm's resample_abs_pos_embed: pos_embed (1, prefix + gi*gi, D) -> (1, prefix + go*go, D),
 * the prefix positions (timm num_prefix_tokens: 1 = class token, 0 = none) copied, the gi x gi grid (row-major, y then x, D values
 * per position) resized to go x go. gi == go copies. SV_ERR_OOM when the scratch (gi*go*D
 * doubles plus the two resize matrices) cannot be allocated. */
sv_status sv_vit_resample_pos_embed(const float *src, int gi, float *dst, int go, int D, int prefix, int antialias);

/* timm's resample_patch_embed (timm/layers/patch_embed.py): n kernels of pi x pi (patch_embed.
 * proj.weight (D, C, pi, pi): n = D*C) -> po x po by the pseudo-inverse of the resize: with
 * M = the pi x pi -> po x po resize (po^2 x pi^2, the Kronecker product R (x) R of the axis
 * matrices), k' = pinv(M)^T k, so that <k', resize(x)> = <k, x> for patches x (exactly when
 * po >= pi; least squares otherwise). Computed per axis, pinv(R (x) R) = pinv(R) (x) pinv(R),
 * pinv(R) from the Gram matrix of R's full rank side (Cholesky, double). pi == po copies.
 * pi, po in [1, SV_PATCH_RESAMPLE_MAX]; SV_ERR_INVALID beyond, or when R is numerically rank
 * deficient. */
#define SV_PATCH_RESAMPLE_MAX 256
sv_status sv_vit_resample_patch_embed(const float *src, int pi, float *dst, int po, long long n, int antialias);

#endif
