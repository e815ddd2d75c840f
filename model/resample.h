/* shardvit model: resampling learned position embeddings to another patch grid (fine-tuning at
 * another --img / --patch: ckpt/ckpt_timm.c --init-from and import). */
#ifndef SV_MODEL_RESAMPLE_H
#define SV_MODEL_RESAMPLE_H

/* Bicubic resize of a pos_embed (1, 1 + gi*gi, D) to (1, 1 + go*go, D) as timm's
 * resample_abs_pos_embed (class position kept; F.interpolate bicubic, align_corners=False,
 * no antialias). src (1+gi*gi)*D floats, dst (1+go*go)*D floats. */
void sv_vit_resample_pos_embed(const float *src, int gi, float *dst, int go, int D);

#endif
